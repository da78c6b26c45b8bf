import type { Embedder } from './kernel/embedder.ts'
import type { IndexingPause, VaultInput, Workspace } from './kernel/engine-context.ts'
import type { ListsEveryKey } from './kernel/input-walk.ts'
import type { ScoringInput } from './kernel/scoring.ts'

/** The default `dedupThreshold` (see `MemorySettings.dedupThreshold`). */
export const DEFAULT_DEDUP_THRESHOLD = 0.92

/**
 * A memory's settings, declared once for every way to open one. `createEngine`, `openMemory`
 * and `createMemory` each take the settings that apply where they run.
 */
export interface MemorySettings {
  /**
   * `auto` (default): chunks are embedded in the background after writes.
   * `manual`: only when `indexNow()` is called, for tests that want control.
   */
  indexing?: 'auto' | 'manual'
  /**
   * How background work yields to writes (default `DEFAULT_INDEXING_PAUSE`: 1,000 ms quiet, 10,000 at most).
   * Each indexing batch and planner-statistics refresh waits until writes have paused for `quietMs`.
   * It waits `maxWaitMs` at most; a run that waited that long goes on without pauses until done.
   * `{ quietMs: 0 }` starts them at once, and a search due for a statistics refresh runs it first.
   * `waitForIndex()`, `indexNow()` and `refreshStatistics()` never wait for a pause.
   */
  indexingPause?: Partial<IndexingPause>
  /**
   * `auto` (default): the query planner's statistics are refreshed in the background as the memory grows.
   * A refresh is due once writes have changed a tenth of the memory.
   * `manual`: the statistics are refreshed only by `refreshStatistics()`.
   */
  statistics?: 'auto' | 'manual'
  /**
   * Cosine similarity at or above which a new memory supersedes an existing one (default 0.92,
   * `DEFAULT_DEDUP_THRESHOLD`).
   * With the bundled model, 0.92 is the lowest at which no different facts written alike hid another.
   * The facts are those of `bench/dedup-threshold.ts`; another model may want another value.
   */
  dedupThreshold?: number
  /** Retrieval and ranking weights laid over `DEFAULT_SCORING` (see src/core/kernel/scoring.ts). */
  scoring?: ScoringInput
  /**
   * Encrypts `high` sensitivity at rest (see docs/privacy.md and src/core/privacy/vault.ts).
   * Give `{ passphrase }` of at least 8 characters, or `{ key }`, an AES-GCM `CryptoKey`.
   * The key may be a non-extractable one that the app keeps in IndexedDB.
   * The first open with a vault seals the `high` rows already stored.
   * A memory with a vault, opened without it, is locked: sealed text reads as stored.
   * Writes of `high` content then fail with `VAULT_LOCKED`.
   * A wrong key fails the open with `WRONG_PASSPHRASE`.
   */
  vault?: VaultInput
  /**
   * How document paths are identified. `{ mode: 'global' }` (default) stores absolute paths.
   * Each file then has one identity across projects.
   * `{ mode: 'local', root }` stores paths relative to the project root, so the memory survives moving it.
   * The root must be absolute, except in `openMemory`, which resolves it against the current directory.
   */
  workspace?: Workspace
  /**
   * Postgres' page cache in MiB, 4–512, for this open.
   * Without it, the memory opens with the cache its data directory names.
   * A memory made from the bundled template, as in the browser, starts at 64 MiB.
   * One made by initdb starts at Postgres' 128 MiB, until its first statistics refresh.
   * Each refresh sets the next open's cache to half the database's size, in 64 MiB steps from 64 up to 512.
   * A refresh never lowers a cache it set. Postgres clears the whole cache at every start.
   * So a larger cache opens more slowly (bench/HISTORY.md, "The page cache").
   */
  cacheMB?: number
  /**
   * The clock that dates what is written (`created_at`); tests pin it for determinism.
   * Time never runs back: a reading earlier than one already given counts as that one.
   * `diffSince` moves it a millisecond past the end of the list it returns.
   */
  now?: () => Date
  /**
   * Embeds chunks (in the background), memories and queries; without one, search is keyword only.
   * Dedup then matches exact text only. A promise of a model still loading is fine.
   * The memory opens at once and works keyword-only until the promise resolves.
   * A rejection is reported as a `MODEL_UNAVAILABLE` error event (see `onError`).
   */
  embedder?: Embedder | Promise<Embedder>
  /**
   * Counts tokens for context budgets, e.g. with the embedding model's tokenizer.
   * Without one, the conservative `estimateTokens` is used.
   */
  tokenCounter?: (text: string) => number
}

/**
 * The settings' plain defaults. Those of `indexingPause` and `scoring` are objects of their own:
 * `DEFAULT_INDEXING_PAUSE` (maintenance/indexer.ts) and `DEFAULT_SCORING` (kernel/scoring.ts).
 */
export const DEFAULT_MEMORY_SETTINGS: Readonly<
  Required<Pick<MemorySettings, 'indexing' | 'statistics' | 'dedupThreshold' | 'workspace'>>
> = Object.freeze({
  indexing: 'auto',
  statistics: 'auto',
  dedupThreshold: DEFAULT_DEDUP_THRESHOLD,
  workspace: Object.freeze({ mode: 'global' }),
})

/** Every setting's name, for the runtime checks that refuse a name no option has. */
export const MEMORY_SETTING_NAMES = [
  'cacheMB',
  'now',
  'embedder',
  'indexing',
  'statistics',
  'indexingPause',
  'dedupThreshold',
  'scoring',
  'tokenCounter',
  'vault',
  'workspace',
] as const satisfies readonly (keyof MemorySettings)[]
const _everySetting: ListsEveryKey<MemorySettings, typeof MEMORY_SETTING_NAMES> = true

/** The engine's settings that are plain data (or a `CryptoKey`), so they can cross to a worker. */
export const ENGINE_SETTING_NAMES = [
  'indexing',
  'indexingPause',
  'statistics',
  'dedupThreshold',
  'scoring',
  'vault',
] as const satisfies readonly (keyof MemorySettings)[]

export type EngineSettingName = (typeof ENGINE_SETTING_NAMES)[number]
