import type { Db } from './db.ts'
import { migrate } from './schema/migrations.ts'

export interface EngineOptions {
  db: Db
  /** Clock for created_at; tests pin it for determinism. */
  now?: () => Date
}

export interface EngineContext {
  db: Db
  now: () => Date
}

export interface PingResult {
  schemaVersion: number
  postgres: string
  vector: string
}

/**
 * Builds the engine over a migrated database. The returned object is the whole API: the
 * worker exposes it through comlink, Node calls it in-process, and the client's types are
 * derived from it.
 */
export async function createEngine(options: EngineOptions) {
  const ctx: EngineContext = { db: options.db, now: options.now ?? (() => new Date()) }
  const schemaVersion = await migrate(ctx.db)

  return {
    /** Proves the database is up: versions of the schema, Postgres and pgvector. */
    async ping(): Promise<PingResult> {
      const { rows } = await ctx.db.query<{ pg: string; vec: string }>(
        `SELECT current_setting('server_version') AS pg,
                (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vec`,
      )
      const row = rows[0]
      return { schemaVersion, postgres: row?.pg ?? '', vector: row?.vec ?? '' }
    },
  }
}

export type Engine = Awaited<ReturnType<typeof createEngine>>
