import { createChanges } from './changes.ts'
import { createConversationGraph } from './conversations.ts'
import type { Db } from './db.ts'
import { withMemoryErrors } from './db-errors.ts'
import { createDocuments } from './documents.ts'
import type { Embedder } from './embedder.ts'
import { entityGraphApi } from './entity-graph.ts'
import { createEvents } from './events.ts'
import { createForget } from './forget.ts'
import { createGraph } from './graph.ts'
import { kvApi } from './kv.ts'
import { memoriesApi } from './memories.ts'
import { normalizeWorkspace, type Workspace } from './paths.ts'
import { rebuildMissingChunks } from './derived.ts'
import { createPortable } from './portable.ts'
import { migrate } from './schema/migrations.ts'
import { createStats } from './stats.ts'
import { createTelemetry, type Telemetry, telemetryApi } from './telemetry.ts'
import { callTool, type ToolIdentity } from './tools.ts'
import { createTurns } from './turns.ts'

export interface EngineOptions {
  db: Db
  /** Clock for created_at; tests pin it for determinism. */
  now?: () => Date
  /** Embeds memories and queries; without one, dedup is exact-text only and recall is keyword only. */
  embedder?: Embedder
  /** Cosine similarity at or above which a new memory supersedes an existing one (default 0.85). */
  dedupThreshold?: number
  /**
   * How document paths are identified: `{ mode: 'local', root }` stores them relative to an
   * absolute project root; `{ mode: 'global' }` (the default) stores absolute paths.
   */
  workspace?: Workspace
}

export interface EngineContext {
  db: Db
  now: () => Date
  embedder: Embedder | null
  dedupThreshold: number
  telemetry: Telemetry
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
  const now = options.now ?? (() => new Date())
  const ctx: EngineContext = {
    db: options.db,
    now,
    embedder: options.embedder ?? null,
    dedupThreshold: options.dedupThreshold ?? 0.85,
    telemetry: createTelemetry(now),
    workspace: normalizeWorkspace(options.workspace),
  }
  const schemaVersion = await migrate(ctx.db)
  const { remember, recall, memories } = memoriesApi(ctx)

  // The event log, turns, documents and their graph reads: whatever escapes them is a MemoryError.
  const log = withMemoryErrors({
    /** The workspace this engine resolves document paths in. */
    workspace(): Promise<Workspace> {
      return Promise.resolve({ ...ctx.workspace })
    },
    ...createEvents(ctx),
    ...createTurns(ctx),
    ...createDocuments(ctx),
    ...createForget(ctx),
    ...createChanges(ctx),
    ...createStats(ctx),
    ...createPortable(ctx, schemaVersion, rebuildMissingChunks),
  })
  const conversationGraph = withMemoryErrors({ ...createGraph(ctx), ...createConversationGraph(ctx) })

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
    ...log,
    remember,
    recall,
    memories,
    kv: kvApi(ctx),
    graph: { ...entityGraphApi(ctx), ...conversationGraph },
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
