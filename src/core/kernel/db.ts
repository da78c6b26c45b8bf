/**
 * The part of PGlite the engine uses. Anything with these three methods (PGlite, a
 * PGliteWorker, a server Postgres adapter) can host the engine.
 */
export interface QueryResult<T> {
  rows: T[]
  affectedRows?: number
}

export interface QueryOptions {
  /** Per-parameter serializers keyed by type oid, e.g. binary pgvector parameters. */
  serializers?: Record<number, (value: unknown) => string | Uint8Array>
  /** Per-column parsers keyed by type oid, applied to the text form of result values. */
  parsers?: Record<number, (text: string) => unknown>
  /**
   * A statement run often: inside a transaction on PGlite it is parsed once and kept prepared
   * (src/core/db/prepared.ts). After five runs Postgres may give it a generic plan, unless
   * `plan_cache_mode = force_custom_plan` is set, as a search does for its own statements.
   */
  prepare?: boolean
}

export interface Queryable {
  query<T = Record<string, unknown>>(
    sql: string,
    params?: unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<T>>
  exec(sql: string): Promise<unknown>
}

/**
 * Inside `transaction`, use only the `tx` handed to the callback: a call on the outer `Db`
 * from inside the callback waits for the transaction to end and never returns.
 */
export interface Db extends Queryable {
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
}

/**
 * What hosts the database: PGlite in this process (or a worker), or a PostgreSQL server. A
 * server runs its own checkpoints and autovacuum and sizes its own buffer pool, so the engine
 * leaves those to it.
 */
export type Backend = 'pglite' | 'postgres'

/** Runs a data-changing statement (without its RETURNING) and counts the rows it changed. */
export async function countChanged(tx: Queryable, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(`WITH x AS (${sql} RETURNING 1) SELECT count(*)::int AS n FROM x`, params)
  return rows[0]?.n ?? 0
}
