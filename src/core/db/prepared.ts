import { parse, protocol } from '@electric-sql/pglite'
import type { Db, QueryOptions, QueryResult, Queryable } from '../kernel/db.ts'

/**
 * Prepared statements for the engine's frequent statements.
 *
 * PGlite's `query` sends every statement unnamed: each call parses and analyses it again and
 * makes six trips into the WASM backend (parse, describe, bind, describe, execute, sync). A
 * statement run with `{ prepare: true }` inside a transaction is parsed once per database
 * under a name of its own; later calls bind and execute it in one trip. The write path's
 * fixed inserts and key lookups (`recordTurn`, `record`, the document observer) may then get
 * a generic plan after five runs (`plan_cache_mode` auto); a search sets
 * `plan_cache_mode = force_custom_plan` for its own statement, so it is still planned for
 * its own values every time, and `force_generic_plan` for the key look-ups around it, which
 * the automatic choice kept planning anew (`planStatements`). At most `MAX_PREPARED`
 * statements are kept per database.
 *
 * Prepared statements outlive a rollback and belong to the connection; the engine owns it,
 * so nothing else may `DEALLOCATE` them. A database that is not a PGlite (a PGliteWorker, an
 * adapter) runs such statements like any other.
 */
export function withPreparedStatements(db: Db): Db {
  if (!isProtocolDb(db)) return db
  const backend = db
  return {
    query: (sql, params, options) => backend.query(sql, params, options),
    exec: (sql) => backend.exec(sql),
    transaction: (fn) => backend.transaction((tx) => fn(preparingQueries(backend, tx))),
  }
}

/**
 * `tx` (a transaction of `db`) with `{ prepare: true }` statements run prepared. For wrappers
 * of a PGlite such as `durableDb`, which hand their own transaction to the engine.
 */
export function preparingQueries(db: Db, tx: Queryable): Queryable {
  if (!isProtocolDb(db)) return tx
  return {
    query: <T>(sql: string, params?: unknown[], options?: QueryOptions) =>
      options?.prepare === true
        ? preparedQuery<T>(db, sql, params ?? [], options)
        : tx.query<T>(sql, params, options),
    exec: (sql) => tx.exec(sql),
  }
}

/**
 * The statement that sets how the statements run after it in the transaction are planned:
 * `custom` for each call's own values, `generic` once for all calls, `default` as Postgres
 * chooses (a generic plan after five runs when it looks as cheap).
 */
export function planStatements(mode: 'custom' | 'generic' | 'default'): string {
  return mode === 'default' ? 'SET LOCAL plan_cache_mode TO DEFAULT' : `SET LOCAL plan_cache_mode = force_${mode}_plan`
}

/**
 * Most statements kept prepared per database. A search's text varies with its options and
 * its number of terms; past this bound the least recently used statement is closed.
 */
export const MAX_PREPARED = 64

type Messages = Parameters<typeof parse.parseResults>[0]
type Parsers = Parameters<typeof parse.parseResults>[1]

/** The part of PGlite a prepared statement needs, beyond `Db`. */
interface ProtocolDb extends Db {
  runExclusive<T>(fn: () => Promise<T>): Promise<T>
  execProtocolStream(message: Uint8Array, options: { syncToFs?: boolean }): Promise<Messages>
  serializers: Record<number, (value: unknown) => unknown>
  parsers: Parsers
}

function isProtocolDb(db: Db): db is ProtocolDb {
  const d = db as Partial<ProtocolDb>
  return (
    typeof d.runExclusive === 'function' &&
    typeof d.execProtocolStream === 'function' &&
    typeof d.serializers === 'object' &&
    typeof d.parsers === 'object'
  )
}

interface Statement {
  name: string
  /** Parameter type oids, as the server inferred them. */
  types: number[]
}

/** A database's statements by text, least recently used first, and the last name given. */
interface Statements {
  byText: Map<string, Statement>
  named: number
}

const prepared = new WeakMap<ProtocolDb, Statements>()

function statementsOf(db: ProtocolDb): Statements {
  let statements = prepared.get(db)
  if (!statements) prepared.set(db, (statements = { byText: new Map<string, Statement>(), named: 0 }))
  return statements
}

/**
 * Forgets the statements prepared on `db`, once `DISCARD ALL` has closed them in the backend:
 * a connection handed to a new engine then prepares its statements afresh.
 */
export function forgetPreparedStatements(db: Db): void {
  if (isProtocolDb(db)) prepared.delete(db)
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/**
 * Runs `sql` as a named statement, parsing it first if this database has not yet. Called only
 * inside a transaction: PGlite's query lock (`runExclusive`) orders it with the transaction's
 * other statements, and the commit writes it to storage, as for `tx.query`.
 */
async function preparedQuery<T>(
  db: ProtocolDb,
  sql: string,
  params: unknown[],
  options: QueryOptions,
): Promise<QueryResult<T>> {
  const { serialize } = protocol
  return db.runExclusive(async () => {
    const statements = statementsOf(db)
    let statement = statements.byText.get(sql)
    if (statement) {
      // Most recently used last.
      statements.byText.delete(sql)
      statements.byText.set(sql, statement)
    } else {
      const name = `engram_${++statements.named}`
      const closing: Uint8Array[] = []
      if (statements.byText.size >= MAX_PREPARED) {
        const [oldest] = statements.byText
        if (oldest) {
          statements.byText.delete(oldest[0])
          closing.push(serialize.close({ type: 'S', name: oldest[1].name }))
        }
      }
      const described = await db.execProtocolStream(
        concat([
          ...closing,
          serialize.parse({ name, text: sql }),
          serialize.describe({ type: 'S', name }),
          serialize.sync(),
        ]),
        { syncToFs: false },
      )
      statement = { name, types: parse.parseDescribeStatementResults(described) }
      statements.byText.set(sql, statement)
    }
    const { types } = statement
    // As PGlite's own query does: the serializer for the inferred type, else the text form.
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null
      const type = types[i] ?? 0
      const serializer = options.serializers?.[type] ?? db.serializers[type]
      return (serializer ? serializer(value) : (value as { toString(): string }).toString()) as string | Uint8Array
    })
    const messages = await db.execProtocolStream(
      concat([
        serialize.bind({ statement: statement.name, values }),
        serialize.describe({ type: 'P' }),
        serialize.execute({}),
        serialize.sync(),
      ]),
      { syncToFs: false },
    )
    const [result] = parse.parseResults(
      messages,
      db.parsers,
      options.parsers ? { parsers: options.parsers } : undefined,
    )
    const rows = (result?.rows ?? []) as T[]
    return { rows, ...(result?.affectedRows === undefined ? {} : { affectedRows: result.affectedRows }) }
  })
}
