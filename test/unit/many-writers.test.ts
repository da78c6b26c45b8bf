import { setTimeout as sleep } from 'node:timers/promises'
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

  it('two processes counting the waiting keyword terms at once count each chunk once', async () => {
    await using memory = await openMemory({ postgres: database.url, indexing: 'manual', statistics: 'manual' })
    for (let i = 0; i < 5; i++) {
      await memory.recordTurn({ conversationId: 'c', scope: { userId: 'ann' }, user: `We send invoice ${i} on Fridays`, agent: 'Noted.' })
    }
    const [first, second, watcher] = [new pg.Client(database.url), new pg.Client(database.url), new pg.Client(database.url)]
    await Promise.all([first.connect(), second.connect(), watcher.connect()])
    try {
      await first.query('BEGIN')
      await first.query('SELECT engram_keyword_stats_apply()')
      const counting = second.query('SELECT engram_keyword_stats_apply()')
      // The second count waits for the first's transaction before it ends.
      const waiting = async () =>
        (
          await watcher.query<{ wait_event_type: string | null }>(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [
            (second as unknown as { processID: number }).processID,
          ])
        ).rows[0]?.wait_event_type === 'Lock'
      while (!(await waiting())) await sleep(10)
      await first.query('COMMIT')
      await counting
      const kept = await watcher.query(`SELECT tenant_id, lexeme, sensitivity, df FROM term_stats ORDER BY 1, 2, 3`)
      const counted = await watcher.query(
        `SELECT c.tenant_id, u.lexeme, c.sensitivity, count(*)::int AS df
         FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) u GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      )
      expect(kept.rows.length).toBeGreaterThan(5)
      expect(kept.rows).toEqual(counted.rows)
    } finally {
      await Promise.all([first.end(), second.end(), watcher.end()])
    }
  })
})
