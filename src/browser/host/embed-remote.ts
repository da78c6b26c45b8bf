import { proxy, type Remote, releaseProxy, wrap } from 'comlink'
import type { EmbedOptions } from '../../core/kernel/embedder.ts'
import { MemoryError } from '../../core/kernel/errors.ts'
import { throwIfAborted } from '../../embed/embedder.ts'
import type { ModelLoadProgress, TransformersEmbedder } from '../../embed/transformers-embedder.ts'
import type { EmbedWorkerApi, EmbedWorkerOptions } from '../../../workers/embed.worker.ts'
import { startEmbedWorker } from './embed-module.ts'

/** Whether this scope can start a worker of its own (dedicated workers nest in most browsers). */
export function canNestWorkers(): boolean {
  return typeof Worker === 'function'
}

/**
 * Loads the model in a worker of its own and returns an embedder that calls it. The memory
 * worker stays free while a batch is embedded: writes and searches are not held up by the
 * indexer (onnxruntime-web runs inference synchronously on its calling thread).
 */
export async function createWorkerEmbedder(
  options: EmbedWorkerOptions & { onProgress?: (progress: ModelLoadProgress) => void },
  start: () => Worker = startEmbedWorker,
): Promise<TransformersEmbedder> {
  const { onProgress, ...rest } = options
  const worker = start()
  const remote: Remote<EmbedWorkerApi> = wrap<EmbedWorkerApi>(worker)
  // A worker that fails to load or dies answers nothing: every call races its failure.
  const failed = new Promise<never>((_, reject) => {
    worker.addEventListener('error', (event) => {
      reject(new MemoryError('MODEL_UNAVAILABLE', `The embedding worker failed: ${event.message || 'it could not start'}`))
    })
  })
  failed.catch(() => {})
  const stop = () => {
    remote[releaseProxy]()
    worker.terminate()
  }
  let model: Awaited<ReturnType<EmbedWorkerApi['load']>>
  try {
    model = await Promise.race([remote.load(rest, onProgress ? proxy(onProgress) : undefined), failed])
  } catch (error) {
    stop()
    throw error
  }
  let disposed = false
  return {
    ...model,
    async embed(texts: string[], embedOptions?: EmbedOptions): Promise<Float32Array[]> {
      throwIfAborted(embedOptions?.signal, 'Embedding')
      if (disposed) throw new MemoryError('CLOSED', 'The embedder was disposed')
      const vectors = await Promise.race([remote.embed(texts), failed])
      throwIfAborted(embedOptions?.signal, 'Embedding')
      return vectors
    },
    async dispose(): Promise<void> {
      if (disposed) return
      disposed = true
      try {
        await Promise.race([remote.dispose(), failed])
      } finally {
        stop()
      }
    },
  }
}
