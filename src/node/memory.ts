import { createEngine, type Engine } from '../core/engine.ts'
import type { OpenGraphDatabase } from '../core/cypher/age-graphs.ts'
import type { Backend, Db } from '../core/kernel/db.ts'
import type { WriteLock } from '../core/kernel/write-turns.ts'
import { openGraphDatabase } from './graph-database.ts'
import { engineOptions, type OpenMemoryOptions } from './options.ts'

export type NodeMemory = Engine & {
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** What `memoryOver` does with the database around the engine. */
export interface MemoryHooks {
  /** Wraps the engine's view of the database (the data folder's lock). */
  guard?: (db: Db) => Db
  /** Ends the database once the engine has stopped, or has failed to start. */
  closeDatabase: () => Promise<void>
  /** Runs last, whether closing succeeded or not. */
  release?: () => void
  /** Opens the Cypher graphs' database (default: `openGraphDatabase` with the bundled template). */
  graphDatabase?: OpenGraphDatabase
  /** What hosts the database (default `pglite`). */
  backend?: Backend
  /** The lock write calls take turns on, where several processes write the database. */
  writeLock?: WriteLock
}

/** The engine's database, with a `close` that lets the calls in flight end first (`durableDb`). */
export type ClosingDb = Db & { close(): Promise<void> }

/**
 * The engine over an open database (`durableDb` of a PGlite, or a server's), as `openMemory`
 * starts it. Its `close` stops the engine's background work, lets the calls in flight end, then
 * closes the database through `hooks`.
 */
export async function memoryOver(db: ClosingDb, options: OpenMemoryOptions, hooks: MemoryHooks): Promise<NodeMemory> {
  let engine: Engine
  try {
    engine = await createEngine({
      db: hooks.guard ? hooks.guard(db) : db,
      ...engineOptions(options),
      ...(hooks.backend ? { backend: hooks.backend } : {}),
      ...(hooks.writeLock ? { writeLock: hooks.writeLock } : {}),
      graphDatabase: hooks.graphDatabase ?? (() => openGraphDatabase()),
    })
  } catch (error) {
    try {
      await hooks.closeDatabase()
    } finally {
      hooks.release?.()
    }
    throw error
  }
  let closing: Promise<void> | undefined
  const close = () =>
    (closing ??= (async () => {
      try {
        await engine.stopIndexing()
        await db.close()
        await hooks.closeDatabase()
      } finally {
        hooks.release?.()
      }
    })())
  return Object.assign(engine, { close, [Symbol.asyncDispose]: close })
}
