import type { Db } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { checkListener } from '../kernel/input-walk.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { withCode } from './background-errors.ts'
import type { EngineErrorListener, IndexProgressListener, IndexStatus } from './index-events.ts'
import { waitOptions, type WaitForIndexOptions, withinLimits } from './index-waits.ts'
import { clearVectors } from './vector-writes.ts'

const embedInput = z.array(z.string().max(100_000)).min(1).max(1024)

/** What the memory's indexing methods use of the indexer (`createIndexer`). */
export interface IndexerCore {
  db: Db
  ctx: EngineContext
  /** Resolves once the embedder has loaded, or failed to. */
  settled: Promise<void>
  /** The last background failure, if any. */
  lastError(): MemoryError | undefined
  status(): Promise<IndexStatus>
  /** Runs batches until nothing waits; resolves with the error a run stopped on, if any. */
  waitUntilIdle(signal: AbortSignal | undefined): Promise<MemoryError | undefined>
  nudge(): void
  progressListeners: Set<IndexProgressListener>
  errorListeners: Set<EngineErrorListener>
}

/** The memory's indexing methods (`memory.indexing()`, `waitForIndex`, `indexNow`, ...), over the indexer's `core`. */
export function indexingApi(core: IndexerCore) {
  return {
    /**
     * Where background indexing stands: rows pending and done for the current model.
     *
     * @example
     * const { pending, done, model } = await memory.indexing()
     */
    indexing(): Promise<IndexStatus> {
      return core.status()
    },

    /**
     * Resolves once every chunk and active memory has a vector of the current model.
     * Rejects with `MODEL_UNAVAILABLE` when there is no working embedder, `ABORTED` on
     * `signal`, `TIMEOUT` after `timeoutMs`. Meant for tests and benchmarks.
     *
     * @example
     * await memory.record(event)
     * await memory.waitForIndex({ timeoutMs: 30_000 })
     */
    async waitForIndex(options: WaitForIndexOptions = {}): Promise<IndexStatus> {
      const o = parseInput(waitOptions, options, 'waitForIndex options')
      return withinLimits(
        () => core.waitUntilIdle(o.signal),
        async (error) => {
          if (error) throw error
          return await core.status()
        },
        o.timeoutMs,
        o.signal,
      )
    },

    /**
     * Indexes everything pending now, in batches, and resolves with the status. The way to
     * index a memory opened with `indexing: 'manual'`.
     *
     * @example
     * const { pending } = await memory.indexNow() // 0
     */
    async indexNow(): Promise<IndexStatus> {
      const error = await core.waitUntilIdle(undefined)
      if (error) throw error
      return core.status()
    },

    /**
     * Drops every vector (chunks and memories) and embeds everything again in the
     * background, e.g. after a model change. Meanwhile search is keyword-only.
     *
     * @example
     * await memory.rebuildIndex()
     * await memory.waitForIndex()
     */
    async rebuildIndex(): Promise<{ chunks: number; memories: number }> {
      const cleared = await clearVectors(core.db)
      core.nudge()
      return cleared
    },

    /**
     * Embeds texts with the memory's model (the vectors search compares against).
     *
     * @example
     * const [v] = await memory.embed(['fix the login bug']) // Float32Array(384)
     */
    async embed(texts: string[]): Promise<Float32Array[]> {
      const input = parseInput(embedInput, texts, 'texts to embed')
      await core.settled
      const embedder = core.ctx.embedder
      if (!embedder) {
        throw core.lastError() ?? new MemoryError('MODEL_UNAVAILABLE', 'This memory has no embedder.')
      }
      try {
        return await embedder.embed(input)
      } catch (cause) {
        throw withCode(cause, 'MODEL_UNAVAILABLE', `The embedder "${embedder.id}" failed`)
      }
    },

    /**
     * Calls `listener` with the status when indexing starts, after each batch, and when it
     * stops. Returns the unsubscribe function. Across the worker boundary, pass a
     * `comlink.proxy` (the browser client's `memory.onIndexProgress` does).
     *
     * @example
     * const stop = memory.onIndexProgress(({ pending, done }) => bar.update(done, pending + done))
     */
    onIndexProgress: (listener: IndexProgressListener): (() => void) => {
      checkListener(listener, 'onIndexProgress')
      core.progressListeners.add(listener)
      return () => {
        core.progressListeners.delete(listener)
      }
    },

    /**
     * Calls `listener` for failures that happen in the background: the model failing to
     * load (`MODEL_UNAVAILABLE`; the memory then works with keyword search only) or a
     * batch failing. Returns the unsubscribe function.
     *
     * @example
     * memory.onError((e) => console.warn(e.code, e.message))
     */
    onError: (listener: EngineErrorListener): (() => void) => {
      checkListener(listener, 'onError')
      core.errorListeners.add(listener)
      return () => {
        core.errorListeners.delete(listener)
      }
    },
  }
}
