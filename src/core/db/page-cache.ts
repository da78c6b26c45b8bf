import type { Db } from '../kernel/db.ts'
import { MemoryError } from '../kernel/errors.ts'

/**
 * Postgres' buffer pool for a memory: the table and index pages kept in memory. Pages outside
 * it are copied in from the file system on every read, so once a memory outgrows the pool its
 * searches slow down. The pool is fixed when the memory opens; the statistics refresh raises
 * the size the next open gets as the memory grows.
 */

/**
 * The buffer pool (MiB) a memory opens with unless it grew. Postgres clears the whole pool
 * when it starts, so a larger one costs every open: about 0.24 s more at 128 MiB than at 64 in
 * Node (bench/HISTORY.md, "The page cache"), while a 10,000-event memory searches as fast
 * with 64. New memories get it from their template (`buildTemplate`); one made before, or by
 * initdb (no template), opens with Postgres' 128 until its first statistics refresh (`growCache`).
 */
export const DEFAULT_CACHE_MB = 64
/**
 * The smallest pool accepted: 512 pages, room for the pages one statement pins at once. Small
 * memories that open often (tests, short-lived processes) open faster with it.
 */
export const MIN_CACHE_MB = 4
/** A quarter of the 2 GiB WASM heap, which also holds the data files (in memory or OPFS). */
export const MAX_CACHE_MB = 512
/** Steps in which the engine grows the pool. */
const CACHE_STEP_MB = 64

/**
 * The buffer pool for a memory whose tables and indexes take `bytes`: half of them, in steps
 * of 64 MiB, from `DEFAULT_CACHE_MB` to `MAX_CACHE_MB`. Search and context touch the indexes
 * and a share of the rows; pages outside the pool are copied in from the file system on every
 * read.
 *
 * @example
 * cacheFor(800 * 2 ** 20) // → 448
 */
export function cacheFor(bytes: number): number {
  const half = bytes / 2 / 2 ** 20
  return Math.min(MAX_CACHE_MB, Math.max(DEFAULT_CACHE_MB, Math.ceil(half / CACHE_STEP_MB) * CACHE_STEP_MB))
}

/** `cacheMB` when it is a pool size Engram accepts (`MIN_CACHE_MB` to `MAX_CACHE_MB`); else `INVALID_INPUT`. */
export function checkCacheMB(cacheMB: number): number {
  if (!Number.isInteger(cacheMB) || cacheMB < MIN_CACHE_MB || cacheMB > MAX_CACHE_MB) {
    throw new MemoryError('INVALID_INPUT', `cacheMB must be a whole number of MiB from ${MIN_CACHE_MB} to ${MAX_CACHE_MB}; got ${String(cacheMB)}`)
  }
  return cacheMB
}

/** Sets the pool a memory opens with next time (`ALTER SYSTEM`: it lives in the data directory). */
export async function setCache(db: Db, cacheMB: number): Promise<void> {
  checkCacheMB(cacheMB)
  await db.exec(`ALTER SYSTEM SET shared_buffers = '${cacheMB}MB'`)
}

/**
 * Raises the buffer pool the memory opens with next time to `cacheFor` its size, when that is
 * more than it has (`ALTER SYSTEM`, so the setting lives in the data directory and moves with
 * it; a `cacheMB` given at open still wins). Never lowers a pool it set; a memory with none
 * set (Postgres' default of 128 MiB) gets `cacheFor` its size, `DEFAULT_CACHE_MB` if small.
 * Returns the pool set, or null. `rule` maps the database's size in bytes to MiB (`cacheFor`).
 */
export async function growCache(db: Db, rule: (bytes: number) => number = cacheFor): Promise<number | null> {
  const { rows } = await db.query<{ bytes: number; configured: number | null }>(
    `SELECT pg_database_size(current_database())::float8 AS bytes,
            (SELECT max(pg_size_bytes(setting)::float8 / 2 ^ 20) FROM pg_file_settings
              WHERE name = 'shared_buffers' AND sourcefile LIKE '%postgresql.auto.conf') AS configured`,
  )
  const r = rows[0]
  if (!r) return null
  const want = rule(r.bytes)
  // Compared with what the next open would get, not with this open's pool (a `cacheMB` given now).
  if (r.configured !== null && want <= r.configured) return null
  await setCache(db, want)
  return want
}
