import { createEngine, type EngineOptions } from '../../src/core/engine.ts'
import { giveBackDatabase, takeDatabase } from './database-pool.ts'
import { skipOnServer } from './backend.ts'
import { newTestDb } from './memory.ts'

/**
 * A fresh database and an engine over it, for tests that also need raw SQL (triggers,
 * direct UPDATEs) or several engines over one database.
 *
 * The test sees the database through a handle that answers as a closed one once disposed, so
 * nothing left of this test (an engine it did not stop, a late timer) reaches the next test
 * that gets the same database from the pool.
 */
export async function openTestEngine(options: Omit<EngineOptions, 'db'> = {}) {
  skipOnServer()
  const pg = await takeDatabase(() => newTestDb())
  let disposed = false
  const db = new Proxy(pg, {
    // PGlite's methods use private fields: they run on the instance, not on the handle. Once
    // disposed, the handle answers as a closed database does.
    get: (target, key): unknown => {
      if (disposed && key === 'closed') return true
      const value: unknown = Reflect.get(target, key, target)
      if (typeof value !== 'function') return value
      return disposed ? () => Promise.reject(new Error('this test database was handed back to the pool')) : value.bind(target)
    },
  })
  let engine
  try {
    engine = await createEngine({ db, ...options })
  } catch (error) {
    disposed = true
    await giveBackDatabase(pg)
    throw error
  }
  let disposing: Promise<void> | undefined
  return {
    db,
    engine,
    [Symbol.asyncDispose]: () =>
      (disposing ??= (async () => {
        if (!pg.closed) await engine.stopIndexing()
        disposed = true
        await giveBackDatabase(pg)
      })()),
  }
}
