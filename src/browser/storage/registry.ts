import { createStore, del, entries, set, type UseStore } from 'idb-keyval'
import { MemoryError } from '../../core/kernel/errors.ts'
import { checkMemoryName, deleteStorage, memoryLockName, type StorageKind } from './storage.ts'

export interface MemoryRecord {
  name: string
  storage: Exclude<StorageKind, 'memory'>
  createdAt: string
  lastOpenedAt: string
}

let store: UseStore | undefined
const registry = () => (store ??= createStore('engram-registry', 'memories'))
const keyOf = (storage: StorageKind, name: string) => `${storage}:${name}`

/** Notes that a memory exists (called by the worker after each boot of a persistent memory). */
export async function registerMemory(name: string, storage: MemoryRecord['storage'], created: boolean): Promise<void> {
  const now = new Date().toISOString()
  const existing = (await entries<string, MemoryRecord>(registry())).find(([key]) => key === keyOf(storage, name))
  await set(
    keyOf(storage, name),
    { name, storage, createdAt: created || !existing ? now : existing[1].createdAt, lastOpenedAt: now },
    registry(),
  )
}

/**
 * The memories stored in this origin, newest first.
 *
 * @example
 * for (const m of await listMemories()) console.log(m.name, m.storage)
 */
export async function listMemories(): Promise<MemoryRecord[]> {
  const all = await entries<string, MemoryRecord>(registry())
  return all.map(([, record]) => record).sort((a, b) => b.lastOpenedAt.localeCompare(a.lastOpenedAt) || a.name.localeCompare(b.name))
}

/**
 * Deletes a memory and its files. Refuses with LOCKED_BY_OTHER_TAB while any tab has it open.
 *
 * @example
 * await deleteMemory('scratch')
 */
export async function deleteMemory(name: string, options: { storage?: MemoryRecord['storage'] } = {}): Promise<void> {
  checkMemoryName(name)
  const kinds: MemoryRecord['storage'][] = options.storage ? [options.storage] : ['opfs', 'idb']
  for (const kind of kinds) {
    await navigator.locks.request(memoryLockName(kind, name), { ifAvailable: true }, async (lock) => {
      if (!lock) throw new MemoryError('LOCKED_BY_OTHER_TAB', `Memory "${name}" is open in a tab; close it there first.`)
      if (kind === 'opfs' && typeof navigator.storage?.getDirectory !== 'function') return
      await deleteStorage(kind, name)
      await del(keyOf(kind, name), registry())
    })
  }
}
