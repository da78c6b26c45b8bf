/// <reference lib="webworker" />
import { type ChangeSet, type FileWrite, MemfsFrontendFS, type StorageBackend, type StorageEntry } from '@electric-sql/pglite/memfs-frontend'
import { promisifyRequest as request } from 'idb-keyval'
import { lengthWithoutZeros } from './deferred-writes.ts'

/**
 * Bytes per stored page: Postgres' block size, so the data files' and the log's writes (whole
 * 8 KiB blocks) replace pages without reading them first.
 */
export const PAGE_BYTES = 8192

const FILES = 'files'
const PAGES = 'pages'
const VERSION = 1

/** A file or folder of the data directory, keyed by its path inside it. */
interface FileRow {
  dir: boolean
  size: number
}

type PageKey = [string, number]
type Piece = { at: number; data: Uint8Array }

/** Opens (creating if need be) the IndexedDB database that holds a memory's pages. */
export async function openPageDatabase(name: string): Promise<IDBDatabase> {
  const req = indexedDB.open(name, VERSION)
  req.onupgradeneeded = () => {
    const db = req.result
    if (!db.objectStoreNames.contains(FILES)) db.createObjectStore(FILES)
    if (!db.objectStoreNames.contains(PAGES)) db.createObjectStore(PAGES)
  }
  return request(req)
}

/**
 * Whether the existing database `name` holds a data directory. A creation cut short leaves
 * none: a new memory's directory is written by one transaction.
 */
export async function pageDatabaseHoldsFiles(name: string): Promise<boolean> {
  const db = await openPageDatabase(name)
  try {
    return (await request(db.transaction(FILES, 'readonly').objectStore(FILES).count())) > 0
  } finally {
    db.close()
  }
}

/** The pages of `path`. */
const pagesOf = (path: string, from = 0) => IDBKeyRange.bound([path, from], [path, Infinity])

/**
 * A memory's data directory in IndexedDB, one record per 8 KiB page, behind PGlite's
 * in-memory file system (as for OPFS). A commit stores the pages it changed — the log's and a
 * few data blocks — in one IndexedDB transaction, where PGlite's IndexedDB file system stores
 * every changed file whole (the current write-ahead log segment, each data file touched) and
 * lists every key of the database at each flush. Each flush is one transaction, so a memory
 * never holds part of one.
 */
export class IdbPageBackend implements StorageBackend {
  #db: IDBDatabase | undefined

  constructor(readonly name: string) {}

  async init(): Promise<void> {
    this.#db = await openPageDatabase(this.name)
  }

  #database(): IDBDatabase {
    if (!this.#db) throw new Error('IdbPageBackend: init() was not called')
    return this.#db
  }

  async *load(): AsyncGenerator<StorageEntry> {
    const tx = this.#database().transaction([FILES, PAGES], 'readonly')
    const files = tx.objectStore(FILES)
    const pages = tx.objectStore(PAGES)
    const [paths, rows, keys, values] = await Promise.all([
      request(files.getAllKeys()),
      request(files.getAll() as IDBRequest<FileRow[]>),
      request(pages.getAllKeys()),
      request(pages.getAll() as IDBRequest<Uint8Array[]>),
    ])
    // Keys come sorted: a folder (a prefix of its children's paths) before its children, and
    // each file's pages together, in order.
    let p = 0
    for (let i = 0; i < paths.length; i++) {
      const path = paths[i] as string
      const row = rows[i]!
      if (row.dir) {
        yield { kind: 'dir', path }
        continue
      }
      const data = new Uint8Array(row.size)
      while (p < keys.length && (keys[p] as PageKey)[0] < path) p++
      for (; p < keys.length && (keys[p] as PageKey)[0] === path; p++) {
        const at = (keys[p] as PageKey)[1] * PAGE_BYTES
        const page = values[p]!
        if (at < row.size) data.set(page.subarray(0, Math.min(page.length, row.size - at)), at)
      }
      yield { kind: 'file', path, data }
    }
  }

  async apply(changes: ChangeSet, { relaxedDurability }: { relaxedDurability: boolean }): Promise<void> {
    const tx = this.#database().transaction([FILES, PAGES], 'readwrite', {
      durability: relaxedDurability ? 'relaxed' : 'strict',
    })
    const complete = request(tx)
    try {
      const files = tx.objectStore(FILES)
      const pages = tx.objectStore(PAGES)
      for (const op of changes.ops) {
        if (op.op === 'mkdir') {
          files.put({ dir: true, size: 0 } satisfies FileRow, op.path)
        } else {
          // The path and everything under it.
          const under = [`${op.path}/`, `${op.path}/\uffff`] as const
          files.delete(op.path)
          files.delete(IDBKeyRange.bound(...under))
          pages.delete(pagesOf(op.path))
          pages.delete(IDBKeyRange.bound([under[0], 0], [under[1], Infinity]))
        }
      }
      const merges: Promise<void>[] = []
      for (const write of [...changes.files.wal, ...changes.files.data, ...changes.files.control]) {
        merges.push(...writeFile(files, pages, write))
      }
      await Promise.all(merges)
    } catch (error) {
      try {
        tx.abort()
      } catch {
        // Already ended.
      }
      await complete.catch(() => {})
      throw error
    }
    await complete
  }

  async close(): Promise<void> {
    this.#db?.close()
    this.#db = undefined
  }
}

function overlay(page: Uint8Array, pieces: Piece[]): Uint8Array {
  for (const piece of pieces) page.set(piece.data.subarray(0, Math.max(0, page.length - piece.at)), piece.at)
  return page
}

/**
 * Queues one file's writes in the flush's transaction. Returns the merges under way: pages
 * written in part are read and written whole, in the same transaction.
 */
function writeFile(files: IDBObjectStore, pages: IDBObjectStore, write: FileWrite): Promise<void>[] {
  const { path, size } = write
  const count = Math.ceil(size / PAGE_BYTES)
  if (write.full) pages.delete(pagesOf(path))
  else if (write.truncate) pages.delete(pagesOf(path, count))
  files.put({ dir: false, size } satisfies FileRow, path)

  // What each page written to receives, by page number.
  const touched = new Map<number, Piece[]>()
  for (const chunk of write.chunks) {
    const end = chunk.at + chunk.data.length
    for (let page = Math.floor(chunk.at / PAGE_BYTES); page * PAGE_BYTES < end; page++) {
      const start = page * PAGE_BYTES
      const lo = Math.max(chunk.at, start)
      const hi = Math.min(end, start + PAGE_BYTES)
      const pieces = touched.get(page) ?? []
      pieces.push({ at: lo - start, data: chunk.data.subarray(lo - chunk.at, hi - chunk.at) })
      touched.set(page, pieces)
    }
  }
  // A shortened file's last page loses its tail even when nothing was written to it.
  if (write.truncate && !write.full && size % PAGE_BYTES !== 0 && !touched.has(count - 1)) touched.set(count - 1, [])

  const merges: Promise<void>[] = []
  for (const [page, pieces] of touched) {
    const length = Math.min(PAGE_BYTES, size - page * PAGE_BYTES)
    if (length <= 0) continue
    const key: PageKey = [path, page]
    if (write.full || pieces.reduce((n, piece) => n + piece.data.length, 0) >= length) {
      // Whole (one file's chunks never overlap). A copy of its own: storing a view would
      // store the whole buffer it looks into.
      const only = pieces.length === 1 && pieces[0]!.at === 0 && pieces[0]!.data.length === length
      // A whole file's pages were all deleted above, and a page not stored reads as zeros: a
      // new write-ahead log segment (1 MiB, mostly zeros) stores only the pages written to.
      if (write.full && pieces.every((piece) => lengthWithoutZeros(piece.data) === 0)) continue
      pages.put(only ? pieces[0]!.data.slice() : overlay(new Uint8Array(length), pieces), key)
      continue
    }
    merges.push(
      request(pages.get(key) as IDBRequest<Uint8Array | undefined>).then((old) => {
        const data = new Uint8Array(length)
        if (old) data.set(old.subarray(0, Math.min(old.length, length)))
        pages.put(overlay(data, pieces), key)
      }),
    )
  }
  return merges
}

/** The file system for a memory kept in the IndexedDB database `name`. */
export function idbPageFileSystem(name: string): MemfsFrontendFS {
  return new MemfsFrontendFS(new IdbPageBackend(name))
}
