import { Worker } from 'node:worker_threads'
import { MemoryError } from '../core/kernel/errors.ts'
import {
  createTransformersEmbedder as createInProcess,
  resolveSource,
  type TransformersEmbedder,
  type TransformersEmbedderOptions,
} from '../embed/transformers-embedder.ts'

interface Answer {
  id: number
  vectors?: Float32Array[]
  error?: string
}

export interface NodeTransformersEmbedderOptions extends TransformersEmbedderOptions {
  /**
   * Index on a second copy of the model in a thread of its own (default `true`). `false`
   * saves that copy's memory; background batches then hold this thread while they run.
   */
  backgroundThread?: boolean
}

/**
 * Loads a sentence-embedding model for Node's CPU runtime (see the shared
 * `createTransformersEmbedder`). Its `background` lane, which indexing uses, is a second
 * session of the model in a thread of its own (src/node/embed-worker.mjs), started on first
 * use. onnxruntime-node runs a model call on the thread that makes it, so on this one a
 * background batch would hold every query, write and caller's embed until it ends.
 *
 * @example
 * const memory = await openMemory({ dataDir: './memory', embedder: createTransformersEmbedder() })
 */
export async function createTransformersEmbedder(options: NodeTransformersEmbedderOptions = {}): Promise<TransformersEmbedder> {
  const { backgroundThread = true, ...shared } = options
  if (typeof backgroundThread !== 'boolean') {
    throw new MemoryError('INVALID_INPUT', `backgroundThread must be true or false, got ${String(backgroundThread)}`)
  }
  const embedder = await createInProcess(shared)
  if (embedder.device !== 'cpu' || !backgroundThread) return embedder
  const source = resolveSource(shared)
  const thread = embeddingThread({
    name: source.name,
    localModelPath: source.localModelPath ?? null,
    remote: source.remote,
    dtype: shared.quantized === false ? 'fp32' : 'q8',
    batchSize: embedder.batchSize,
  })
  let failed = false
  return {
    ...embedder,
    // A thread that cannot run the model leaves indexing on this thread's session, as before.
    background: (texts) =>
      failed
        ? embedder.embed(texts)
        : thread.embed(texts).catch((error: unknown) => {
            if (!failed) console.warn(`Engram: indexing embeds on the main thread: its own thread failed (${String(error)}).`)
            failed = true
            return embedder.embed(texts)
          }),
    dispose: async () => {
      await thread.stop()
      await embedder.dispose()
    },
  }
}

/** The background lane's thread: started on the first call, held only while a call waits. */
function embeddingThread(workerData: Record<string, unknown>) {
  let worker: Worker | undefined
  let next = 0
  const waiting = new Map<number, { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void }>()
  const failAll = (error: Error) => {
    for (const call of waiting.values()) call.reject(error)
    waiting.clear()
    worker = undefined
  }
  const start = () => {
    const started = new Worker(new URL('./embed-worker.mjs', import.meta.url), { workerData, execArgv: [] })
    started.unref()
    started.on('message', ({ id, vectors, error }: Answer) => {
      const call = waiting.get(id)
      waiting.delete(id)
      if (waiting.size === 0) started.unref()
      if (vectors) call?.resolve(vectors)
      else call?.reject(new Error(error ?? 'the embedding thread answered nothing'))
    })
    started.on('error', failAll)
    started.on('exit', (code) => failAll(new Error(`the embedding thread exited with code ${code}`)))
    return started
  }
  return {
    embed(texts: string[]): Promise<Float32Array[]> {
      worker ??= start()
      const id = next++
      worker.ref()
      const answer = new Promise<Float32Array[]>((resolve, reject) => waiting.set(id, { resolve, reject }))
      worker.postMessage({ id, texts })
      return answer
    },
    async stop(): Promise<void> {
      const running = worker
      worker = undefined
      await running?.terminate()
    },
  }
}
