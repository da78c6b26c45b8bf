import type { Backend, Db, Queryable } from './db.ts'
import type { Embedder, VectorCache } from './embedder.ts'
import type { Scoring } from './scoring.ts'
import type { Telemetry } from './telemetry.ts'
import type { JsonValue } from './json.ts'

/**
 * What every feature of the engine is built over: the database, the clock, the model, and the
 * hooks that tell background work what was written. `createEngine` makes one per engine.
 */
export interface EngineContext {
  db: Db
  backend: Backend
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
  /** Seals `high` content at rest, and opens it for reads (src/core/privacy/vault.ts). */
  vault: Vault
}

/**
 * How document paths are identified. `local`: paths are stored relative to a project root,
 * so the memory stays valid when the project moves. `global`: paths are absolute and span
 * projects. URLs are normalised the same way in both modes.
 */
export type Workspace = { mode: 'local'; root: string } | { mode: 'global' }

/**
 * Maps an absolute path to the path of the file it names (e.g. with symlinks resolved);
 * given to the engine by a runtime that can read the file system (Node). The path may hold
 * `..` segments: after a symlink, `..` leads to the link target's parent, which only the file
 * system knows, so they are left to the resolver.
 */
export type PathResolver = (absolutePath: string) => string

/** When background work starts after writes (see `DEFAULT_INDEXING_PAUSE` in src/core/maintenance/indexer.ts). */
export interface IndexingPause {
  /** How long writes must pause before a background batch starts (ms). */
  quietMs: number
  /** The longest a batch waits for that pause (ms); after that wait, the run goes on without pauses. */
  maxWaitMs: number
}

/** When searches and contexts last returned each conversation (src/core/maintenance/hits.ts). */
export interface HitLog {
  /** The conversations of a retrieval's hits, at `at`. */
  note(tenantId: string, conversationIds: Iterable<string>, at: Date): void
  /** Writes the hits noted since the last flush. */
  flush(q?: Queryable): Promise<void>
  /** No more background writes; writes what is noted (before closing the database). */
  stop(): Promise<void>
}

/** How a memory is given its vault: a passphrase, or a key the app keeps (e.g. non-extractable, in IndexedDB). */
export type VaultInput = { passphrase: string } | { key: CryptoKey }

/**
 * - `none`: this memory has no vault; `high` is stored as plain text.
 * - `open`: sealed strings are written and read.
 * - `locked`: the memory has a vault but was opened without its key: sealed strings are
 *   returned as they are stored, and writing `high` content is refused (`VAULT_LOCKED`).
 */
export type VaultStatus = 'none' | 'open' | 'locked'

export interface Vault {
  readonly status: VaultStatus
  /**
   * The text sealed under a random iv, or with `equal` under an iv derived from the text, so
   * that equal texts seal equally; a sealed string is returned as it is.
   */
  seal(text: string, equal?: boolean): Promise<string>
  /**
   * Every string of a JSON value sealed; of an object, the values of the top-level keys in
   * `keys.plain` are kept, and those in `keys.equal` are sealed so that equal texts seal equally.
   */
  sealJson<T extends JsonValue>(value: T, keys?: ContentKeys): Promise<T>
  /** Every sealed string, or sealed token inside a string, in `value` opened again. */
  open<T>(value: T): Promise<T>
  /** A keyed hash of the text (hex), in place of a plain SHA-256 that a guess could confirm. */
  mac(text: string): Promise<string>
  /** Wraps the data key under another vault key; nothing sealed changes. */
  rewrap(db: Queryable, input: VaultInput): Promise<void>
  /** A keyed id of the data key (hex): equal for two vaults with one key, and telling nothing of it. */
  keyId(): Promise<string>
}

export interface ContentKeys {
  plain?: ReadonlySet<string>
  equal?: ReadonlySet<string>
}
