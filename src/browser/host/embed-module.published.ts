// The published build's `embed-module.js` (scripts/build-lib.mjs writes it over the compiled
// `embed-module.ts`). There the embedding worker's script is one bundled file holding
// Transformers.js and onnxruntime-web; a bundler copies it as is for this URL. The dedicated
// worker and the model in this thread both load that one copy, so an app ships it once.
import { isErrorCode, MemoryError } from '../../core/kernel/errors.ts'
import { EMBED_WORKER_NAME } from '../../embed/embedder.ts'
import type { createTransformersEmbedder, TransformersEmbedder } from '../../embed/transformers-embedder.ts'

const EMBED_WORKER = new URL('../../../workers/embed.worker.js', import.meta.url)

/** The embedding worker, next to the memory worker's script. */
export function startEmbedWorker(): Worker {
  return new Worker(EMBED_WORKER, { type: 'module', name: EMBED_WORKER_NAME })
}

/** The model's module in this thread, for when the model runs in the memory worker. */
export async function importEmbedder(): Promise<{ createTransformersEmbedder: typeof createTransformersEmbedder }> {
  const bundled = (await import(/* @vite-ignore */ /* webpackIgnore: true */ EMBED_WORKER.href)) as {
    createTransformersEmbedder: typeof createTransformersEmbedder
  }
  return {
    createTransformersEmbedder: async (options) => {
      const embedder = await bundled.createTransformersEmbedder(options).catch(rethrow)
      const own: TransformersEmbedder = {
        ...embedder,
        embed: (texts, embedOptions) => embedder.embed(texts, embedOptions).catch(rethrow),
        dispose: () => embedder.dispose().catch(rethrow),
      }
      return own
    },
  }
}

/** The bundle's MemoryError is a class of its own: rethrown as this module's, code and all. */
function rethrow(error: unknown): never {
  if (error instanceof Error && !(error instanceof MemoryError) && error.name === 'MemoryError') {
    const { code, details } = error as Error & { code?: unknown; details?: Record<string, unknown> }
    if (isErrorCode(code)) {
      throw new MemoryError(code, error.message, {
        ...(details === undefined ? {} : { details }),
        ...(error.cause === undefined ? {} : { cause: error.cause }),
      })
    }
  }
  throw error
}
