import type { HitLog } from './hits.ts'
import type { Db } from './db.ts'
import type { Embedder, VectorCache } from './embedder.ts'
import type { PathResolver, Workspace } from './paths.ts'
import type { Scoring } from './scoring.ts'
import type { Telemetry } from './telemetry.ts'
import type { Vault } from './vault.ts'

/**
 * What every feature of the engine is built over: the database, the clock, the model, and the
 * hooks that tell background work what was written. `createEngine` makes one per engine.
 */
export interface EngineContext {
  db: Db
  now: () => Date
  /** Moves `now` past `at` (see `diffSince`); `now` never runs back. */
  cutAt: (at: Date) => void
  /**
   * When the earliest engine call still running began (by `now`), or null: what it writes is
   * dated then or later, and is not yet committed.
   */
  earliestCall: () => number | null
  embedder: Embedder | null
  /** True while a model given as a promise has not settled: a vector search then fails as MODEL_LOADING. */
  embedderLoading: boolean
  dedupThreshold: number
  telemetry: Telemetry
  workspace: Workspace
  resolvePath: PathResolver | undefined
  /** The vectors of recent queries and memories, so a text asked about again is not embedded again. */
  vectors: VectorCache
  scoring: Scoring
  tokenCounter: ((text: string) => number) | null
  /** Tells the background indexer that rows may need vectors: a flag and a timer, no query. */
  wrote: () => void
  /** Tells the planner-statistics keeper how many rows a write changed (no query). */
  changed: (rows: number) => void
  /** Awaited by planned reads (search, context): refreshes stale planner statistics first. */
  beforeRead: () => Promise<void>
  /** When retrievals last returned each conversation (for `archives.create`); kept in memory. */
  hits: HitLog
  /** Seals `high` content at rest, and opens it for reads (src/core/vault.ts). */
  vault: Vault
}
