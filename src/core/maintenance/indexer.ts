import type { Db, QueryOptions } from '../kernel/db.ts'
import type { Embedder } from '../kernel/embedder.ts'
import { foregroundFirst, type LanedEmbedder } from './embed-lanes.ts'
import { toMemoryError as fromDatabaseError } from '../db/errors.ts'
import type { EngineContext, IndexingPause } from '../kernel/engine-context.ts'
import { type ErrorCode, MemoryError } from '../kernel/errors.ts'
import { checkListener } from '../kernel/input-walk.ts'
import { ALL_CHUNKS_SQL, buildVectorIndexes, bulkWorthIt, dropVectorIndexes, ensureVectorIndex, MISSING_VECTORS_SQL } from '../db/vectors.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { lookupVectorOid, vectorQueryOptions } from '../../embed/vectors.ts'
import { SEALED_SQL } from '../privacy/vault.ts'

export type { IndexingPause }

/** Rows per indexing batch: embedded in the embedder's own batches (`batchSize`), written in one transaction. */
export const INDEX_BATCH_SIZE = 32

/**
 * Background indexing yields to writes: before each batch it waits until no write has come
 * for `quietMs`, but never more than `maxWaitMs`. The model takes the CPU while it embeds,
 * which would otherwise slow the writes that keep arriving. Once a run has waited `maxWaitMs`,
 * it stops waiting until nothing is left, so a steady stream of writes still gets its vectors.
 * `waitForIndex` and `indexNow` never wait for a pause. `quietMs: 0` indexes at once.
 */
export const DEFAULT_INDEXING_PAUSE: Readonly<IndexingPause> = Object.freeze({ quietMs: 1_000, maxWaitMs: 10_000 })

const pauseInput = z.strictObject({
  quietMs: z.number().int().min(0).max(60_000).default(DEFAULT_INDEXING_PAUSE.quietMs),
  maxWaitMs: z.number().int().min(0).max(600_000).default(DEFAULT_INDEXING_PAUSE.maxWaitMs),
})

/** `indexingPause` with its defaults filled in; refuses a value out of range. */
export function parseIndexingPause(input: Partial<IndexingPause> | undefined): IndexingPause {
  return parseInput(pauseInput, input ?? {}, 'indexingPause')
}

/**
 * Milliseconds until work waiting since `since` may start: once no write has come for
 * `quietMs` since `lastWrite`, or once it has waited `maxWaitMs`. Zero or less: now.
 */
export function untilPause(pause: IndexingPause, lastWrite: number, since: number, now = performance.now()): number {
  return Math.min(pause.quietMs - (now - lastWrite), pause.maxWaitMs - (now - since))
}

/** Where the background indexer stands. */
export interface IndexStatus {
  /** Chunks and active memories without a vector of the current model (all of them when there is no model). */
  pending: number
  /** Chunks and active memories whose vector is of the current model. */
  done: number
  /** The current embedder's id; vectors of any other model are ignored and re-embedded. */
  model: string | null
  /**
   * `loading`: the embedder is still starting; `ready`: it can embed; `unavailable`: it
   * failed to load (keyword search only); `none`: the memory has no embedder.
   */
  embedder: 'loading' | 'ready' | 'unavailable' | 'none'
  /** A batch is being embedded or written right now. */
  running: boolean
  /** The last failure, cleared by the next batch that succeeds. */
  lastError?: { code: ErrorCode; message: string }
}

/**
 * Something went wrong away from any call that could throw it: the embedding model failed
 * to load (`MODEL_UNAVAILABLE`) or a background batch failed. The memory keeps working.
 */
export interface EngineErrorEvent {
  code: ErrorCode
  message: string
  details?: Record<string, unknown>
  /** ISO time of the failure. */
  at: string
}

export type IndexProgressListener = (status: IndexStatus) => void
export type EngineErrorListener = (error: EngineErrorEvent) => void

export interface IndexerOptions {
  /** A ready embedder, or one still loading; a rejected promise leaves the memory keyword-only. */
  embedder?: Embedder | Promise<Embedder> | undefined
  /** `auto` (default): index in the background after writes; `manual`: only on `indexNow()`. */
  mode?: 'auto' | 'manual'
  batchSize?: number
  /** How background batches yield to writes, as `parseIndexingPause` gives it (default `DEFAULT_INDEXING_PAUSE`). */
  pause?: IndexingPause | undefined
}

const waitOptions = z.strictObject({
  timeoutMs: z.number().int().min(1).optional(),
  signal: z.custom<AbortSignal>((v) => typeof AbortSignal !== 'undefined' && v instanceof AbortSignal).optional(),
})
export type WaitForIndexOptions = z.input<typeof waitOptions>

const embedInput = z.array(z.string().max(100_000)).min(1).max(1024)

interface PendingRow {
  kind: 'memory' | 'chunk'
  id: string
  text: string
  hash: string | null
}

/**
 * Chunks with a vector of another model than `$1` (all of them when `$1` is null), written so
 * the `chunks_embed_model` index can find them: a scan of every chunk per batch would make
 * indexing slower the larger the memory.
 */
export const otherModel = (c = 'chunks') =>
  `${c}.embedding IS NOT NULL AND ($1::text IS NULL OR ${c}.embed_model < $1::text OR ${c}.embed_model > $1::text OR ${c}.embed_model IS NULL)`

/** Chunks waiting for a vector of model `$1`: none yet, or another model's (two index reads). */
const WAITING_CHUNKS_SQL = `(${MISSING_VECTORS_SQL} + (SELECT count(*) FROM chunks WHERE ${otherModel()}))`

/**
 * Active memories with another model's vector than `$1` (every vector when `$1` is null), as
 * a predicate over `m` that `memories_embed_model` answers.
 */
const OTHER_MODEL_MEMORY = `m.status = 'active' AND m.vector IS NOT NULL
  AND (($1::text IS NULL AND m.embed_model IS NOT NULL) OR m.embed_model < $1::text OR m.embed_model > $1::text
       OR ($1::text IS NOT NULL AND m.embed_model IS NULL))`

/** A memory sealed at rest (src/core/privacy/vault.ts) keeps no vector: the indexer never waits for one. */
const UNSEALED = `NOT starts_with(m.content, ${SEALED_SQL})`

/**
 * Active memories without a vector of the current model (`$1`): none yet (`memories_unembedded`)
 * or another model's (`memories_embed_model`), counted through the two indexes.
 */
const WAITING_MEMORIES_SQL = `((SELECT count(*) FROM memories m WHERE ${UNSEALED} AND m.status = 'active' AND m.vector IS NULL)
  + (SELECT count(*) FROM memories m WHERE ${OTHER_MODEL_MEMORY}))`

/**
 * The rows of `from` (aliased `t`) that wait for a vector of model `$1`, as four walks of its
 * two partial indexes, each in the index's order and of at most `$2` rows: no vector yet
 * (`vector` IS NULL), then another model's below `$1`, above it, and with no model name.
 */
function waitingWalks(columns: string, from: string, vector: string, t: string): string {
  const walk = (where: string, order: string) =>
    `(SELECT ${columns} FROM ${from} WHERE ${where} ORDER BY ${order} LIMIT $2)`
  return [
    walk(`${vector} IS NULL`, `${t}.created_at, ${t}.id`),
    walk(`${vector} IS NOT NULL AND ${t}.embed_model < $1::text`, `${t}.embed_model, ${t}.created_at, ${t}.id`),
    walk(`${vector} IS NOT NULL AND ${t}.embed_model > $1::text`, `${t}.embed_model, ${t}.created_at, ${t}.id`),
    walk(`${vector} IS NOT NULL AND ${t}.embed_model IS NULL`, `${t}.created_at, ${t}.id`),
  ].join('\n    UNION ALL\n    ')
}

/**
 * The next batch to embed for model `$1`, at most `$2` rows: memories first, then chunks,
 * each without a vector or with another model's, oldest first. Another model's rows are read
 * as one walk of `memories_embed_model` or `chunks_embed_model` on each side of `$1` (and one
 * over those with no model name), each in the index's order (model, then time) and stopping at
 * `$2` rows. Read as one range ordered by time alone, every waiting chunk was read and sorted
 * for each batch (34 ms a batch with 10,000 waiting), so the batches of a switch to a new
 * model cost in all about the square of the number of chunks.
 */
export const PENDING_BATCH_SQL = `SELECT kind, id, text, hash FROM (
    ${waitingWalks(`'memory' AS kind, 0 AS rank, m.id, m.content AS text, m.hash, m.created_at`, 'memories m', `${UNSEALED} AND m.status = 'active' AND m.vector`, 'm')}
    UNION ALL
    ${waitingWalks(`'chunk' AS kind, 1 AS rank, c.id, c.text, NULL AS hash, c.created_at`, 'chunks c', 'c.embedding', 'c')}
  ) pending
  ORDER BY rank, created_at, id
  LIMIT $2`

/** A database failure in background work, with the code a call would have thrown and what was being done. */
export function backgroundError(cause: unknown, what: string): MemoryError {
  const error = fromDatabaseError(cause)
  return new MemoryError(error.code, `${what}: ${error.message}`, {
    cause,
    ...(error.details ? { details: error.details } : {}),
  })
}

/** Yields to the event loop so a query that arrived during a batch runs before the next one. */
function macrotask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0))
}

function toMemoryError(error: unknown, code: ErrorCode, what: string): MemoryError {
  if (error instanceof MemoryError) return error
  const message = error instanceof Error ? error.message : String(error)
  return new MemoryError(code, `${what}: ${message}`, { cause: error })
}

function callListener<T>(listener: (value: T) => void, value: T): void {
  try {
    // Across a worker boundary a listener is a proxy returning a promise; a closed page rejects it.
    const result: unknown = listener(value)
    if (result instanceof Promise) result.catch(() => {})
  } catch {
    // A broken observer must not stop the indexer.
  }
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

  let embedderState: IndexStatus['embedder'] = options.embedder === undefined ? 'none' : 'loading'
  let lastError: MemoryError | undefined
  let vectorOptions: QueryOptions | undefined
  let stopped = false
  let dirty = false
  let timer: ReturnType<typeof setTimeout> | undefined
  /** When the last write came (`performance.now()`). */
  let lastWrite = -Infinity
  /** Callers waiting for the index (`waitForIndex`, `indexNow`): batches then do not wait for a pause. */
  let urgent = 0
  /** Ends the pause a batch is waiting in, if any. */
  let wake: (() => void) | undefined
  /** The run in progress has waited `maxWaitMs` once: it waits for no pause again. */
  let pressed = false
  /** The embedder, with the callers' embeds ahead of the background batches (`foregroundFirst`). */
  let laned: LanedEmbedder | undefined
  /** The run in progress; every run ends resolved, with the error it stopped on, if any. */
  let current: Promise<MemoryError | undefined> | undefined

  const settled: Promise<void> = (async () => {
    const given = options.embedder
    if (given === undefined) return
    let embedder: Embedder
    try {
      embedder = await given
    } catch (cause) {
      ctx.embedderLoading = false
      embedderState = 'unavailable'
      fail(toMemoryError(cause, 'MODEL_UNAVAILABLE', 'The embedding model could not be loaded'))
      return
    }
    laned = foregroundFirst(embedder)
    ctx.embedder = laned
    ctx.embedderLoading = false
    embedderState = 'ready'
    // A model that was still loading gets the vector indexes a ready one gets as the engine
    // opens; a failure leaves exact scans, and is reported.
    if (given instanceof Promise && !stopped) {
      try {
        await ensureVectorIndex(ctx.db, embedder.dims)
      } catch (cause) {
        fail(toMemoryError(cause, 'INTERNAL', 'The vector index could not be made'))
      }
    }
    if (mode === 'auto') nudge()
  })()

  function fail(error: MemoryError): void {
    lastError = error
    emit(error)
  }

  /** Tells the error listeners of a failure in the background (also those outside indexing). */
  function emit(error: MemoryError): void {
    const event: EngineErrorEvent = {
      code: error.code,
      message: error.message,
      ...(error.details ? { details: error.details } : {}),
      at: ctx.now().toISOString(),
    }
    for (const listener of errorListeners) callListener(listener, event)
  }

  async function status(running = current !== undefined): Promise<IndexStatus> {
    return (await counts(running)).status
  }

  /** `status`, and how many of its pending rows are chunks (what `stats()` reports too). */
  async function counts(running = current !== undefined): Promise<{ status: IndexStatus; waitingChunks: number }> {
    const model = ctx.embedder?.id ?? null
    // Chunks are counted by what waits (two index scans) against the kept total: the cost
    // follows the backlog, not the size of the memory.
    const { rows } = await db.query<{ done: number; pending: number; chunks: number }>(
      `WITH waiting AS (SELECT ${WAITING_CHUNKS_SQL} AS chunks, ${ALL_CHUNKS_SQL} AS total)
       SELECT w.total - w.chunks
            + (SELECT count(*) FROM memories
               WHERE status = 'active' AND vector IS NOT NULL AND embed_model = $1::text) AS done,
              w.chunks
            + ${WAITING_MEMORIES_SQL} AS pending,
              w.chunks
       FROM waiting w`,
      [model],
    )
    const status = withState({ pending: Number(rows[0]?.pending ?? 0), done: Number(rows[0]?.done ?? 0) }, running)
    return { status, waitingChunks: Number(rows[0]?.chunks ?? 0) }
  }

  /** A status of these counts, with the model, the embedder's state and the last error now. */
  function withState(counts: { pending: number; done: number }, running: boolean): IndexStatus {
    return {
      ...counts,
      model: ctx.embedder?.id ?? null,
      embedder: embedderState,
      running,
      ...(lastError ? { lastError: { code: lastError.code, message: lastError.message } } : {}),
    }
  }

  /** Tells the progress listeners the status, counted; returns it (undefined: no listener). */
  async function publish(running: boolean): Promise<IndexStatus | undefined> {
    if (progressListeners.size === 0) return undefined
    const s = await status(running)
    for (const listener of progressListeners) callListener(listener, s)
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
    const { rows } = await db.query<PendingRow>(PENDING_BATCH_SQL, [model, batchSize])
    if (rows.length === 0) return none
    // In small model calls, each after the callers' embeds in flight: remember and search
    // wait for one small call at most, never for the whole batch.
    const vectors = await embedder.background(rows.map((r) => r.text))
    if (vectors.length !== rows.length || vectors.some((v) => v.length !== embedder.dims)) {
      throw new MemoryError(
        'MODEL_UNAVAILABLE',
        `The embedder "${model}" returned ${vectors.length} vectors of ${vectors[0]?.length ?? 0} dimensions ` +
          `for ${rows.length} texts; expected ${embedder.dims} dimensions each.`,
      )
    }
    if (stopped) return none
    vectorOptions ??= vectorQueryOptions(await lookupVectorOid(db))
    const opts = vectorOptions
    const stored = await db.transaction(async (tx) => {
      let n = 0
      for (const [i, row] of rows.entries()) {
        // A memory edited meanwhile keeps the vector its edit gave it (the hash tells).
        const result =
          row.kind === 'memory'
            ? await tx.query(
                `UPDATE memories SET vector = $1::vector, embed_model = $2 WHERE id = $3 AND hash = $4`,
                [vectors[i], model, row.id, row.hash],
                opts,
              )
            : await tx.query(`UPDATE chunks SET embedding = $1::vector, embed_model = $2 WHERE id = $3`, [
                vectors[i],
                model,
                row.id,
              ], opts)
        n += result.affectedRows ?? 0
      }
      return n
    })
    // New vectors change what the planner should expect of the vector filters.
    ctx.changed(rows.length)
    return { taken: rows.length, stored }
  }

  /**
   * After a full first batch: for chunks and for memories each, when `bulkWorthIt` (many
   * wait, no fewer than already hold a vector of this model), the table's HNSW index is
   * dropped now and built once at the end of the run. Another model's vectors are not
   * counted: every one of them waits to be replaced, so a memory opened with a new model
   * builds its index once instead of inserting each new vector into the old graph.
   */
  async function startBulk(model: string): Promise<string[]> {
    // The chunks of this model are every chunk (the kept total) but those that wait, as in
    // `status`: no count reads them.
    const { rows } = await db.query<{ chunks: number; chunks_indexed: number; memories: number; memories_indexed: number }>(
      `WITH backlog AS (SELECT ${WAITING_CHUNKS_SQL}::int AS chunks, ${ALL_CHUNKS_SQL}::int AS total)
       SELECT b.chunks, b.total - b.chunks AS chunks_indexed,
              ${WAITING_MEMORIES_SQL}::int AS memories,
              (SELECT count(*) FROM memories WHERE vector IS NOT NULL AND embed_model = $1::text)::int AS memories_indexed
       FROM backlog b`,
      [model],
    )
    const r = rows[0]
    return [
      ...(bulkWorthIt(r?.chunks ?? 0, r?.chunks_indexed ?? 0) ? await dropVectorIndexes(db) : []),
      ...(bulkWorthIt(r?.memories ?? 0, r?.memories_indexed ?? 0) ? await dropVectorIndexes(db, 'memories') : []),
    ]
  }

  /** Builds the indexes a bulk run dropped; a failure is reported and returned. */
  async function rebuild(definitions: readonly string[]): Promise<MemoryError | undefined> {
    try {
      await db.transaction((tx) => buildVectorIndexes(tx, definitions))
      return undefined
    } catch (cause) {
      const error = backgroundError(cause, 'Building the vector index failed')
      fail(error)
      return error
    }
  }

  /**
   * Waits until writes have paused for `quietMs`, `maxWaitMs` at most; at once when someone
   * waits for the index, or when this run has already waited `maxWaitMs` (`pressed`): writes
   * that never pause would otherwise hold each batch for `maxWaitMs`, and the backlog would grow.
   */
  async function quiet(): Promise<void> {
    const began = performance.now()
    for (;;) {
      // Manual mode runs only for a caller waiting on the index (urgent).
      if (urgent > 0 || stopped || pressed) return
      const now = performance.now()
      const left = untilPause(pause, lastWrite, began, now)
      if (left <= 0) {
        if (now - began >= pause.maxWaitMs && now - lastWrite < pause.quietMs) pressed = true
        return
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left)
        wake = () => {
          clearTimeout(t)
          resolve()
        }
      })
      wake = undefined
    }
  }

  /** Batches until nothing is left and no write came in meanwhile. */
  async function run(): Promise<MemoryError | undefined> {
    const embedder = laned
    if (!embedder) return undefined
    let dropped: string[] | undefined
    pressed = false
    try {
      await quiet()
      if (stopped) return undefined
      // What waits and what is done, as last told: after a batch with no write meanwhile, the
      // batch's stored rows move from one to the other without counting again (a count reads
      // every waiting row, so during a switch to a new model, every chunk, for every batch).
      let told = await publish(true)
      for (;;) {
        dirty = false
        const { taken: n, stored } = await indexBatch(embedder)
        if (stopped) return undefined
        if (dropped === undefined && n > 0) dropped = n === batchSize ? await startBulk(embedder.id) : []
        if (n > 0 && lastError && embedderState === 'ready') lastError = undefined
        if (n === 0 && !dirty) {
          const definitions = dropped ?? []
          dropped = undefined
          return definitions.length > 0 ? await rebuild(definitions) : undefined
        }
        if (progressListeners.size > 0) {
          const s =
            told && !dirty
              ? withState({ pending: told.pending - stored, done: told.done + stored }, true)
              : await status(true)
          told = s
          // The last batch is announced by the end of the run (running: false).
          if (s.pending > 0 || dirty) for (const listener of progressListeners) callListener(listener, s)
        } else {
          told = undefined
        }
        await macrotask()
        await quiet()
        if (stopped) return undefined
      }
    } catch (cause) {
      if (stopped) return undefined
      const error = toMemoryError(cause, 'MODEL_UNAVAILABLE', `Indexing with "${embedder.id}" failed`)
      fail(error)
      return error
    } finally {
      // Stopped or failed halfway through a bulk run: build what is there now. (A stop
      // before closing leaves it to the next open, which creates a missing index.)
      if (dropped && dropped.length > 0 && !stopped) await rebuild(dropped)
    }
  }

  /** Starts a run unless one is going; resolves when the run (the current or a new one) ends. */
  function start(): Promise<MemoryError | undefined> {
    if (current) return current
    const running = run().finally(() => {
      current = undefined
      if (!stopped) void publish(false).catch(() => {})
      // A write that landed after the last batch was picked starts the next run.
      if (dirty && !stopped && mode === 'auto') nudge()
    })
    current = running
    return running
  }

  /** Cheap: a flag and at most one timer; no query until the timer fires. */
  function nudge(): void {
    dirty = true
    lastWrite = performance.now()
    if (mode !== 'auto' || stopped || !ctx.embedder || current || timer) return
    timer = setTimeout(() => {
      timer = undefined
      void start()
    }, 0)
  }

  async function waitUntilIdle(signal: AbortSignal | undefined): Promise<MemoryError | undefined> {
    await settled
    if (!ctx.embedder) {
      throw (
        lastError ??
        new MemoryError('MODEL_UNAVAILABLE', 'This memory has no embedder: search is keyword-only and nothing is indexed.')
      )
    }
    urgent++
    wake?.()
    try {
      for (;;) {
        if (signal?.aborted) throw new MemoryError('ABORTED', 'Waiting for the index was cancelled', { cause: signal.reason })
        if (timer) {
          clearTimeout(timer)
          timer = undefined
        }
        const error = await (current ?? start())
        if (error) return error
        const s = await status(false)
        if (s.pending === 0 || stopped) return undefined
      }
    } finally {
      urgent--
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
      stopped = true
      if (timer) clearTimeout(timer)
      timer = undefined
      wake?.()
      await current
    },

    api: {
      /**
       * Where background indexing stands: rows pending and done for the current model.
       *
       * @example
       * const { pending, done, model } = await memory.indexing()
       */
      indexing(): Promise<IndexStatus> {
        return status()
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
        let timeout: ReturnType<typeof setTimeout> | undefined
        const limits: Promise<never>[] = []
        if (o.timeoutMs !== undefined) {
          const ms = o.timeoutMs
          limits.push(
            new Promise<never>((_, reject) => {
              timeout = setTimeout(
                () => reject(new MemoryError('TIMEOUT', `The index was not complete within ${ms} ms.`)),
                ms,
              )
            }),
          )
        }
        const signal = o.signal
        let onAbort: (() => void) | undefined
        if (signal) {
          limits.push(
            new Promise<never>((_, reject) => {
              onAbort = () =>
                reject(new MemoryError('ABORTED', 'Waiting for the index was cancelled', { cause: signal.reason }))
              if (signal.aborted) onAbort()
              else signal.addEventListener('abort', onAbort, { once: true })
            }),
          )
        }
        try {
          const error = await Promise.race([waitUntilIdle(signal), ...limits])
          if (error) throw error
          return await status()
        } finally {
          if (timeout) clearTimeout(timeout)
          if (signal && onAbort) signal.removeEventListener('abort', onAbort)
        }
      },

      /**
       * Indexes everything pending now, in batches, and resolves with the status. The way to
       * index a memory opened with `indexing: 'manual'`.
       *
       * @example
       * const { pending } = await memory.indexNow() // 0
       */
      async indexNow(): Promise<IndexStatus> {
        const error = await waitUntilIdle(undefined)
        if (error) throw error
        return status()
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
        const cleared = await db.transaction(async (tx) => {
          // Every vector cleared leaves its entry in the HNSW index (schema/0015-vector-debt.ts).
          await tx.query(`UPDATE vector_debt SET chunks = chunks + (SELECT count(*) FROM chunks WHERE embedding IS NOT NULL)`)
          const chunks = await tx.query(
            `UPDATE chunks SET embedding = NULL, embed_model = NULL WHERE embedding IS NOT NULL OR embed_model IS NOT NULL`,
          )
          const memories = await tx.query(
            `UPDATE memories SET vector = NULL, embed_model = NULL WHERE vector IS NOT NULL OR embed_model IS NOT NULL`,
          )
          return { chunks: chunks.affectedRows ?? 0, memories: memories.affectedRows ?? 0 }
        })
        nudge()
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
        await settled
        const embedder = ctx.embedder
        if (!embedder) {
          throw lastError ?? new MemoryError('MODEL_UNAVAILABLE', 'This memory has no embedder.')
        }
        try {
          return await embedder.embed(input)
        } catch (cause) {
          throw toMemoryError(cause, 'MODEL_UNAVAILABLE', `The embedder "${embedder.id}" failed`)
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
        progressListeners.add(listener)
        return () => {
          progressListeners.delete(listener)
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
        errorListeners.add(listener)
        return () => {
          errorListeners.delete(listener)
        }
      },
    },
  }
}

export type Indexer = ReturnType<typeof createIndexer>
