import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import type { Db, Queryable, QueryOptions } from '../core/db.ts'
import { checkCacheMB } from '../core/page-cache.ts'
import { preparingQueries } from '../core/prepared.ts'
import { Activity } from './activity.ts'

export interface OpenPGliteOptions {
  /** `memory://`, a file path (Node), `idb://name` or `memfs2opfs://name` (browser). */
  dataDir?: string
  /** A file system instance instead of `dataDir` (the worker's OPFS storage). */
  fs?: PGliteOptions['fs']
  /** A `dumpDataDir()` tarball to start from instead of running initdb. */
  loadDataDir?: Blob
  /** Postgres shared buffers in MiB (16 to `MAX_CACHE_MB`), for this open; see `cacheSetting`. */
  cacheMB?: number
}

/**
 * The `shared_buffers` setting for a cache of `cacheMB` MiB: the table and index pages kept
 * in Postgres' buffer pool. Pages outside it are copied in from the in-memory file system on
 * every read; once a memory's working set outgrows the pool (around 100,000 events) search
 * spends much of its time there. Without `cacheMB` a memory opens with the pool its data
 * directory names: `DEFAULT_CACHE_MB`, raised by the engine as the memory grows (`growCache`).
 */
export function cacheSetting(cacheMB: number): string {
  return `shared_buffers=${checkCacheMB(cacheMB)}MB`
}

/**
 * Write-ahead log bounds. PGlite runs Postgres in single-user mode, with no checkpointer: WAL
 * segments pile up (160 MB after 1,000 turns and their vectors) until a `CHECKPOINT`, and
 * the data directory — what OPFS or IndexedDB stores and a boot reads — carries them all.
 * The engine checkpoints after each statistics refresh; these bounds make that checkpoint
 * recycle the old segments down to a few, renamed to the next segments' names, so that the
 * turns after it write into files that already exist. Postgres refuses to start when
 * `min_wal_size` is under two segments, and a memory's segment size is fixed when it is made
 * (1 MiB now, 16 before `INITDB_PARAMS`): 32 MB suits both.
 *
 * A segment made new (none left to reuse) starts as an empty file of the segment's length
 * (`wal_init_zero=off`) rather than as zeros written out. Renamed into place, it reaches the
 * storage as a whole-file write, mostly zeros, which OPFS and IndexedDB do not write
 * (`withoutZeroTails`, src/worker/deferred-writes.ts; src/worker/idb-pages.ts).
 */
export const WAL_SETTINGS = ['max_wal_size=64MB', 'min_wal_size=32MB', 'wal_init_zero=off'] as const

/**
 * initdb's parameters for a new data directory: WAL segments of 1 MiB instead of Postgres'
 * 16. IndexedDB stores a changed file whole at each flush, so with 16 MiB segments every
 * durable write there rewrote 16 MiB; and an empty memory was two-thirds WAL, all of which
 * an open reads. The size is fixed when the directory is made (`pg_control` records it), so
 * it reaches browser memories through the bundled template.
 */
export const INITDB_PARAMS = ['--wal-segsize=1'] as const

/** PGlite with the extensions Engram needs, in Node or in a worker. */
export async function openPGlite(options: OpenPGliteOptions = {}): Promise<PGlite> {
  const cache = options.cacheMB === undefined ? [] : [cacheSetting(options.cacheMB)]
  return PGlite.create({
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.fs === undefined ? {} : { fs: options.fs }),
    ...(options.loadDataDir === undefined ? {} : { loadDataDir: options.loadDataDir }),
    extensions: { vector },
    initDbStartParams: [...INITDB_PARAMS],
    startParams: [...PGlite.defaultStartParams, ...[...WAL_SETTINGS, ...cache].flatMap((s) => ['-c', s])],
  })
}

/** A `Db` that also says how busy it is. */
export interface DurableDb extends Db {
  /** Calls queued or running, and when the last one ended. */
  readonly activity: Readonly<Activity>
}

/**
 * The engine's view of a PGlite instance, with writes acknowledged only once durable.
 *
 * PGlite flushes its file system (IndexedDB, OPFS) after each statement run outside a
 * transaction, but not after COMMIT: a transaction's rows reach storage only with the next
 * statement. And a flush requested while another is pending returns at once. So every call
 * runs one at a time here (PGlite runs one at a time anyway), and a transaction returns only
 * after its own flush has completed.
 */
export function durableDb(pg: PGlite): DurableDb {
  let tail: Promise<unknown> = Promise.resolve()
  const activity = new Activity()
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = activity.track(() => tail.then(fn, fn))
    tail = run.catch(() => {})
    return run
  }
  return {
    activity,
    query: <T>(sql: string, params?: unknown[], options?: QueryOptions) =>
      exclusive(() => pg.query<T>(sql, params, options as Parameters<PGlite['query']>[2])),
    exec: (sql: string) => exclusive(() => pg.exec(sql)),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      exclusive(async () => {
        try {
          return await pg.transaction((tx) => fn(preparingQueries(pg as unknown as Db, tx as unknown as Queryable)))
        } finally {
          await pg.syncToFs()
        }
      }),
  }
}
