import type { Db } from './db.ts'
import type { Embedder } from './embedder.ts'
import { entityGraphApi } from './entity-graph.ts'
import { kvApi } from './kv.ts'
import { memoriesApi } from './memories.ts'
import { migrate } from './schema/migrations.ts'
import { createTelemetry, type Telemetry, telemetryApi } from './telemetry.ts'
import { callTool, type ToolIdentity } from './tools.ts'

export interface EngineOptions {
  db: Db
  /** Clock for created_at; tests pin it for determinism. */
  now?: () => Date
  /** Embeds memories and queries; without one, dedup is exact-text only and recall is keyword only. */
  embedder?: Embedder
  /** Cosine similarity at or above which a new memory supersedes an existing one (default 0.85). */
  dedupThreshold?: number
}

export interface EngineContext {
  db: Db
  now: () => Date
  embedder: Embedder | null
  dedupThreshold: number
  telemetry: Telemetry
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
  const now = options.now ?? (() => new Date())
  const ctx: EngineContext = {
    db: options.db,
    now,
    embedder: options.embedder ?? null,
    dedupThreshold: options.dedupThreshold ?? 0.85,
    telemetry: createTelemetry(now),
  }
  const schemaVersion = await migrate(ctx.db)
  const { remember, recall, memories } = memoriesApi(ctx)

  const engine = {
    /** Proves the database is up: versions of the schema, Postgres and pgvector. */
    async ping(): Promise<PingResult> {
      const { rows } = await ctx.db.query<{ pg: string; vec: string }>(
        `SELECT current_setting('server_version') AS pg,
                (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vec`,
      )
      const row = rows[0]
      return { schemaVersion, postgres: row?.pg ?? '', vector: row?.vec ?? '' }
    },
    remember,
    recall,
    memories,
    kv: kvApi(ctx),
    graph: { ...entityGraphApi(ctx) },
    telemetry: telemetryApi(ctx.telemetry),
    /**
     * Runs an agent's tool call (see `openAITools()` / `anthropicTools()`) for `identity`.
     *
     * @example
     * await memory.callTool('save_memory', { content: 'User prefers tabs', category: 'preference' })
     */
    callTool(name: string, args: unknown, identity?: ToolIdentity): Promise<unknown> {
      return callTool(engine, name, args, identity)
    },
  }
  return engine
}

export type Engine = Awaited<ReturnType<typeof createEngine>>
