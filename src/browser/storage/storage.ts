/// <reference lib="webworker" />
import { MemoryError } from '../../core/kernel/errors.ts'
import { pageDatabaseHoldsFiles } from './idb-pages.ts'

export type StorageKind = 'opfs' | 'idb' | 'memory'

/** What the worker's platform offers, detected once at start and passed down. */
export interface WorkerEnvironment {
  opfs: boolean
  locks: boolean
  broadcastChannel: boolean
}

export function detectWorkerEnvironment(scope: typeof globalThis = globalThis): WorkerEnvironment {
  const nav = (scope as { navigator?: Navigator }).navigator
  return Object.freeze({
    opfs:
      typeof nav?.storage?.getDirectory === 'function' &&
      typeof (scope as { FileSystemSyncAccessHandle?: unknown }).FileSystemSyncAccessHandle === 'function',
    locks: typeof nav?.locks?.request === 'function',
    broadcastChannel: typeof (scope as { BroadcastChannel?: unknown }).BroadcastChannel === 'function',
  })
}

/** The storages a memory may ask for. */
export const STORAGE_KINDS = ['opfs', 'idb', 'memory', 'auto'] as const

/** Refuses a storage the memory does not know (`INVALID_INPUT`): a typo must not fall back to memory. */
export function checkStorage(requested: unknown): StorageKind | 'auto' {
  if (!(STORAGE_KINDS as readonly unknown[]).includes(requested)) {
    throw new MemoryError('INVALID_INPUT', `Unknown storage ${typeof requested === 'string' ? JSON.stringify(requested) : `(a ${typeof requested})`}: use one of ${STORAGE_KINDS.join(', ')}.`)
  }
  return requested as StorageKind | 'auto'
}

/** OPFS where a worker can open sync access handles, IndexedDB otherwise. */
export function resolveStorage(requested: StorageKind | 'auto', env: WorkerEnvironment): StorageKind {
  if (requested === 'auto') return env.opfs ? 'opfs' : 'idb'
  if (requested === 'opfs' && !env.opfs) {
    throw new MemoryError(
      'STORAGE_UNAVAILABLE',
      'OPFS with sync access handles is not available here (it needs a secure context and a worker). Use storage: "idb" or "auto".',
    )
  }
  return requested
}

export const MEMORY_NAME = /^[A-Za-z0-9._-]{1,64}$/

export function checkMemoryName(name: string): string {
  if (!MEMORY_NAME.test(name)) {
    throw new MemoryError('INVALID_INPUT', `Invalid memory name "${name}": use 1-64 letters, digits, ".", "_" or "-".`)
  }
  return name
}

/**
 * The Web Lock and BroadcastChannel of a memory: one owner per name in each storage (the same
 * name in OPFS and in IndexedDB is two memories).
 */
export function memoryLockName(storage: StorageKind, name: string): string {
  return `engram:${storage}:${name}`
}

/** The storage folder / database name of a memory, shared by PGlite and our own checks. */
export function storageKey(name: string): string {
  return `engram-${checkMemoryName(name)}`
}

export function dataDirFor(kind: StorageKind, name: string): string {
  switch (kind) {
    case 'memory':
      return 'memory://'
    case 'idb':
      return `idb://${storageKey(name)}`
    case 'opfs':
      // PGlite's memfs2opfs: the database runs in memory and every commit's log is written to
      // OPFS before it is acknowledged (the data files follow, see opfs-fs.ts). Starting from
      // the template writes ~480 files once, where the access-handle pool (opfs-ahp) must
      // pre-open a handle per file. The worker opens it through `opfsFileSystem` (opfs-fs.ts).
      return `memfs2opfs://${storageKey(name)}`
  }
}

/** The file beside a memory's OPFS folder while that folder is still being filled (creation.ts). */
export function incompleteMarker(folder: string): string {
  return `${folder}.incomplete`
}

/**
 * IndexedDB memories are kept a page per record in the database named after the memory
 * (idb-pages.ts). Memories made before that live in PGlite's IndexedDB file system, a file
 * per record in a database of its own, until they are moved (idb-migrate.ts).
 */
export const legacyIdbDatabaseName = (name: string) => `/pglite/${storageKey(name)}`

/**
 * How an IndexedDB memory is kept: `pages` (idb-pages.ts), or `files` (PGlite's IndexedDB file
 * system); `pages` for one not made yet. `exists`: whether it holds a data directory.
 */
export async function idbLayout(name: string): Promise<{ layout: 'pages' | 'files'; exists: boolean }> {
  const names = new Set((await indexedDB.databases()).map((db) => db.name))
  if (names.has(legacyIdbDatabaseName(name))) return { layout: 'files', exists: true }
  return { layout: 'pages', exists: names.has(storageKey(name)) && (await pageDatabaseHoldsFiles(storageKey(name))) }
}

/** Whether a database already exists for this memory (so it must not be created from the template). */
export async function storageExists(kind: StorageKind, name: string): Promise<boolean> {
  switch (kind) {
    case 'memory':
      return false
    case 'idb':
      return (await idbLayout(name)).exists
    case 'opfs': {
      const root = await navigator.storage.getDirectory()
      try {
        const dir = await root.getDirectoryHandle(storageKey(name))
        for await (const _ of (dir as unknown as AsyncIterable<unknown>)) return true
        return false
      } catch (error) {
        if ((error as DOMException).name === 'NotFoundError') return false
        throw error
      }
    }
  }
}

/** Deletes a memory's files. The caller must hold the memory's lock. */
export async function deleteStorage(kind: StorageKind, name: string): Promise<void> {
  if (kind === 'idb') {
    for (const database of [storageKey(name), legacyIdbDatabaseName(name)]) {
      await deleteIdbDatabase(database, () => {
        throw new MemoryError('LOCKED_BY_OTHER_TAB', `Memory "${name}" is open in another tab; close it first.`)
      })
    }
  } else if (kind === 'opfs') {
    const root = await navigator.storage.getDirectory()
    // The folder first: a marker left without its folder is harmless, the reverse is not.
    for (const entry of [storageKey(name), incompleteMarker(storageKey(name))]) {
      try {
        await root.removeEntry(entry, { recursive: true })
      } catch (error) {
        if ((error as DOMException).name !== 'NotFoundError') throw error
      }
    }
  }
}

/**
 * Deletes the IndexedDB database `database` (nothing when there is none). `onBlocked` runs
 * when another connection holds it open: a throw fails the call at once, else the call waits.
 * Either way the deletion stays queued and goes ahead once that connection closes, before
 * any later open of the database.
 */
export function deleteIdbDatabase(database: string, onBlocked: () => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const request = indexedDB.deleteDatabase(database)
    request.onsuccess = () => resolve()
    request.onerror = () => reject(request.error ?? new Error('deleteDatabase failed'))
    request.onblocked = () => {
      try {
        onBlocked()
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)))
      }
    }
  })
}

/** Maps platform storage failures to the error a caller can act on. */
export function storageError(error: unknown, what: string): MemoryError {
  if (error instanceof MemoryError) return error
  const name = (error as { name?: string } | null)?.name ?? ''
  const message = (error as { message?: string } | null)?.message ?? String(error)
  if (name === 'QuotaExceededError' || /quota/i.test(message)) {
    return new MemoryError(
      'QUOTA_EXCEEDED',
      `${what}: the browser's storage quota is exhausted. Free space (export and delete old memories) or ask for persistent storage.`,
      { cause: error },
    )
  }
  if (name === 'NoModificationAllowedError' || name === 'InvalidStateError') {
    return new MemoryError('LOCKED_BY_OTHER_TAB', `${what}: the storage is held by another tab or worker.`, {
      cause: error,
    })
  }
  return new MemoryError('STORAGE_UNAVAILABLE', `${what}: ${message}`, { cause: error })
}
