import type { Embedder } from '../kernel/embedder.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import type { MemoryError } from '../kernel/errors.ts'
import { ensureVectorIndex } from '../db/vectors.ts'
import { withCode } from './background-errors.ts'
import { foregroundFirst, type LanedEmbedder } from './embed-lanes.ts'
import type { IndexStatus } from './index-events.ts'

/** What loading the embedder sets of the indexer's shared state. */
export interface EmbedderState {
  embedderState: IndexStatus['embedder']
  /** The embedder, with the callers' embeds ahead of the background batches (`foregroundFirst`). */
  laned: LanedEmbedder | undefined
  stopped: boolean
}

/**
 * Waits for `given` and puts it on `ctx` (laned) and on `state`, then calls `ready`. A model
 * that fails to load is passed to `fail` and leaves the memory keyword-only; no embedder at
 * all resolves at once.
 */
export async function loadEmbedder(
  ctx: EngineContext,
  given: Embedder | Promise<Embedder> | undefined,
  state: EmbedderState,
  fail: (error: MemoryError) => void,
  ready: () => void,
): Promise<void> {
  if (given === undefined) return
  let embedder: Embedder
  try {
    embedder = await given
  } catch (cause) {
    ctx.embedderLoading = false
    state.embedderState = 'unavailable'
    fail(withCode(cause, 'MODEL_UNAVAILABLE', 'The embedding model could not be loaded'))
    return
  }
  state.laned = foregroundFirst(embedder)
  ctx.embedder = state.laned
  ctx.embedderLoading = false
  state.embedderState = 'ready'
  // A model that was still loading gets the vector indexes a ready one gets as the engine
  // opens; a failure leaves exact scans, and is reported.
  if (given instanceof Promise && !state.stopped) {
    try {
      await ensureVectorIndex(ctx.db, embedder.dims)
    } catch (cause) {
      fail(withCode(cause, 'INTERNAL', 'The vector index could not be made'))
    }
  }
  ready()
}
