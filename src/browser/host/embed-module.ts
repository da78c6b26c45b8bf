import { EMBED_WORKER_NAME } from '../../embed/embedder.ts'
import type { createTransformersEmbedder } from '../../embed/transformers-embedder.ts'

/** The embedding worker, next to the memory worker's script (bundlers follow this URL). */
export function startEmbedWorker(): Worker {
  return new Worker(new URL('../../../workers/embed.worker.ts', import.meta.url), { type: 'module', name: EMBED_WORKER_NAME })
}

/**
 * The model's module in this thread, for when the model runs in the memory worker. The
 * published build loads the embedding worker's own script here, so an app ships one copy.
 */
export async function importEmbedder(): Promise<{ createTransformersEmbedder: typeof createTransformersEmbedder }> {
  return import('../../embed/transformers-embedder.ts')
}
