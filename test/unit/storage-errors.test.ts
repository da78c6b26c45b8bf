import { describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { toMemoryError, withMemoryErrors } from '../../src/core/db/errors.ts'
import { storageError } from '../../src/browser/storage/storage.ts'
import { MemoryFS, type PGlite } from '@electric-sql/pglite'
import { createEngine } from '../../src/core/engine.ts'
import { durableDb, openPGlite } from '../../src/runtime/pglite.ts'
import { templateBlob } from '../support/memory.ts'

const domError = (name: string, message = name) => Object.assign(new Error(message), { name })

describe('storage failures become errors a caller can act on', () => {
  it('maps the platform errors to stable codes and keeps the cause', () => {
    const quota = domError('QuotaExceededError', 'The quota has been exceeded.')
    const mapped = storageError(quota, 'recordTurn failed')
    expect(mapped).toBeInstanceOf(MemoryError)
    expect(mapped.code).toBe('QUOTA_EXCEEDED')
    expect(mapped.cause).toBe(quota)
    expect(mapped.message).toMatch(/quota/i)
    expect(storageError(domError('UnknownError', 'IDB write failed: quota reached'), 'x').code).toBe('QUOTA_EXCEEDED')
    expect(storageError(domError('NoModificationAllowedError'), 'x').code).toBe('LOCKED_BY_OTHER_TAB')
    expect(storageError(domError('SecurityError', 'denied'), 'x').code).toBe('STORAGE_UNAVAILABLE')
  })

  it('a quota error thrown under an engine call is QUOTA_EXCEEDED, not INTERNAL', async () => {
    const quota = new DOMException('The quota has been exceeded.', 'QuotaExceededError')
    expect(toMemoryError(quota)).toMatchObject({ code: 'QUOTA_EXCEEDED', cause: quota })
    const api = withMemoryErrors({
      async record() {
        throw quota
      },
    })
    await expect(api.record()).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' })
    expect(toMemoryError(domError('TypeError', 'x')).code).toBe('INTERNAL')
  })

  it('leaves a MemoryError as it is', () => {
    const original = new MemoryError('CLOSED', 'closed')
    expect(storageError(original, 'x')).toBe(original)
  })
})

/**
 * In-memory files whose flushes fail while `full` is set, as a browser's storage does when the
 * quota runs out: only a flush with something to write (a file written since the last flush
 * that succeeded).
 */
class FillingStorage extends MemoryFS {
  full = false
  saved = 0
  #changed = false
  watch(pg: PGlite): void {
    const fs = (pg as unknown as { Module: { FS: { write: (...args: unknown[]) => unknown } } }).Module.FS
    const write = fs.write.bind(fs)
    fs.write = (...args: unknown[]) => {
      this.#changed = true
      return write(...args)
    }
  }
  override async syncToFs(): Promise<void> {
    if (!this.#changed) return
    if (this.full) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError')
    this.#changed = false
    this.saved++
  }
}

async function fillingMemory() {
  const storage = new FillingStorage()
  const pg = await openPGlite({ fs: storage, loadDataDir: await templateBlob(), cacheMB: 4 })
  storage.watch(pg)
  return { storage, pg, db: durableDb(pg) }
}

describe('a memory whose storage fills up', () => {
  it('reports the change it could not save as applied, answers reads, refuses writes, and saves once space is freed', async () => {
    const { storage, pg, db } = await fillingMemory()
    const memory = await createEngine({ db, indexing: 'manual' })
    try {
      await memory.recordTurn({ conversationId: 'c', user: 'first question', agent: 'first answer' })
      storage.full = true
      const failed = await memory.recordTurn({ conversationId: 'c', user: 'zebra question', agent: 'x' }).catch((e: unknown) => e)
      expect(failed).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { applied: true, saved: false } })
      expect((failed as Error).message).toMatch(/Do not repeat/)
      expect(db.unsaved).toBeInstanceOf(DOMException)
      // Reads answer, and see the change kept in the session.
      expect((await memory.stats()).counts.events).toBe(4)
      expect((await memory.search('zebra', { mode: 'keyword' })).length).toBeGreaterThan(0)
      expect((await memory.buildContext({ conversationId: 'c', query: 'zebra', retrieval: false })).text).toMatch(/zebra/)
      // Writes are refused before they change anything, single statements and transactions alike.
      const refused = { code: 'QUOTA_EXCEEDED', details: { applied: false, saved: false } }
      await expect(memory.recordTurn({ conversationId: 'c', user: 'refused', agent: 'x' })).rejects.toMatchObject(refused)
      await expect(memory.kv.put('policy', 'k', 'v', { text: 'a rule' })).rejects.toMatchObject(refused)
      await expect(memory.remember({ content: 'a fact', category: 'fact', userId: 'u' })).rejects.toMatchObject(refused)
      expect((await memory.stats()).counts.events).toBe(4)
      // Space is freed: the next call saves what waited, and writes go on.
      storage.full = false
      const before = storage.saved
      await memory.recordTurn({ conversationId: 'c', user: 'after', agent: 'ok' })
      expect(storage.saved).toBeGreaterThan(before)
      expect(db.unsaved).toBeUndefined()
      expect((await memory.stats()).counts.events).toBe(6)
      expect((await memory.events.list({ conversationId: 'c' })).map((e) => e.turnIndex)).toEqual([0, 0, 1, 1, 2, 2])
    } finally {
      await db.close()
      await pg.close()
    }
  })

  it('a statement outside a transaction whose flush fails: a read answers, a write is reported applied', async () => {
    const { storage, pg, db } = await fillingMemory()
    try {
      await db.exec('CREATE TABLE notes (id int PRIMARY KEY)')
      storage.full = true
      // The flush PGlite runs after the statement fails; the read is answered from a read-only run.
      expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM notes')).rows).toEqual([{ n: 0 }])
      storage.full = false
      await db.query('SELECT 1')
      storage.full = true
      await expect(db.query('INSERT INTO notes VALUES (1)')).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED', details: { applied: true } })
      await expect(db.query('INSERT INTO notes VALUES (2)')).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED', details: { applied: false } })
      await expect(db.exec('INSERT INTO notes VALUES (3)')).rejects.toMatchObject({ details: { applied: false } })
      // Statements that run outside transactions only (the statistics refresh's) are refused alike.
      await expect(db.exec('VACUUM notes')).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED', details: { applied: false } })
      storage.full = false
      expect((await db.query<{ id: number }>('SELECT id FROM notes ORDER BY id')).rows).toEqual([{ id: 1 }])
    } finally {
      await db.close()
      await pg.close()
    }
  })

  it('closing waits for the calls already queued, and later calls are CLOSED', async () => {
    const pg = await openPGlite({ loadDataDir: await templateBlob(), cacheMB: 4 })
    const db = durableDb(pg)
    const memory = await createEngine({ db, indexing: 'manual' })
    const turns = Array.from({ length: 5 }, (_, i) => memory.recordTurn({ conversationId: 'c', user: `q${i}`, agent: `a${i}` }))
    await memory.stopIndexing()
    await db.close()
    await pg.close()
    const settled = await Promise.allSettled(turns)
    expect(settled.map((s) => s.status)).toEqual(Array(5).fill('fulfilled'))
    await expect(memory.stats()).rejects.toMatchObject({ code: 'CLOSED' })
  })
})
