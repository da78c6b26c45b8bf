import { createChanges } from './changes.ts'
import { createConversationGraph } from './conversations.ts'
import type { Db } from './db.ts'
import { withMemoryErrors } from './db-errors.ts'
import { createDocuments } from './documents.ts'
import { createEvents } from './events.ts'
import { createForget } from './forget.ts'
import { createGraph } from './graph.ts'
import { normalizeWorkspace, type Workspace } from './paths.ts'
import { migrate } from './schema/migrations.ts'
import { createStats } from './stats.ts'
import { createTurns } from './turns.ts'

export interface EngineOptions {
  db: Db
  /** Clock for created_at; tests pin it for determinism. */
  now?: () => Date
  /**
   * How document paths are identified: `{ mode: 'local', root }` stores them relative to an
   * absolute project root; `{ mode: 'global' }` (the default) stores absolute paths.
   */
  workspace?: Workspace
}

export interface EngineContext {
  db: Db
  now: () => Date
  workspace: Workspace
}

export interface PingResult {
  schemaVersion: number
  postgres: string
  vector: string
}

/**
 * Builds the engine over a database, migrating it first. The returned object is the whole
 * API: the worker exposes it through comlink, Node calls it in-process, and the client's
 * types are derived from it. Several engines may share one database (e.g. the same project
 * opened from two roots); each keeps its own workspace.
 *
 * @example
 * const memory = await createEngine({ db: pg, workspace: { mode: 'local', root: '/work/app' } })
 */
export async function createEngine(options: EngineOptions) {
  const ctx: EngineContext = {
    db: options.db,
    now: options.now ?? (() => new Date()),
    workspace: normalizeWorkspace(options.workspace),
  }
  const schemaVersion = await migrate(ctx.db)
  const events = createEvents(ctx)
  const documents = createDocuments(ctx)

  return withMemoryErrors({
    /** Proves the database is up: versions of the schema, Postgres and pgvector. */
    async ping(): Promise<PingResult> {
      const { rows } = await ctx.db.query<{ pg: string; vec: string }>(
        `SELECT current_setting('server_version') AS pg,
                (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vec`,
      )
      const row = rows[0]
      return { schemaVersion, postgres: row?.pg ?? '', vector: row?.vec ?? '' }
    },
    /** The workspace this engine resolves document paths in. */
    workspace(): Promise<Workspace> {
      return Promise.resolve({ ...ctx.workspace })
    },
    ...events,
    ...createTurns(ctx),
    ...documents,
    ...createForget(ctx),
    ...createChanges(ctx),
    ...createStats(ctx),
    graph: { ...createGraph(ctx), ...createConversationGraph(ctx) },
  })
}

export type Engine = Awaited<ReturnType<typeof createEngine>>
