import { resolve } from 'node:path'
import type { EngineOptions } from '../core/engine.ts'
import type { ListsEveryKey } from '../core/kernel/input-walk.ts'
import { MEMORY_SETTING_NAMES, type MemorySettings } from '../core/settings.ts'
import type { PostgresTarget } from './postgres.ts'
import { realPath } from './realpath.ts'

/** Settings `openMemory` has always taken as an explicit `undefined` too, the same as leaving them out. */
type TakesUndefined = 'statistics' | 'indexingPause' | 'vault'
type OrUndefined<T> = { [K in keyof T]: T[K] | undefined }

/** What `openMemory` takes: the memory's settings, and where its files live in this process. */
export interface OpenMemoryOptions
  extends Omit<MemorySettings, TakesUndefined>,
    OrUndefined<Pick<MemorySettings, TakesUndefined>> {
  /** A folder for the database files; omitted → in memory, gone on close. */
  dataDir?: string
  /**
   * A PostgreSQL server to keep the memory in, in place of a folder: a connection string or a
   * node-postgres `Pool` (install `pg`). One memory uses a database at a time (docs/postgres.md).
   */
  postgres?: PostgresTarget
  /**
   * A `dumpDataDir()` tarball a new memory starts from, in place of the bundled template (an
   * empty, migrated database). Tests pass their own; a folder that holds a database refuses it.
   */
  loadDataDir?: Blob
  /**
   * Resolve symlinks in document paths (and the local root) before they become keys, so a
   * file reached by two paths is one document. Default true; false keeps paths as given.
   */
  resolveSymlinks?: boolean
}

/** Every option `openMemory` takes: any other is refused, so a misspelt one never goes unnoticed. */
export const OPEN_MEMORY_OPTIONS = [
  'dataDir',
  'postgres',
  'loadDataDir',
  ...MEMORY_SETTING_NAMES,
  'resolveSymlinks',
] as const satisfies readonly (keyof OpenMemoryOptions)[]
const _everyOpenOption: ListsEveryKey<OpenMemoryOptions, typeof OPEN_MEMORY_OPTIONS> = true

/** The engine's options for `openMemory`'s settings, with paths resolved as Node resolves them. */
export function engineOptions(options: OpenMemoryOptions): Omit<EngineOptions, 'db'> {
  const workspace =
    options.workspace?.mode === 'local' ? { mode: 'local' as const, root: resolve(options.workspace.root) } : undefined
  return {
    ...(options.now ? { now: options.now } : {}),
    ...(options.embedder ? { embedder: options.embedder } : {}),
    ...(options.indexing ? { indexing: options.indexing } : {}),
    ...(options.statistics ? { statistics: options.statistics } : {}),
    ...(options.indexingPause === undefined ? {} : { indexingPause: options.indexingPause }),
    ...(options.dedupThreshold === undefined ? {} : { dedupThreshold: options.dedupThreshold }),
    ...(options.scoring === undefined ? {} : { scoring: options.scoring }),
    ...(options.tokenCounter === undefined ? {} : { tokenCounter: options.tokenCounter }),
    ...(options.vault === undefined ? {} : { vault: options.vault }),
    ...(workspace ? { workspace } : {}),
    ...(options.resolveSymlinks === false ? {} : { resolvePath: realPath }),
  }
}
