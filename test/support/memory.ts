import { readFile } from 'node:fs/promises'
import type { PGlite } from '@electric-sql/pglite'
import { inject } from 'vitest'
import { checkOptionNames } from '../../src/core/kernel/input-walk.ts'
import { type NodeMemory, type OpenMemoryOptions, openMemory } from '../../src/node/index.ts'
import { memoryOver } from '../../src/node/memory.ts'
import { openGraphDatabase } from '../../src/node/graph-database.ts'
import { OPEN_MEMORY_OPTIONS } from '../../src/node/options.ts'
import { pgliteFsBundle } from '../../src/node/template.ts'
import { durableDb, openPGlite } from '../../src/runtime/pglite.ts'
import { skipOnServer, testBackend } from './backend.ts'
import { giveBackDatabase, takeDatabase } from './database-pool.ts'
import { openServerTestMemory } from './server-memory.ts'

let template: Blob | undefined

/**
 * The page cache test memories open with: the smallest accepted. Postgres clears its whole
 * buffer pool at start, about 3.4 ms per MiB in Node, and test memories hold a few thousand
 * rows at most.
 */
const TEST_CACHE_MB = 4

/** The migrated template data directory every test memory starts from. */
export async function templateBlob(): Promise<Blob> {
  template ??= new Blob([new Uint8Array(await readFile(inject('templateDataDir')))])
  return template
}

/**
 * A fresh, migrated PGlite for tests that drive SQL directly. It is PGlite whatever the
 * backend, so on a server backend the test is skipped: it ran in the `pglite` project.
 */
export async function openTestDb(cacheMB = TEST_CACHE_MB): Promise<PGlite> {
  skipOnServer()
  return newTestDb(cacheMB)
}

/** A fresh, migrated PGlite from the template, as the pool of test databases opens one. */
export async function newTestDb(cacheMB = TEST_CACHE_MB): Promise<PGlite> {
  const fsBundle = await pgliteFsBundle()
  return openPGlite({ loadDataDir: await templateBlob(), ...(fsBundle ? { fsBundle } : {}), cacheMB })
}

/**
 * A fresh, migrated, in-memory memory, as `openMemory` opens one. Its database is one a closed
 * test memory handed back, wiped to the template's state (test/support/database-pool.ts), or a
 * new one.
 */
export async function openTestMemory(options: Omit<OpenMemoryOptions, 'loadDataDir' | 'dataDir'> = {}): Promise<NodeMemory> {
  const backend = testBackend()
  if (backend !== 'pglite') return openServerTestMemory(backend, options)
  if (options.cacheMB !== undefined) return openMemory({ ...options, loadDataDir: await templateBlob() })
  checkOptionNames(options, OPEN_MEMORY_OPTIONS, 'openMemory')
  const pg = await takeDatabase(() => newTestDb())
  return memoryOver(durableDb(pg), options, {
    closeDatabase: () => giveBackDatabase(pg),
    graphDatabase: async () => openGraphDatabase(await templateBlob()),
  })
}
