import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openMemory } from '../../src/node/index.ts'
import { checkLoad, LOAD_CALLS } from '../support/load.ts'
import { runWriterProcesses } from '../support/load-run.ts'
import { makeServerDatabase, testPostgresUrl } from '../support/server-memory.ts'

// The full run, 60 s with figures against one PGlite, is bench/many-writers.ts.
describe.skipIf(testPostgresUrl() === null)('several processes writing one PostgreSQL database', () => {
  let database: Awaited<ReturnType<typeof makeServerDatabase>>
  beforeEach(async () => {
    database = await makeServerDatabase()
  })
  afterEach(async () => {
    await database.drop()
  })

  it('4 processes × 10 agents: no error, nothing lost or doubled, turns and revisions in order, every change listed once', async () => {
    await using follower = await openMemory({ postgres: database.url, indexing: 'manual' })
    let since = new Date(0).toISOString()
    const listed: string[] = []
    const follow = async () => {
      const changes = await follower.diffSince(since)
      listed.push(...changes.events.map((e) => e.id))
      since = changes.until
    }
    const report = await runWriterProcesses(database.url, {
      processes: 4,
      agents: 10,
      seconds: 5,
      during: async (stop) => {
        while (!stop.aborted) await follow()
      },
    })
    await follow()
    expect(report.errors).toEqual([])
    for (const call of LOAD_CALLS) expect(report.ms[call].length).toBeGreaterThan(0)
    const client = new pg.Client(database.url)
    await client.connect()
    try {
      const query = async <T>(sql: string) => (await client.query(sql)).rows as T[]
      expect(await checkLoad(query, report)).toEqual([])
      const events = await query<{ id: string }>('SELECT id FROM events ORDER BY id')
      // A change list cut while other processes wrote missed none of their events, and listed none twice.
      expect([...listed].sort()).toEqual(events.map((e) => e.id))
    } finally {
      await client.end()
    }
  }, 90_000)
})
