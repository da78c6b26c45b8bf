/// <reference lib="webworker" />
import { expose, type ProxyMarked } from 'comlink'
import { installErrorTransfer } from '../src/protocol/wire-errors.ts'
import { MemoryError } from '../src/core/kernel/errors.ts'
import {
  createTransformersEmbedder,
  type ModelLoadProgress,
  type TransformersEmbedder,
  type TransformersEmbedderOptions,
} from '../src/embed/transformers-embedder.ts'
import { EMBED_WORKER_NAME } from '../src/embed/embedder.ts'

installErrorTransfer()

/** What a worker's own embedder reports once its model is ready: its fields that are plain data. */
export type LoadedModel = Pick<TransformersEmbedder, 'id' | 'dims' | 'device' | 'fallbackReason' | 'threads' | 'batchSize'>

/** The options of `createTransformersEmbedder` that can cross to a worker (no signal, no callback). */
export type EmbedWorkerOptions = Omit<TransformersEmbedderOptions, 'signal' | 'onProgress'>

let embedder: Promise<TransformersEmbedder> | undefined

/**
 * The embedding model in a worker of its own, started by the memory worker: inference runs
 * synchronously on the thread that calls it, so here it never holds up the database.
 */
const api = {
  async load(options: EmbedWorkerOptions, onProgress?: ((progress: ModelLoadProgress) => void) & ProxyMarked): Promise<LoadedModel> {
    if (embedder) throw new MemoryError('CONFLICT', 'This embedding worker already has a model')
    embedder = createTransformersEmbedder({
      ...options,
      ...(onProgress ? { onProgress: (progress: ModelLoadProgress) => void onProgress(progress) } : {}),
    })
    const e = await embedder
    return { id: e.id, dims: e.dims, device: e.device, fallbackReason: e.fallbackReason, threads: e.threads, batchSize: e.batchSize }
  },
  async embed(texts: string[]): Promise<Float32Array[]> {
    if (!embedder) throw new MemoryError('MODEL_UNAVAILABLE', 'The embedding worker has no model loaded')
    return (await embedder).embed(texts)
  },
  async dispose(): Promise<void> {
    const e = embedder
    embedder = undefined
    await (await e)?.dispose()
  },
}

export type EmbedWorkerApi = typeof api

// The published build bundles this script whole; the memory worker imports the same file to
// run the model in its own thread, and must not start serving this API there.
export { createTransformersEmbedder }
if ((self as unknown as DedicatedWorkerGlobalScope).name === EMBED_WORKER_NAME) expose(api)
