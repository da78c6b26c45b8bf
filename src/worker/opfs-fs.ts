import { MemfsFrontendFS, type StorageEntry } from '@electric-sql/pglite/memfs-frontend'
import { OpfsBackend } from '@electric-sql/pglite/memfs2opfs'

/** Files read from OPFS at once while a memory opens. */
export const LOAD_CONCURRENCY = 32

interface DirectoryLike {
  entries(): AsyncIterable<[string, FileSystemHandle]>
}

/**
 * PGlite's OPFS storage (memfs2opfs: the database runs in memory and every flush writes the
 * changed bytes through to OPFS) with a faster start. PGlite's own loader reads the data
 * directory one file at a time, two browser round trips each, so a boot waits on ~2,100 of
 * them in a row. This one lists each level of folders at once and keeps `LOAD_CONCURRENCY`
 * reads in flight; entries still come parents first, files in listing order.
 */
export class OpfsLoadAheadBackend extends OpfsBackend {
  override async *load(): AsyncGenerator<StorageEntry> {
    let root = await navigator.storage.getDirectory()
    for (const part of this.dataDir.split('/').filter(Boolean)) root = await root.getDirectoryHandle(part)

    const files: { path: string; handle: FileSystemFileHandle }[] = []
    let level: { path: string; handle: FileSystemDirectoryHandle }[] = [{ path: '', handle: root }]
    while (level.length > 0) {
      const listed = await Promise.all(
        level.map(async (dir) => {
          const children: [string, FileSystemHandle][] = []
          for await (const child of (dir.handle as unknown as DirectoryLike).entries()) children.push(child)
          return { dir, children }
        }),
      )
      const next: typeof level = []
      for (const { dir, children } of listed) {
        for (const [name, handle] of children) {
          const path = `${dir.path}/${name}`
          if (handle.kind === 'directory') {
            next.push({ path, handle: handle as FileSystemDirectoryHandle })
            yield { kind: 'dir', path }
          } else {
            files.push({ path, handle: handle as FileSystemFileHandle })
          }
        }
      }
      level = next
    }

    const read = async ({ path, handle }: (typeof files)[number]): Promise<StorageEntry> => {
      const file = await handle.getFile()
      return { kind: 'file', path, data: new Uint8Array(await file.arrayBuffer()), mtime: file.lastModified }
    }
    const reads: (Promise<StorageEntry> | undefined)[] = []
    for (let i = 0; i < files.length; i++) {
      while (reads.length < files.length && reads.length < i + LOAD_CONCURRENCY) {
        const pending = read(files[reads.length]!)
        // Awaited below in order; this only keeps an abandoned load from reporting it as unhandled.
        pending.catch(() => {})
        reads.push(pending)
      }
      const entry = await reads[i]!
      reads[i] = undefined
      yield entry
    }
  }
}

/** The file system for a memory kept in the OPFS folder `folder`. */
export function opfsFileSystem(folder: string): MemfsFrontendFS {
  return new MemfsFrontendFS(new OpfsLoadAheadBackend(folder))
}
