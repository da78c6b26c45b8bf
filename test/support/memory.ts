import { readFile } from 'node:fs/promises'
import { inject } from 'vitest'
import { type OpenMemoryOptions, openMemory } from '../../src/node/index.ts'
import { pgliteFsBundle } from '../../src/node/template.ts'
import { openPGlite } from '../../src/runtime/pglite.ts'

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

/** A fresh, migrated, in-memory memory built from the shared template. */
export async function openTestMemory(options: Omit<OpenMemoryOptions, 'loadDataDir' | 'dataDir'> = {}) {
  return openMemory({ cacheMB: TEST_CACHE_MB, ...options, loadDataDir: await templateBlob() })
}

/** A fresh, migrated PGlite for tests that drive SQL directly. */
export async function openTestDb() {
  const fsBundle = await pgliteFsBundle()
  return openPGlite({ loadDataDir: await templateBlob(), ...(fsBundle ? { fsBundle } : {}), cacheMB: TEST_CACHE_MB })
}
