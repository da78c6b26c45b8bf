import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import pg from 'pg'
import { inject } from 'vitest'
import { type NodeMemory, type OpenMemoryOptions, openMemory } from '../../src/node/index.ts'
import { databaseUrl, SERVER_TEMPLATE } from './postgres-server.ts'
import { giveBackDatabase, takeDatabase } from './database-pool.ts'
import { newTestDb } from './memory.ts'

/** The test cluster, or null where PostgreSQL is not installed (the server tests are skipped). */
export const testPostgresUrl = (): string | null => inject('postgresUrl')

let admin: pg.Pool | undefined
let made = 0

/**
 * A new database copied from the migrated template, dropped by `drop`. Its name is unique in
 * the run: the process id and a count.
 */
export async function makeServerDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const url = testPostgresUrl()
  if (url === null) throw new Error('PostgreSQL is not installed: the server tests cannot run')
  admin ??= new pg.Pool({ connectionString: url, max: 2 })
  const pool = admin
  const name = `engram_test_${process.pid}_${++made}`
  await pool.query(`CREATE DATABASE ${name} TEMPLATE ${SERVER_TEMPLATE}`)
  return {
    url: databaseUrl(url, name),
    drop: async () => {
      await pool.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    },
  }
}

/**
 * A fresh memory through the server adapter: on a database of its own on the test server
 * (`postgres`), or on a test PGlite served over the PostgreSQL protocol (`wire`). Closing it
 * drops the database, or stops the serving and hands the PGlite back to the pool.
 */
export async function openServerTestMemory(
  backend: 'postgres' | 'wire',
  options: Omit<OpenMemoryOptions, 'postgres'> = {},
): Promise<NodeMemory> {
  const database = backend === 'postgres' ? await makeServerDatabase() : await serveTestDatabase()
  let memory: NodeMemory
  try {
    memory = await openMemory({ ...options, postgres: database.url })
  } catch (error) {
    await database.drop()
    throw error
  }
  const close = memory.close.bind(memory)
  let closing: Promise<void> | undefined
  const closeAndDrop = () => (closing ??= close().finally(() => database.drop()))
  return Object.assign(memory, { close: closeAndDrop, [Symbol.asyncDispose]: closeAndDrop })
}

/** A test PGlite (from the pool) served over the PostgreSQL protocol on a free local port. */
async function serveTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const pglite = await takeDatabase(() => newTestDb())
  const server = new PGLiteSocketServer({ db: pglite, port: 0, maxConnections: 2 })
  await server.start()
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    drop: async () => {
      await server.stop()
      await giveBackDatabase(pglite)
    },
  }
}
