import { mkdir } from 'node:fs/promises'
import lockfile from 'proper-lockfile'
import { MemoryError } from '../core/errors.ts'

/** How long the lock of a process that died holding it keeps others out. */
export const STALE_LOCK_MS = 10_000

/**
 * Holds a data folder for this open. A second open of the same folder, in this process or
 * another, would keep its own copy of the database's pages and write over the first one's
 * writes, so it is refused with LOCKED_BY_OTHER_PROCESS. The lock is a folder beside the data
 * folder (`<dataDir>.lock`) whose time is renewed while the memory is open, so that one left
 * by a process that died is taken over after `STALE_LOCK_MS`. Resolves to the release.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  await mkdir(dataDir, { recursive: true })
  try {
    return await lockfile.lock(dataDir, {
      stale: STALE_LOCK_MS,
      update: STALE_LOCK_MS / 2,
      retries: 0,
      onCompromised: (cause) => {
        // Another process took the lock over (this one stalled past STALE_LOCK_MS) or its
        // folder went away: nothing here can stop the writes, so say so loudly.
        console.error(`engram: the lock of ${dataDir} was lost: ${cause.message}`)
      },
    })
  } catch (cause) {
    if ((cause as { code?: string }).code === 'ELOCKED') {
      throw new MemoryError(
        'LOCKED_BY_OTHER_PROCESS',
        `The memory at ${dataDir} is open elsewhere, in this process or another: close it there first (the lock of a process that died is taken over after ${STALE_LOCK_MS / 1000} s).`,
        { cause, details: { dataDir } },
      )
    }
    throw new MemoryError('STORAGE_UNAVAILABLE', `Could not lock the memory at ${dataDir}: ${String(cause)}`, {
      cause,
      details: { dataDir },
    })
  }
}
