/// <reference lib="webworker" />
import type { ChangeSet, FileWrite } from '@electric-sql/pglite/memfs-frontend'
import { OpfsBackend } from '@electric-sql/pglite/memfs2opfs'
import { templateEntries } from '../../runtime/template-files.ts'
import { MemoryError } from '../../core/kernel/errors.ts'
import { deleteStorage, incompleteMarker, type StorageKind, storageKey } from './storage.ts'

/**
 * A new OPFS memory is written in two parts (opfs-fs.ts): its write-ahead log first, then the
 * rest of the template it starts from, in the background. Writes are acknowledged once their
 * log is stored, before the rest is. While the rest is written, a marker file beside the
 * folder says which template the memory was made from, and whether its log is complete.
 *
 * A memory cut short then is finished from the same template: every file but the log is the
 * template's, since nothing else writes them before the copy ends. Postgres replays the stored
 * log over them when it opens, as after any crash.
 */
export interface CreationMarker {
  /** The template's SHA-256, hex; null when the memory was made without one. */
  template: string | null
  /** Whether the template's log segments are all stored. */
  log: boolean
}

/** The SHA-256 of a template file, hex: what a creation marker names it by. */
export async function templateId(template: Blob): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', await template.arrayBuffer())
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
}

/** Writes the marker of `folder` (made when missing), and waits until it is stored. */
export async function writeMarker(folder: string, marker: CreationMarker): Promise<void> {
  const root = await navigator.storage.getDirectory()
  const file = await root.getFileHandle(incompleteMarker(folder), { create: true })
  const bytes = new TextEncoder().encode(JSON.stringify(marker))
  // OPFS memories are kept only where a worker has sync access handles (`resolveStorage`).
  const handle = await file.createSyncAccessHandle()
  try {
    handle.truncate(0)
    handle.write(bytes, { at: 0 })
    handle.flush()
  } finally {
    handle.close()
  }
}

/** Removes the marker of `folder`; nothing when there is none. */
export async function removeMarker(folder: string): Promise<void> {
  const root = await navigator.storage.getDirectory()
  try {
    await root.removeEntry(incompleteMarker(folder))
  } catch (error) {
    if ((error as DOMException).name !== 'NotFoundError') throw error
  }
}

/**
 * The marker beside `folder`, or null when the folder is complete. An empty or unreadable
 * marker (one left before markers held anything) reads as a memory whose log is not stored.
 */
export async function readMarker(folder: string): Promise<CreationMarker | null> {
  const root = await navigator.storage.getDirectory()
  let text: string
  try {
    text = await (await (await root.getFileHandle(incompleteMarker(folder))).getFile()).text()
  } catch (error) {
    if ((error as DOMException).name === 'NotFoundError') return null
    throw error
  }
  try {
    const parsed = JSON.parse(text) as Partial<CreationMarker>
    return { template: typeof parsed.template === 'string' ? parsed.template : null, log: parsed.log === true }
  } catch {
    return { template: null, log: false }
  }
}

/** Whether `path` is the log folder or in it. */
export function inLog(path: string): boolean {
  return path === '/pg_wal' || path.startsWith('/pg_wal/')
}

/** A new memory's first flush in two: the log (and its folders), and everything else. */
export function splitLog(changes: ChangeSet): { log: ChangeSet; rest: ChangeSet } {
  return {
    log: { ops: changes.ops.filter((op) => inLog(op.path)), files: { wal: changes.files.wal, data: [], control: [] } },
    rest: { ops: changes.ops.filter((op) => !inLog(op.path)), files: { wal: [], data: changes.files.data, control: changes.files.control } },
  }
}

/** The files of a template (`dumpDataDir`, plain or gzipped) as one flush that writes them whole. */
export async function templateChanges(template: Blob): Promise<ChangeSet> {
  const changes: ChangeSet = { ops: [], files: { wal: [], data: [], control: [] } }
  for (const entry of await templateEntries(template)) {
    const path = entry.path
    if (entry.kind === 'dir') {
      changes.ops.push({ op: 'mkdir', path })
      continue
    }
    const data = entry.data
    const write: FileWrite = { path, size: data.length, full: true, truncate: true, chunks: data.length === 0 ? [] : [{ at: 0, data }] }
    if (inLog(path)) changes.files.wal.push(write)
    else if (path === '/global/pg_control') changes.files.control.push(write)
    else changes.files.data.push(write)
  }
  return changes
}

/**
 * Finishes a memory whose creation was cut short after its log was stored: writes every
 * template file but the log segments already there, then removes the marker. The caller must
 * hold the memory's lock.
 */
export async function finishFromTemplate(folder: string, template: Blob): Promise<void> {
  const changes = await templateChanges(template)
  const stored = await storedLog(folder)
  const wal = changes.files.wal.filter((w) => !stored.has(w.path))
  const backend = new OpfsBackend(folder)
  await backend.init()
  try {
    await backend.apply({ ops: changes.ops, files: { ...changes.files, wal } }, { relaxedDurability: false })
  } finally {
    await backend.close()
  }
  await removeMarker(folder)
}

/** The paths of the files in a memory folder's `pg_wal`. */
async function storedLog(folder: string): Promise<Set<string>> {
  const root = await navigator.storage.getDirectory()
  const paths = new Set<string>()
  let dir: FileSystemDirectoryHandle
  try {
    dir = await (await root.getDirectoryHandle(folder)).getDirectoryHandle('pg_wal')
  } catch (error) {
    if ((error as DOMException).name === 'NotFoundError') return paths
    throw error
  }
  for await (const [name, handle] of (dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
    if (handle.kind === 'file') paths.add(`/pg_wal/${name}`)
  }
  return paths
}

/**
 * Deals with an OPFS memory whose creation was cut short (its marker is still beside its
 * folder, creation.ts). One whose log was stored may hold acknowledged writes: it is finished
 * from the template it was made from (`finished`), and refused with STORAGE_UNAVAILABLE when
 * that template cannot be had. Any other acknowledged nothing: it is removed, to be created
 * again (`removed`). `none` when there was nothing to do. The caller must hold the lock.
 */
export async function settleIncomplete(
  kind: StorageKind,
  name: string,
  loadTemplate: () => Promise<Blob | undefined>,
): Promise<'none' | 'finished' | 'removed'> {
  if (kind !== 'opfs') return 'none'
  const folder = storageKey(name)
  const marker = await readMarker(folder)
  if (marker === null) return 'none'
  if (!marker.log || marker.template === null) {
    await deleteStorage(kind, name)
    return 'removed'
  }
  const template = await loadTemplate().catch(() => undefined)
  if (template === undefined || (await templateId(template)) !== marker.template) {
    throw new MemoryError(
      'STORAGE_UNAVAILABLE',
      `Memory "${name}" was cut short while it was being created. Finishing it needs the template it was made from, which is not served now: serve it again (templateUrl), or delete the memory.`,
    )
  }
  await finishFromTemplate(folder, template)
  return 'finished'
}
