import { types } from '@electric-sql/pglite'
import type pg from 'pg'
import type { Client, PoolClient, QueryConfig } from 'pg'
import type { Db, QueryOptions, QueryResult, Queryable } from '../core/kernel/db.ts'
import type { WriteLock } from '../core/kernel/write-turns.ts'
import { MemoryError } from '../core/kernel/errors.ts'
import { parseTimestamptz } from '../runtime/pglite.ts'

/**
 * The engine over a PostgreSQL server, through node-postgres.
 *
 * A memory holds one connection for its statements and runs them one at a time, as it does on
 * PGlite: a transaction has the connection to itself. Several processes may open the same
 * database: their write calls take turns (src/core/kernel/write-turns.ts) under an advisory lock
 * that a second connection holds, so each turn sees the database as a lone writer would, and
 * reads go on meanwhile. The lock ends with its connection, so a process that dies in its turn
 * frees the database at once.
 *
 * Values cross as PGlite sends and reads them: each parameter is written by its type, which the
 * server tells once per statement text, and each column is read by PGlite's parsers. So the
 * engine sees the same values on both backends.
 */
export interface ServerDatabase extends Db {
  /** Whether the memory holds vectors (`hasVectors`): without pgvector it is keyword-only. */
  readonly vectors: boolean
  /** The lock that write turns take, shared with every process on this database. */
  readonly writeLock: WriteLock
  /** Ends the connections (and so the lock); connections from a pool go back to it. */
  close(): Promise<void>
}

/** A connection string (`postgres://user:pass@host:5432/db`) or a node-postgres `Pool`. */
export type PostgresTarget = string | PostgresPool

/** The part of a node-postgres `Pool` a memory uses (typed here, so apps without `pg` still compile). */
export interface PostgresPool {
  connect(): Promise<unknown>
}

/** The key of the advisory lock that write turns take (`pg_advisory_lock`). */
const WRITE_KEY = 0x656e6772 // "engr"

/** Statement texts whose parameter types are remembered; past this, the oldest is dropped. */
const MAX_DESCRIBED = 512

/** The head of a `CREATE TEMP TABLE name [ON COMMIT DROP] AS query` statement. */
const CREATE_TABLE_AS = /^\s*CREATE\s+TEMP(?:ORARY)?\s+TABLE\s+\w+\s+(?:ON\s+COMMIT\s+DROP\s+)?AS\s/i

type Serializer = (value: unknown) => string | Uint8Array
type Parser = (text: string, typeId?: number) => unknown

export async function openServerDatabase(target: PostgresTarget): Promise<ServerDatabase> {
  const client = await connect(target)
  let locking: Connection | undefined
  try {
    await client.query(`SET TIME ZONE 'UTC'`)
    locking = await connect(target)
    const lock = lockOn(locking)
    const db = await serverDb(client)
    return {
      ...db,
      writeLock: lock,
      close: async () => {
        await db.close()
        await lock.close()
      },
    }
  } catch (error) {
    await release(client, error)
    if (locking) await release(locking, error)
    throw error
  }
}

type Connection = Client | PoolClient

async function connect(target: PostgresTarget): Promise<Connection> {
  try {
    if (typeof target !== 'string') return (await target.connect()) as PoolClient
    const pg = await loadDriver()
    const client = new pg.Client({ connectionString: target })
    await client.connect()
    return client
  } catch (error) {
    if (MemoryError.is(error)) throw error
    throw new MemoryError('STORAGE_UNAVAILABLE', `Could not connect to PostgreSQL: ${(error as Error).message}`, { cause: error })
  }
}

async function loadDriver(): Promise<typeof pg> {
  try {
    return (await import('pg')).default
  } catch (cause) {
    throw new MemoryError('NOT_SUPPORTED', 'openMemory({ postgres }) needs the "pg" package: npm install pg', { cause })
  }
}

/**
 * Ends the connection, or gives a pool's back as it came: `DISCARD ALL` drops the lock and the
 * time zone this memory set on it. One that fails that, or any other error, is destroyed.
 */
async function release(client: Connection, error?: unknown): Promise<void> {
  if (!('release' in client)) {
    await client.end().catch(() => {})
    return
  }
  const failed = error ?? (await client.query('DISCARD ALL').then(() => undefined, (cause: unknown) => cause))
  client.release(failed instanceof Error ? failed : failed === undefined ? undefined : true)
}

async function serverDb(client: Connection): Promise<Omit<ServerDatabase, 'writeLock'>> {
  const { serializers, parsers } = await typeHandlers(client)
  const described = new Map<string, number[]>()
  let closed = false
  // A lost connection fails every later call.
  let lost: MemoryError | undefined
  const unwatch = watchLoss(client, (error) => (lost = error))
  const whileOpen = <T>(fn: () => Promise<T>) => async () => {
    if (closed) throw new MemoryError('CLOSED', 'This memory is closed.')
    if (lost) throw lost
    try {
      return await fn()
    } catch (error) {
      // A call cut short by the lost connection says so, not what the driver threw.
      throw lost ?? error
    }
  }
  // One statement or transaction at a time, in call order, as PGlite runs them; and inside a
  // transaction one statement at a time, as the engine may issue several at once.
  const exclusive = queue()
  const inTransaction = queue()
  const paramTypes = async (sql: string): Promise<number[]> => {
    const known = described.get(sql)
    if (known) return known
    // The server's reading of each parameter's type: the statement prepared, asked, dropped.
    // `PREPARE` takes no `CREATE TABLE … AS`: its query has the parameters.
    await client.query(`PREPARE engram_describe AS ${sql.replace(CREATE_TABLE_AS, '')}`)
    try {
      const { rows } = await client.query<{ types: number[] }>(
        `SELECT parameter_types::oid[] AS types FROM pg_prepared_statements WHERE name = 'engram_describe'`,
      )
      const oids = (rows[0]?.types ?? []).map(Number)
      if (described.size >= MAX_DESCRIBED) described.delete(described.keys().next().value as string)
      described.set(sql, oids)
      return oids
    } finally {
      await client.query('DEALLOCATE engram_describe')
    }
  }
  const run = async <T>(sql: string, params: unknown[] = [], options?: QueryOptions): Promise<QueryResult<T>> => {
    const oids = params.length === 0 ? [] : await paramTypes(sql)
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null
      const oid = oids[i] ?? 0
      const serialize = options?.serializers?.[oid] ?? serializers[oid]
      // PGlite writes a value of a type it has no serializer for as its string form.
      return serialize ? serialize(value) : (value as { toString(): string }).toString()
    })
    const parse = (oid: number) => options?.parsers?.[oid] ?? parsers[oid]
    const config: QueryConfig = {
      text: sql,
      // node-postgres sends a Uint8Array (a binary vector) as binary, the rest as text.
      values,
      types: {
        getTypeParser: ((oid: number) => {
          const parser = parse(oid)
          return parser ? (text: string) => parser(text, oid) : (text: string) => text
        }) as never,
      },
    }
    const result = await client.query(config)
    return { rows: result.rows as T[], ...(result.rowCount === null ? {} : { affectedRows: result.rowCount }) }
  }
  const exec = (sql: string) => client.query(sql)
  const tx: Queryable = {
    query: (sql, params, options) => inTransaction(() => run(sql, params, options)),
    exec: (sql) => inTransaction(() => exec(sql)),
  }
  return {
    vectors: await hasVectors(client),
    query: (sql, params, options) => exclusive(whileOpen(() => run(sql, params, options))),
    exec: (sql) => exclusive(whileOpen(() => exec(sql))),
    transaction: (fn) =>
      exclusive(whileOpen(async () => {
        await client.query('BEGIN')
        try {
          const result = await fn(tx)
          await client.query('COMMIT')
          return result
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {})
          throw error
        }
      })),
    close: async () => {
      if (closed) return
      await exclusive(async () => {
        closed = true
      })
      unwatch()
      await release(client)
    },
  }
}

/**
 * The write lock, held by its own connection so that reads go on while a process waits for its
 * turn. The writers' clock is a row of `writer_clock`, once the migrations have made it.
 */
function lockOn(client: Connection): WriteLock & { close(): Promise<void> } {
  let closed = false
  let ended = false
  let lost: MemoryError | undefined
  let clockMade = false
  const unwatch = watchLoss(client, (error) => (lost = error))
  const usable = () => {
    if (closed) throw new MemoryError('CLOSED', 'This memory is closed.')
    if (lost) throw lost
  }
  // One round trip each way: the statements of one simple query each read the database afresh,
  // so the clock is read once the lock is held. Until the table is seen, it is looked for.
  const readClock = 'SELECT (extract(epoch FROM at) * 1000)::float8 AS ms FROM writer_clock'
  const lookForClock = `SELECT to_regclass('writer_clock') IS NOT NULL AS made`
  return {
    acquire: async () => {
      usable()
      try {
        const results = (await client.query(`SELECT pg_advisory_lock(${WRITE_KEY}); ${clockMade ? readClock : lookForClock}`)) as unknown as pg.QueryResult[]
        const row = results[1]?.rows[0] as { ms?: number | null; made?: boolean } | undefined
        if (clockMade) return row?.ms ?? null
        clockMade = row?.made === true
        return clockMade ? ((await client.query<{ ms: number | null }>(readClock)).rows[0]?.ms ?? null) : null
      } catch (error) {
        throw lost ?? error
      }
    },
    release: async (clock) => {
      // A clock given before the migrations made the table is not stored: the next turn reads none.
      // The clock commits before the lock is freed: the statements of one simple query share one
      // transaction unless it is spelled out, and an unlock takes effect at once.
      const store =
        clock !== null && clockMade && Number.isFinite(clock)
          ? `BEGIN; INSERT INTO writer_clock (at) VALUES (to_timestamp(${clock} / 1000.0))
             ON CONFLICT (id) DO UPDATE SET at = greatest(writer_clock.at, excluded.at); COMMIT; `
          : ''
      try {
        await client.query(`${store}SELECT pg_advisory_unlock(${WRITE_KEY})`)
      } catch (error) {
        // A lock that could not be freed must not stay held: the connection ends, and the lock with it.
        lost ??= new MemoryError('STORAGE_UNAVAILABLE', `The write lock could not be freed: ${(error as Error).message}`, { cause: error })
        ended = true
        await release(client, error)
        throw lost
      }
    },
    close: async () => {
      if (closed) return
      closed = true
      if (ended) return
      unwatch()
      await release(client, lost)
    },
  }
}

/**
 * Calls `lost` when the connection fails (node-postgres reports it as an event). Returns the
 * watch's end, for a connection given back to its pool: the next memory there watches its own.
 */
function watchLoss(client: Connection, lost: (error: MemoryError) => void): () => void {
  const listener = (cause: Error) => lost(new MemoryError('STORAGE_UNAVAILABLE', `The connection to PostgreSQL was lost: ${cause.message}`, { cause }))
  client.on('error', listener)
  return () => client.off('error', listener)
}

/** Runs the functions given to it one at a time, in call order. */
function queue(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve()
  return (fn) => {
    const next = tail.then(fn, fn)
    tail = next.catch(() => {})
    return next
  }
}

/**
 * PGlite's serializers and parsers by type oid, with those of the server's array types, which
 * PGlite also derives from the element types at start.
 */
async function typeHandlers(client: Connection): Promise<{ serializers: Record<number, Serializer>; parsers: Record<number, Parser> }> {
  const serializers: Record<number, Serializer> = { ...(types.serializers as Record<number, Serializer>) }
  const parsers: Record<number, Parser> = { ...(types.parsers as Record<number, Parser>), [types.TIMESTAMPTZ]: parseTimestamptz }
  const { rows } = await client.query<{ oid: number; typarray: number }>(
    `SELECT b.oid::int AS oid, b.typarray::int AS typarray
     FROM pg_catalog.pg_type a JOIN pg_catalog.pg_type b ON b.oid = a.typelem
     WHERE a.typcategory = 'A' GROUP BY b.oid, b.typarray`,
  )
  for (const { oid, typarray } of rows) {
    serializers[typarray] = (value) => types.arraySerializer(value, serializers[oid] as never, typarray)
    parsers[typarray] = (text) => types.arrayParser(text, parsers[oid] as never, typarray)
  }
  return { serializers, parsers }
}

/**
 * Whether the memory holds vectors: pgvector is installed in its database, or, in a database
 * that is not a memory yet, the server has it to install. A memory made without it keeps its
 * stand-in type (schema/0001-base.ts), also once the server gets pgvector.
 */
async function hasVectors(client: Connection): Promise<boolean> {
  const { rows } = await client.query<{ vectors: boolean }>(
    `SELECT CASE WHEN to_regtype('vector') IS NULL
                 THEN EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')
                 ELSE EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') END AS vectors`,
  )
  return rows[0]?.vectors === true
}
