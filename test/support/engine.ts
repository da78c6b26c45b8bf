import { createEngine, type EngineOptions } from '../../src/core/engine.ts'
import { openTestDb } from './memory.ts'

/**
 * A fresh database and an engine over it, for tests that also need raw SQL (triggers,
 * direct UPDATEs) or several engines over one database.
 */
export async function openTestEngine(options: Omit<EngineOptions, 'db'> = {}) {
  const db = await openTestDb()
  const engine = await createEngine({ db, ...options })
  return {
    db,
    engine,
    async [Symbol.asyncDispose]() {
      if (!db.closed) await db.close()
    },
  }
}
