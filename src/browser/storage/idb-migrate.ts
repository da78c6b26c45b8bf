/// <reference lib="webworker" />
import { openPGlite } from '../../runtime/pglite.ts'
import { idbPageFileSystem, pageDatabaseHoldsFiles } from './idb-pages.ts'
import { deleteIdbDatabase, legacyIdbDatabaseName, storageKey } from './storage.ts'

/**
 * Moves an IndexedDB memory kept in PGlite's own IndexedDB file system (memories made before
 * the page store) into the page store (idb-pages.ts), where a commit stores the pages it
 * changed instead of every changed file whole. The caller must hold the memory's lock.
 *
 * The old database stays the memory until the copy is complete: the data directory is read
 * from it (after a checkpoint, so the copy starts with little log to replay), written to the
 * page store in one transaction (a copy cut short leaves no files there, and one left over
 * from an earlier attempt is removed first), and only then is the old database deleted. A
 * memory that still has its old database is read from that database, so a failure at any
 * step leaves the memory as it was, and the next open tries again.
 */
export async function moveLegacyIdbToPages(name: string): Promise<void> {
  const key = storageKey(name)
  const legacy = await openPGlite({ dataDir: `idb://${key}` })
  let directory: Blob
  try {
    await legacy.exec('CHECKPOINT')
    directory = await legacy.dumpDataDir('none')
  } finally {
    await legacy.close()
  }
  // A page store left by a copy cut short goes first. Held open elsewhere, it fails the move:
  // the memory opens in its old database, and the next open tries again.
  await deleteIdbDatabase(key, () => {
    throw new Error(`the IndexedDB database "${key}" is open elsewhere`)
  })
  try {
    // Closing writes the whole directory to the page store in one flush.
    const copy = await openPGlite({ fs: idbPageFileSystem(key), loadDataDir: directory })
    await copy.close()
    if (!(await pageDatabaseHoldsFiles(key))) {
      throw new Error(`the copy of memory "${name}" into the IndexedDB page store holds no files`)
    }
    // Only this worker held the old database (the caller holds the lock), and it is closed: a
    // blocked deletion waits for a connection some other code left open.
    await deleteIdbDatabase(legacyIdbDatabaseName(name), () => {
      console.warn(`engram: memory "${name}": waiting for another connection to its old IndexedDB database to close`)
    })
  } catch (error) {
    // The old database is still the memory: the copy only takes space. A copy left open by a
    // failed start must not hold up this open: its deletion then goes ahead once it closes.
    await deleteIdbDatabase(key, () => {
      throw new Error(`the IndexedDB database "${key}" is still open`)
    }).catch(() => {})
    throw error
  }
}
