import type { Db, QueryOptions } from '../kernel/db.ts'
import type { Embedder } from '../kernel/embedder.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { lookupVectorOid, vectorQueryOptions } from '../../embed/vectors.ts'
import { backgroundError, withCode } from './background-errors.ts'
import { endBulk, startBulk } from './bulk-index.ts'
import type { LanedEmbedder } from './embed-lanes.ts'
import { type EmbedderState, loadEmbedder } from './embedder-loading.ts'
import {
  type EngineErrorListener,
  errorEvent,
  type IndexProgressListener,
  type IndexStatus,
  statusOf,
  tellListeners,
} from './index-events.ts'
import { indexingApi } from './indexing-api.ts'
import { DEFAULT_INDEXING_PAUSE, type IndexingPause, type PauseState, waitForQuiet } from './indexing-pause.ts'
import { countVectors, readPendingBatch } from './pending-vectors.ts'
import { checkVectors, writeVectors } from './vector-writes.ts'

export { backgroundError } from './background-errors.ts'
export type { EngineErrorEvent, EngineErrorListener, IndexProgressListener, IndexStatus } from './index-events.ts'
export type { WaitForIndexOptions } from './index-waits.ts'
export { DEFAULT_INDEXING_PAUSE, type IndexingPause, parseIndexingPause, untilPause } from './indexing-pause.ts'
export { otherModel, PENDING_BATCH_SQL } from './pending-vectors.ts'

/** Rows per indexing batch: embedded in the embedder's own batches (`batchSize`), written in one transaction. */
export const INDEX_BATCH_SIZE = 32

export interface IndexerOptions {
  /** A ready embedder, or one still loading; a rejected promise leaves the memory keyword-only. */
  embedder?: Embedder | Promise<Embedder> | undefined
  /** `auto` (default): index in the background after writes; `manual`: only on `indexNow()`. */
  mode?: 'auto' | 'manual'
  batchSize?: number
  /** How background batches yield to writes, as `parseIndexingPause` gives it (default `DEFAULT_INDEXING_PAUSE`). */
  pause?: IndexingPause | undefined
}

/** What the indexer's closures share: its flags, its timer, the run in progress. */
interface IndexerState extends PauseState, EmbedderState {
  lastError: MemoryError | undefined
  vectorOptions: QueryOptions | undefined
  /** A write came since the last batch was picked. */
  dirty: boolean
  timer: ReturnType<typeof setTimeout> | undefined
  /** The run in progress; every run ends resolved, with the error it stopped on, if any. */
  current: Promise<MemoryError | undefined> | undefined
}

/** Yields to the event loop so a query that arrived during a batch runs before the next one. */
function macrotask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0))
}

/**
 * The background indexer: embeds chunks and active memories that lack a vector of the
 * current model, one batch per macrotask, so writes never wait for vectors and a query
 * waits at most one batch. Vectors travel to PGlite in pgvector's binary format.
 */
export function createIndexer(ctx: EngineContext, options: IndexerOptions = {}) {
  const db: Db = ctx.db
  const mode = options.mode ?? 'auto'
  const batchSize = options.batchSize ?? INDEX_BATCH_SIZE
  const pause = options.pause ?? DEFAULT_INDEXING_PAUSE
  const progressListeners = new Set<IndexProgressListener>()
  const errorListeners = new Set<EngineErrorListener>()
  const state: IndexerState = {
    embedderState: options.embedder === undefined ? 'none' : 'loading',
    lastError: undefined,
    vectorOptions: undefined,
    stopped: false,
    dirty: false,
    timer: undefined,
    lastWrite: -Infinity,
    urgent: 0,
    wake: undefined,
    pressed: false,
    laned: undefined,
    current: undefined,
  }

  const settled: Promise<void> = loadEmbedder(ctx, options.embedder, state, fail, () => {
    if (mode === 'auto') nudge()
  })

  function fail(error: MemoryError): void {
    state.lastError = error
    emit(error)
  }

  /** Tells the error listeners of a failure in the background (also those outside indexing). */
  function emit(error: MemoryError): void {
    tellListeners(errorListeners, errorEvent(error, ctx.now()))
  }

  async function status(running = state.current !== undefined): Promise<IndexStatus> {
    return (await counts(running)).status
  }

  /** `status`, and how many of its pending rows are chunks (what `stats()` reports too). */
  async function counts(running = state.current !== undefined): Promise<{ status: IndexStatus; waitingChunks: number }> {
    const model = ctx.embedder?.id ?? null
    const { pending, done, chunks } = await countVectors(db, model)
    return { status: withState({ pending, done }, running), waitingChunks: chunks }
  }

  /** A status of these counts, with the model, the embedder's state and the last error now. */
  function withState(counts: { pending: number; done: number }, running: boolean): IndexStatus {
    return statusOf(counts, running, ctx.embedder?.id ?? null, state.embedderState, state.lastError)
  }

  /** Tells the progress listeners the status, counted; returns it (undefined: no listener). */
  async function publish(running: boolean): Promise<IndexStatus | undefined> {
    if (progressListeners.size === 0) return undefined
    const s = await status(running)
    tellListeners(progressListeners, s)
    return s
  }

  /**
   * Embeds and stores one batch; returns how many rows it took (0: nothing left) and how many
   * of them it stored (a memory edited meanwhile keeps its edit's vector).
   */
  async function indexBatch(embedder: LanedEmbedder): Promise<{ taken: number; stored: number }> {
    const model = embedder.id
    const none = { taken: 0, stored: 0 }
    // Memories first: they are few, and recall and dedup lean on their vectors.
    const rows = await readPendingBatch(db, model, batchSize)
    if (rows.length === 0) return none
    // In small model calls, each after the callers' embeds in flight: remember and search
    // wait for one small call at most, never for the whole batch.
    const vectors = await embedder.background(rows.map((r) => r.text))
    checkVectors(embedder, rows, vectors)
    if (state.stopped) return none
    state.vectorOptions ??= vectorQueryOptions(await lookupVectorOid(db))
    const stored = await writeVectors(db, rows, vectors, model, state.vectorOptions)
    // New vectors change what the planner should expect of the vector filters.
    ctx.changed(rows.length)
    return { taken: rows.length, stored }
  }

  /** Builds the indexes a bulk run dropped; a failure is reported and returned. */
  async function rebuild(definitions: readonly string[]): Promise<MemoryError | undefined> {
    try {
      await endBulk(db, definitions)
      return undefined
    } catch (cause) {
      const error = backgroundError(cause, 'Building the vector index failed')
      fail(error)
      return error
    }
  }

  /** Batches until nothing is left and no write came in meanwhile. */
  async function run(): Promise<MemoryError | undefined> {
    const embedder = state.laned
    if (!embedder) return undefined
    let dropped: string[] | undefined
    state.pressed = false
    try {
      await waitForQuiet(state, pause)
      if (state.stopped) return undefined
      // What waits and what is done, as last told: after a batch with no write meanwhile, the
      // batch's stored rows move from one to the other without counting again (a count reads
      // every waiting row, so during a switch to a new model, every chunk, for every batch).
      let told = await publish(true)
      for (;;) {
        state.dirty = false
        const { taken: n, stored } = await indexBatch(embedder)
        if (state.stopped) return undefined
        if (dropped === undefined && n > 0) dropped = n === batchSize ? await startBulk(db, embedder.id) : []
        if (n > 0 && state.lastError && state.embedderState === 'ready') state.lastError = undefined
        if (n === 0 && !state.dirty) {
          const definitions = dropped ?? []
          dropped = undefined
          return definitions.length > 0 ? await rebuild(definitions) : undefined
        }
        if (progressListeners.size > 0) {
          const s =
            told && !state.dirty
              ? withState({ pending: told.pending - stored, done: told.done + stored }, true)
              : await status(true)
          told = s
          // The last batch is announced by the end of the run (running: false).
          if (s.pending > 0 || state.dirty) tellListeners(progressListeners, s)
        } else {
          told = undefined
        }
        await macrotask()
        await waitForQuiet(state, pause)
        if (state.stopped) return undefined
      }
    } catch (cause) {
      if (state.stopped) return undefined
      const error = withCode(cause, 'MODEL_UNAVAILABLE', `Indexing with "${embedder.id}" failed`)
      fail(error)
      return error
    } finally {
      // Stopped or failed halfway through a bulk run: build what is there now. (A stop
      // before closing leaves it to the next open, which creates a missing index.)
      if (dropped && dropped.length > 0 && !state.stopped) await rebuild(dropped)
    }
  }

  /** Starts a run unless one is going; resolves when the run (the current or a new one) ends. */
  function start(): Promise<MemoryError | undefined> {
    if (state.current) return state.current
    const running = run().finally(() => {
      state.current = undefined
      if (!state.stopped) void publish(false).catch(() => {})
      // A write that landed after the last batch was picked starts the next run.
      if (state.dirty && !state.stopped && mode === 'auto') nudge()
    })
    state.current = running
    return running
  }

  /** Cheap: a flag and at most one timer; no query until the timer fires. */
  function nudge(): void {
    state.dirty = true
    state.lastWrite = performance.now()
    if (mode !== 'auto' || state.stopped || !ctx.embedder || state.current || state.timer) return
    state.timer = setTimeout(() => {
      state.timer = undefined
      void start()
    }, 0)
  }

  async function waitUntilIdle(signal: AbortSignal | undefined): Promise<MemoryError | undefined> {
    await settled
    if (!ctx.embedder) {
      throw (
        state.lastError ??
        new MemoryError('MODEL_UNAVAILABLE', 'This memory has no embedder: search is keyword-only and nothing is indexed.')
      )
    }
    state.urgent++
    state.wake?.()
    try {
      for (;;) {
        if (signal?.aborted) throw new MemoryError('ABORTED', 'Waiting for the index was cancelled', { cause: signal.reason })
        if (state.timer) {
          clearTimeout(state.timer)
          state.timer = undefined
        }
        const error = await (state.current ?? start())
        if (error) return error
        const s = await status(false)
        if (s.pending === 0 || state.stopped) return undefined
      }
    } finally {
      state.urgent--
    }
  }

  return {
    /** Called after every write; see `nudge`. */
    nudge,

    /** The status `indexing()` reports, with the chunks among its pending rows (for `stats()`). */
    counts: () => counts(),

    /** Reports a failure of other background work (statistics) to the `onError` listeners. */
    report(cause: unknown, what: string): void {
      emit(backgroundError(cause, what))
    },

    /** Stops the background indexer and waits for the batch in flight (before closing the database). */
    async stop(): Promise<void> {
      state.stopped = true
      if (state.timer) clearTimeout(state.timer)
      state.timer = undefined
      state.wake?.()
      await state.current
    },

    api: indexingApi({
      db,
      ctx,
      settled,
      lastError: () => state.lastError,
      status: () => status(),
      waitUntilIdle,
      nudge,
      progressListeners,
      errorListeners,
    }),
  }
}

export type Indexer = ReturnType<typeof createIndexer>
