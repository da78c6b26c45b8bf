import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import type { Db, Queryable, QueryOptions } from '../core/kernel/db.ts'
import { MemoryError } from '../core/kernel/errors.ts'
import { checkCacheMB } from '../core/db/page-cache.ts'
import { preparingQueries } from '../core/db/prepared.ts'
import { Activity } from './activity.ts'
import { TemplateMemoryFS } from './template-files.ts'

export interface OpenPGliteOptions {
  /** `memory://`, a file path (Node), `idb://name` or `memfs2opfs://name` (browser). */
  dataDir?: string
  /** A file system instance instead of `dataDir` (the worker's OPFS storage). */
  fs?: PGliteOptions['fs']
  /** A `dumpDataDir()` tarball to start from instead of running initdb. */
  loadDataDir?: Blob
  /** PGlite's own files (`pglite.data`), read once by the caller instead of at every open. */
  fsBundle?: Blob
  /** Postgres shared buffers in MiB (`MIN_CACHE_MB` to `MAX_CACHE_MB`), for this open; see `cacheSetting`. */
  cacheMB?: number
  /** Extensions beside pgvector, e.g. Apache AGE for the Cypher graph's database. */
  extensions?: PGliteOptions['extensions']
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
 * (`withoutZeroTails`, src/browser/storage/deferred-writes.ts; src/browser/storage/idb-pages.ts).
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

const TIMESTAMPTZ_TEXT = /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?( BC)?$/

/**
 * A `timestamptz` as Postgres writes it (`2025-03-01 10:00:00.123+00`), read into a Date. The
 * platform's date parser reads that form as it likes: years 1 to 99 came back as 1950 to 2049.
 * Anything else (`infinity`) is left to it.
 */
export function parseTimestamptz(text: string): Date {
  const m = TIMESTAMPTZ_TEXT.exec(text)
  if (!m) return new Date(text)
  const [, year, month, day, hour, minute, second, fraction, sign, offsetHours, offsetMinutes, offsetSeconds, bc] = m
  const date = new Date(0)
  date.setUTCFullYear(bc ? 1 - Number(year) : Number(year), Number(month) - 1, Number(day))
  date.setUTCHours(Number(hour), Number(minute), Number(second), Number((fraction ?? '').padEnd(3, '0').slice(0, 3)))
  const offset = (Number(offsetHours) * 3600 + Number(offsetMinutes ?? 0) * 60 + Number(offsetSeconds ?? 0)) * 1000
  return new Date(date.getTime() - (sign === '+' ? offset : -offset))
}

/** The `timestamptz` type's oid. */
const TIMESTAMPTZ = 1184

/** PGlite with the extensions Engram needs, in Node or in a worker. */
export async function openPGlite(options: OpenPGliteOptions = {}): Promise<PGlite> {
  const cache = options.cacheMB === undefined ? [] : [cacheSetting(options.cacheMB)]
  const inMemory = options.fs === undefined && (options.dataDir === undefined || options.dataDir.startsWith('memory://'))
  // In memory, a template is copied in already parsed rather than unpacked by `loadDataDir`.
  const source =
    inMemory && options.loadDataDir !== undefined
      ? { fs: new TemplateMemoryFS(options.loadDataDir) }
      : {
          ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
          ...(options.fs === undefined ? {} : { fs: options.fs }),
          ...(options.loadDataDir === undefined ? {} : { loadDataDir: options.loadDataDir }),
        }
  return PGlite.create({
    ...source,
    ...(options.fsBundle === undefined ? {} : { fsBundle: options.fsBundle }),
    extensions: { vector, ...options.extensions },
    parsers: { [TIMESTAMPTZ]: parseTimestamptz },
    initDbStartParams: [...INITDB_PARAMS],
    startParams: [...PGlite.defaultStartParams, ...[...WAL_SETTINGS, ...cache].flatMap((s) => ['-c', s])],
  })
}

/**
 * Fetches and compiles PGlite's WebAssembly and reads its files, then lets go of the instance
 * without starting a database. PGlite keeps the compiled module and the fetched files per
 * worker, so the next open in this worker skips that work. A following tab does this while it
 * waits, and takes over sooner when the owner closes (docs/BENCHMARKS.md, "A following tab
 * readies PGlite while it waits"). The instance's 128 MiB heap is let go at once.
 */
export async function prewarmPGlite(): Promise<void> {
  const pg = await PGlite.create({ noInitDb: true })
  await pg.close()
}

/** A `Db` that also says how busy it is. */
export interface DurableDb extends Db {
  /** Calls queued or running, and when the last one ended. */
  readonly activity: Readonly<Activity>
  /** Why the last flush failed, while changes in the database are not yet in storage. */
  readonly unsaved: unknown
  /**
   * Refuses new calls (`CLOSED`) and waits for those already queued to finish, so that
   * closing the database after it cuts none of them short.
   */
  close(): Promise<void>
}

/**
 * SQLSTATEs of a statement refused in the read-only transaction: a write (25006), or a
 * statement that runs outside transactions only (25001: VACUUM, ALTER SYSTEM).
 */
const READ_ONLY_REFUSED = new Set(['25006', '25001'])

/**
 * The error for changes that storage could not take: `QUOTA_EXCEEDED` for a full disk,
 * `STORAGE_UNAVAILABLE` otherwise, with `details.applied` (whether this call's changes are in
 * the database) and `details.saved: false`.
 */
export function unsavedError(cause: unknown, applied: boolean): MemoryError {
  const full = (cause as { name?: unknown } | null | undefined)?.name === 'QuotaExceededError'
  const reason = full ? "the browser's storage quota is exhausted" : `storage failed (${cause instanceof Error ? cause.message : String(cause)})`
  const message = applied
    ? `This call's changes are applied in this session but could not be saved: ${reason}. Do not repeat the call: the changes are saved by the first call after space is freed, and lost if the memory closes before. Until then the memory answers reads and refuses writes.`
    : `The memory cannot save its changes: ${reason}. Nothing of this call was applied; the memory answers reads and refuses writes until space is freed (export and delete old memories, or ask for persistent storage).`
  return new MemoryError(full ? 'QUOTA_EXCEEDED' : 'STORAGE_UNAVAILABLE', message, { cause, details: { applied, saved: false } })
}

const refusedWrite = (error: unknown) => READ_ONLY_REFUSED.has(String((error as { code?: unknown } | null)?.code))

/**
 * The engine's view of a PGlite instance, with writes acknowledged only once durable.
 *
 * PGlite flushes its file system (IndexedDB, OPFS) after each statement run outside a
 * transaction, but not after COMMIT: a transaction's rows reach storage only with the next
 * statement. And a flush requested while another is pending returns at once. So every call
 * runs one at a time here (PGlite runs one at a time anyway), and a transaction returns only
 * after its own flush has completed.
 *
 * A flush that fails (a full disk) leaves the database ahead of its storage: the commit
 * cannot be taken back. The call that made it gets `unsavedError(…, applied: true)`, and from
 * then on every call first tries the flush again. While it still fails, each call runs in a
 * read-only transaction that nothing flushes: reads answer, a write is refused by Postgres
 * before it changes anything (`applied: false`). The first flush that succeeds saves the
 * waiting changes and the memory writes again. A statement run outside a transaction whose
 * flush fails is run again read-only: a read answers (nothing was changed), a write is refused,
 * and so was applied by the first run.
 */
export function durableDb(pg: PGlite): DurableDb {
  let tail: Promise<unknown> = Promise.resolve()
  const activity = new Activity()
  let unsaved: unknown
  // PGlite flushes after a statement run outside a transaction from inside `query`/`exec`: this
  // tells that flush's failure apart from the statement's own.
  let flushFailure: { error: unknown } | undefined
  // A read-only transaction changes nothing, and its BEGIN's flush (PGlite flushes after BEGIN)
  // is held back: the waiting changes have just failed to save.
  let holding = false
  const flush = pg.syncToFs.bind(pg)
  pg.syncToFs = async (...args: Parameters<PGlite['syncToFs']>) => {
    if (holding) return
    try {
      await flush(...args)
    } catch (error) {
      flushFailure = { error }
      throw error
    }
  }
  /** Saves what waits, when something does; true when the memory may write. */
  const saved = async (): Promise<boolean> => {
    if (unsaved === undefined) return true
    try {
      await flush()
      unsaved = undefined
      return true
    } catch (error) {
      unsaved = error
      return false
    }
  }
  const readOnly = async <T>(fn: (tx: Queryable) => Promise<T>, applied: boolean): Promise<T> => {
    holding = true
    try {
      return await pg.transaction(async (tx) => {
        await tx.exec('SET TRANSACTION READ ONLY')
        return fn(preparingQueries(pg, tx))
      })
    } catch (error) {
      throw refusedWrite(error) ? unsavedError(unsaved, applied) : error
    } finally {
      holding = false
    }
  }
  /** One statement outside a transaction, saved by PGlite's own flush after it. */
  const statement = async <T>(run: () => Promise<T>, again: (tx: Queryable) => Promise<T>): Promise<T> => {
    if (!(await saved())) return readOnly(again, false)
    flushFailure = undefined
    try {
      return await run()
    } catch (error) {
      const failure = flushFailure as { error: unknown } | undefined
      if (!failure) throw error
      unsaved = failure.error
      return readOnly(again, true)
    }
  }
  let closed = false
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    if (closed) return Promise.reject(new MemoryError('CLOSED', 'The memory was closed.'))
    const run = activity.track(() => tail.then(fn, fn))
    tail = run.catch(() => {})
    return run
  }
  return {
    activity,
    get unsaved() {
      return unsaved
    },
    async close() {
      closed = true
      await tail
    },
    query: <T>(sql: string, params?: unknown[], options?: QueryOptions) =>
      exclusive(() =>
        statement(
          () => pg.query<T>(sql, params, options as Parameters<PGlite['query']>[2]),
          (tx) => tx.query<T>(sql, params, options),
        ),
      ),
    exec: (sql: string) =>
      exclusive(() =>
        statement(
          () => pg.exec(sql),
          (tx) => tx.exec(sql),
        ),
      ),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      exclusive(async () => {
        if (!(await saved())) return readOnly(fn, false)
        flushFailure = undefined
        let result: T
        try {
          result = await pg.transaction((tx) => fn(preparingQueries(pg as unknown as Db, tx as unknown as Queryable)))
        } catch (error) {
          // The flush after BEGIN failed (changes kept back from before): nothing of this call ran.
          const failure = flushFailure as { error: unknown } | undefined
          if (failure?.error !== error) throw error
          unsaved = error
          return readOnly(fn, false)
        }
        try {
          await flush()
        } catch (error) {
          unsaved = error
          throw unsavedError(error, true)
        }
        return result
      }),
  }
}
