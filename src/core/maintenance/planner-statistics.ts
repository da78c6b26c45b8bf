import type { Backend, Db } from '../kernel/db.ts'
import { type IndexingPause, otherModel, untilPause } from './indexer.ts'
import { growCache } from '../db/page-cache.ts'
import { ALL_CHUNKS_SQL, payVectorDebt } from '../db/vectors.ts'

/**
 * The tables whose planner statistics search, context and graph reads depend on. Postgres
 * picks join orders and indexes from these (row counts, common values, null fractions).
 */
export const ANALYZED_TABLES = [
  'events',
  'chunks',
  'edges',
  'doc_versions',
  'documents',
  'memories',
  'relations',
  'memory_contexts',
  'kv',
  'nodes',
] as const

/** Rows changed before a refresh is considered, however small the memory. */
export const MIN_REFRESH_ROWS = 500
/** …and the share of the memory's chunks that must have changed since the last refresh. */
const CHANGED_SHARE = 0.1

/** Rows changed since the last refresh (of a table of `tuples` rows then) that make the next one due. */
const refreshThreshold = (tuples: number) => Math.max(MIN_REFRESH_ROWS, tuples * CHANGED_SHARE)

/**
 * How many thresholds of change make a read refresh first (so does a memory that has more
 * than doubled, or was stale at its open). Below it a read goes on, and the refresh waits for
 * the next pause (`maxWaitMs` at most): under steady writes, a search in front of each
 * refresh waited for all of it.
 */
export const READ_REFRESH_THRESHOLDS = 4

export interface StatisticsOptions {
  /** 'auto' refreshes in the background after writes; 'manual' only on `refreshStatistics()`. */
  mode: 'auto' | 'manual'
  /** Reports a failed background refresh (it is retried after the next writes). */
  onError?: (error: unknown) => void
  /**
   * How a due refresh waits for a pause in the writes (the engine's `indexingPause`): until
   * none has come for `quietMs`, `maxWaitMs` at most. Without it, on the next macrotask.
   */
  pause?: IndexingPause
  /** A server (`postgres`) checkpoints and sizes its buffer pool itself: the refresh leaves both to it. */
  backend?: Backend
}

/**
 * Keeps the query planner's statistics current and the tables vacuumed. PGlite runs no
 * autovacuum daemon, so a table is vacuumed and analysed only when someone asks: without
 * statistics the planner takes a scope filter that matches every row for a selective one and
 * walks thousands of rows in nested loops.
 *
 * Writes report how many rows they changed (`changed(n)`, no query). At the next pause the
 * terms of the chunks they wrote are counted into `term_stats` (`engram_keyword_stats_apply`,
 * one statement; schema/0009-keyword-pending.ts), on a timer of its own. Once the changes reach
 * a tenth of the memory (and at least 500 rows) a `VACUUM` and an `ANALYZE` of each of the
 * engine's tables, a `CHECKPOINT` (PGlite has no checkpointer either, so the write-ahead
 * log would only grow) and `growCache` run off the write's path, once the writes pause
 * (`pause`): a write or search that comes while they run waits for the statement in flight.
 * A search or context read runs a due refresh first when the statistics are far off
 * (`READ_REFRESH_THRESHOLDS`). A
 * memory opened from files that were never analysed (an older build, a fresh import, a
 * session closed before its writes paused), or whose statistics no longer describe its chunks,
 * is analysed at the first pause after opening.
 */
/**
 * Rows written since the waiting chunks' terms were counted at which a search counts them
 * first (`engram_keyword_stats_apply`, once) instead of reading them itself, as each search
 * does below it.
 */
export const KEYWORDS_BEFORE_READ = 256

export function createStatistics(db: Db, options: StatisticsOptions) {
  let pending = 0
  /** Writes since the waiting chunks' terms were last counted (numbered past `keyword_counted`). */
  let keywordsWaiting = false
  /** Rows those writes changed: about how many chunks a search would count on its own. */
  let keywordRows = 0
  /** Chunks at the last refresh; null until known. */
  let baseline: number | null = null
  /** The files opened held statistics that do not describe them (`dueSinceOpen`), until a refresh. */
  let staleAtOpen = false
  let running: Promise<void> | undefined
  /** The waiting chunks' terms being counted at a pause (`applyKeywords`). */
  let applying: Promise<void> | undefined
  let stopped = false
  /** When the last write was reported (`performance.now()`). */
  let lastWrite = -Infinity
  const pause = options.pause ?? { quietMs: 0, maxWaitMs: 0 }

  const tables = async (): Promise<string[]> => {
    const { rows } = await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c
       WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND c.relname = ANY($1::text[])`,
      [ANALYZED_TABLES],
    )
    return rows.map((r) => r.name)
  }

  async function refresh(): Promise<void> {
    if (running) return running
    const changedBefore = pending
    running = (async () => {
      await applying?.catch(() => {})
      keywordsWaiting = false
      keywordRows = 0
      // The waiting chunks' terms first, so they are in term_stats when it is analysed.
      await db.exec('SELECT engram_keyword_stats_apply()')
      const names = await tables()
      // Many vectors deleted since the chunks' HNSW index was built: building it again costs
      // less than the VACUUM below repairing it. A build that fails (the old index stays, with
      // the count) is reported, and the vacuum still runs.
      await payVectorDebt(db).catch((error: unknown) => options.onError?.(error))
      // No autovacuum either: the indexer's vector writes leave a dead version of every chunk,
      // which every read then steps over. One table per statement, so a write waits for one
      // table's vacuum at most.
      for (const name of names) await db.exec(`VACUUM "${name}"`)
      // One table per statement too: a search that comes meanwhile waits for one table's
      // sample, not for all of them (at 4,000 events, 40 ms against 130).
      for (const name of names) await db.exec(`ANALYZE "${name}"`)
      if (options.backend !== 'postgres') {
        // No checkpointer runs in PGlite: without this the write-ahead log only grows.
        await db.exec('CHECKPOINT')
        await growCache(db)
      }
      const { rows } = await db.query<{ n: number }>(
        `SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE oid = 'chunks'::regclass`,
      )
      baseline = rows[0]?.n ?? 0
      pending = Math.max(0, pending - changedBefore)
      staleAtOpen = false
    })().finally(() => {
      running = undefined
    })
    return running
  }

  function due(): boolean {
    if (baseline === null) return pending > 0
    return pending >= refreshThreshold(baseline)
  }

  /** Due, and so far off that a read should not be planned on the statistics as they are. */
  function farOff(): boolean {
    if (!due()) return false
    if (staleAtOpen || baseline === null) return true
    return pending >= Math.min(baseline, READ_REFRESH_THRESHOLDS * refreshThreshold(baseline))
  }

  /** Counts the waiting chunks' terms into term_stats (one statement; none waiting: no rows). */
  function applyKeywords(): Promise<void> {
    // A refresh counts them first.
    if (running) return running
    if (applying) return applying
    keywordsWaiting = false
    keywordRows = 0
    applying = db
      .exec('SELECT engram_keyword_stats_apply()')
      .then(
        () => {},
        (error: unknown) => {
          keywordsWaiting = true
          throw error
        },
      )
      .finally(() => {
        applying = undefined
      })
    return applying
  }

  /** Runs `job` once the writes pause (`pause`), through `slot`, the job's timer. */
  function atPause(slot: TimerSlot, job: () => Promise<void>, then: () => void): void {
    const began = performance.now()
    const wait = (ms: number) => {
      slot.timer = setTimeout(() => {
        slot.timer = undefined
        if (stopped) return
        const more = untilPause(pause, lastWrite, began)
        if (more > 0) return wait(more)
        job().then(then, (error: unknown) => options.onError?.(error))
      }, Math.max(0, ms))
    }
    wait(untilPause(pause, lastWrite, began))
  }

  const refreshSlot: TimerSlot = { timer: undefined }
  const keywordSlot: TimerSlot = { timer: undefined }

  function schedule(): void {
    if (options.mode !== 'auto' || stopped || refreshSlot.timer || running || !due()) return
    atPause(refreshSlot, refresh, () => {
      if (due()) schedule()
    })
  }

  /** The waiting chunks' terms are counted at the same pauses, on a timer of their own. */
  function scheduleKeywords(): void {
    if (options.mode !== 'auto' || stopped || keywordSlot.timer || applying || !keywordsWaiting) return
    atPause(keywordSlot, applyKeywords, scheduleKeywords)
  }

  /** Drift of a memory whose chunks have no column statistics: a refresh is due whatever the threshold. */
  const UNDESCRIBED = Number.MAX_SAFE_INTEGER / 2

  /** A refresh is due for `rows` changed before the open: at the first pause, or before a read. */
  function dueSinceOpen(rows: number): void {
    pending = Math.max(pending, rows)
    staleAtOpen = true
    // Counted as a write: the refresh waits for a pause after the open, not in front of the
    // first writes.
    lastWrite = performance.now()
    schedule()
  }

  /**
   * Reads what the files say. Chunks never analysed while rows exist → refresh soon. So also
   * when the statistics no longer describe the chunks: their count, or how many have a vector
   * (of `model`, the embedder's, when known), is off by as many rows as would make a refresh
   * due. That is a memory closed after writes or after its indexer ran but before the refresh
   * that followed (it waits for a pause); its planner would take the chunks with a vector for
   * almost none and rank them all exactly instead of walking the HNSW index (a search 2.7×
   * slower at 10,000 events).
   */
  async function start(model: string | null): Promise<void> {
    const { rows } = await db.query<{ tuples: number; chunks: number }>(
      `SELECT c.reltuples::float8 AS tuples, ${ALL_CHUNKS_SQL}::float8 AS chunks
       FROM pg_class c WHERE c.oid = 'chunks'::regclass`,
    )
    const row = rows[0]
    if (!row) return
    const chunks = Number(row.chunks)
    if (row.tuples >= 0) baseline = row.tuples
    if (chunks === 0) {
      baseline ??= 0
      return
    }
    if (row.tuples < 0) return dueSinceOpen(UNDESCRIBED)
    const threshold = refreshThreshold(row.tuples)
    let drift = Math.abs(chunks - row.tuples)
    if (drift < threshold) drift = await vectorDrift(model, row.tuples, threshold)
    if (drift >= threshold) dueSinceOpen(drift)
  }

  /**
   * How far the chunks with a vector of `model` (of any model when null) are from what the
   * statistics of `tuples` rows say, past `threshold` at most; `UNDESCRIBED` when there are no
   * column statistics (an index build sets the row count without analysing). Only the side
   * the statistics take for the smaller is counted (those chunks, or the ones waiting for such
   * a vector), through the partial indexes, and no further than `threshold` beyond what they say.
   */
  async function vectorDrift(model: string | null, tuples: number, threshold: number): Promise<number> {
    const { rows } = await db.query<{ null_frac: number | null; model_frac: number | null }>(
      `SELECT s.null_frac::float8 AS null_frac,
              (SELECT u.f FROM unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS u(v, f)
               WHERE u.v = $1)::float8 AS model_frac
       FROM pg_stats s WHERE s.schemaname = 'public' AND s.tablename = 'chunks' AND s.attname = 'embed_model'`,
      [model],
    )
    const stats = rows[0]
    if (!stats) return UNDESCRIBED
    const believedWith = (model === null ? 1 - Number(stats.null_frac ?? 0) : Number(stats.model_frac ?? 0)) * tuples
    const countWith = believedWith <= tuples / 2
    const believed = countWith ? believedWith : tuples - believedWith
    // $1 the model (null: any), $2 the bound.
    const side = countWith
      ? `SELECT 1 FROM chunks WHERE embedding IS NOT NULL AND ($1::text IS NULL OR embed_model = $1::text) LIMIT $2`
      : `(SELECT 1 FROM chunks WHERE embedding IS NULL LIMIT $2)
         -- Another model's vectors wait for this one's; with no model, none does.
         UNION ALL (SELECT 1 FROM chunks WHERE ${otherModel()} AND $1::text IS NOT NULL LIMIT $2)`
    const { rows: counted } = await db.query<{ n: number }>(`SELECT count(*)::float8 AS n FROM (${side}) c`, [
      model,
      Math.ceil(believed + threshold),
    ])
    return Math.abs(Number(counted[0]?.n ?? 0) - believed)
  }

  /**
   * The same check for vectors of `model` once it is known (a model that loads after the open):
   * a refresh is due when the statistics are as far from the chunks with its vectors.
   */
  async function checkModel(model: string): Promise<void> {
    if (stopped || running || baseline === null) return
    const threshold = refreshThreshold(baseline)
    const drift = await vectorDrift(model, baseline, threshold)
    if (drift >= threshold) dueSinceOpen(drift)
  }

  return {
    start,
    checkModel,
    /** Called by writes with the rows they changed; cheap (no query). */
    changed: (rows: number): void => {
      if (!(rows > 0)) return
      lastWrite = performance.now()
      pending += rows
      keywordRows += rows
      keywordsWaiting = true
      if (due()) schedule()
      scheduleKeywords()
    },
    /** Refreshes now and waits for it (after a bulk load, before measuring). */
    refresh,
    /**
     * Before a read that leans on the planner (search, context): refreshes first when the
     * statistics are far off (`READ_REFRESH_THRESHOLDS`: never analysed, or writes in a tight
     * loop never yielded to the refresh's timer), so the read is planned on current ones.
     * A read otherwise goes on beside a refresh in flight, between its statements.
     */
    beforeRead: async (): Promise<void> => {
      if (options.mode !== 'auto' || stopped) return
      const first = farOff()
      if (running) return first ? running.catch(() => {}) : undefined
      // Writes that never pause (several agents at once) leave many chunks waiting, and each
      // search would count their terms on its own: count them once, for every search after.
      if (keywordsWaiting && keywordRows >= KEYWORDS_BEFORE_READ) {
        clearTimeout(keywordSlot.timer)
        keywordSlot.timer = undefined
        await applyKeywords().catch((error: unknown) => options.onError?.(error))
      }
      if (!first) return
      clearTimeout(refreshSlot.timer)
      refreshSlot.timer = undefined
      await refresh().catch((error: unknown) => options.onError?.(error))
    },
    /** Cancels a scheduled refresh and waits for one in flight (before closing the database). */
    async stop(): Promise<void> {
      stopped = true
      for (const slot of [refreshSlot, keywordSlot]) {
        clearTimeout(slot.timer)
        slot.timer = undefined
      }
      await running?.catch(() => {})
      await applying?.catch(() => {})
    },
  }
}

export type Statistics = ReturnType<typeof createStatistics>

interface TimerSlot {
  timer: ReturnType<typeof setTimeout> | undefined
}
