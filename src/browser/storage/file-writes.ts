import type { FileWrite } from '@electric-sql/pglite/memfs-frontend'
import type { SyncHandle } from './wal-segments.ts'

/** Data files written to OPFS at once in a flush. */
export const WRITE_CONCURRENCY = 16

/**
 * Runs `task` over `items`, `limit` at a time. After a failure no new item starts, and the call
 * throws the first error only once every task already started has ended. A flush that failed
 * is tried again by the next one: a write of the first still running would then hold its file's
 * access handle, and the second's write of that file would fail on it.
 */
export async function eachLimited<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failed: { error: unknown } | undefined
  const worker = async () => {
    while (!failed && next < items.length) {
      const item = items[next++] as T
      try {
        await task(item)
      } catch (error) {
        failed ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failed) throw failed.error
}

/**
 * Writes files under `root`, `WRITE_CONCURRENCY` at a time (`eachLimited`): each through an
 * access handle, resized when it says so, its chunks in order, flushed unless durability is
 * relaxed. Folders are looked up once per call.
 */
export async function writeFiles(root: FileSystemDirectoryHandle, writes: readonly FileWrite[], relaxedDurability: boolean): Promise<void> {
  const folders = new Map<string, Promise<FileSystemDirectoryHandle>>()
  const folder = (path: string): Promise<FileSystemDirectoryHandle> => {
    let found = folders.get(path)
    if (!found) {
      const cut = path.lastIndexOf('/')
      found = path === '' ? Promise.resolve(root) : folder(path.slice(0, cut)).then((parent) => parent.getDirectoryHandle(path.slice(cut + 1), { create: true }))
      folders.set(path, found)
    }
    return found
  }
  await eachLimited(writes, WRITE_CONCURRENCY, async (w) => {
    const cut = w.path.lastIndexOf('/')
    const file = await (await folder(w.path.slice(0, cut))).getFileHandle(w.path.slice(cut + 1), { create: true })
    const handle = await (file as unknown as { createSyncAccessHandle(): Promise<SyncHandle> }).createSyncAccessHandle()
    try {
      if (w.truncate) handle.truncate(w.size)
      for (const { at, data } of w.chunks) handle.write(data, { at })
      if (!relaxedDurability) handle.flush()
    } finally {
      handle.close()
    }
  })
}
