import { describe, expect, it } from 'vitest'
import { poolCounts } from '../support/database-pool.ts'
import { createTestEmbedder } from '../support/embedder.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestMemory } from '../support/memory.ts'

/** Every table's row count, and the indexes, sequences and planner statistics of the database. */
async function contents(db: Awaited<ReturnType<typeof openTestEngine>>['db']) {
  const tables = await db.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
  const rows: Record<string, number> = {}
  for (const { t } of tables.rows) rows[t] = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${t}"`)).rows[0]?.n ?? -1
  const indexes = await db.query(`SELECT indexname FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1`)
  const sequences = await db.query(`SELECT sequencename, last_value FROM pg_sequences ORDER BY 1`)
  const statistics = await db.query(`SELECT count(*)::int AS n FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid WHERE c.relnamespace = 'public'::regnamespace`)
  return { rows, indexes: indexes.rows, sequences: sequences.rows, statistics: statistics.rows }
}

/** Bytes in the database's write-ahead log folder. */
async function walBytes(db: Awaited<ReturnType<typeof openTestEngine>>['db']): Promise<number> {
  const { rows } = await db.query<{ bytes: number }>('SELECT coalesce(sum(size), 0)::float8 AS bytes FROM pg_ls_waldir()')
  return rows[0]?.bytes ?? 0
}

describe('test databases', () => {
  it('a database handed back is wiped to the template before the next test gets it, and the old handle is closed', async () => {
    const fresh = await openTestEngine()
    const before = await contents(fresh.db)
    await fresh[Symbol.asyncDispose]()

    const used = await openTestEngine({ embedder: createTestEmbedder() })
    for (let i = 0; i < 60; i++) {
      await used.engine.recordTurn({ conversationId: `c${i % 7}`, scope: { userId: 'ann' }, user: `question ${i} about invoices`, agent: `answer ${i}` })
    }
    await used.engine.remember({ content: 'Ann prefers tabs', category: 'preference', userId: 'ann' })
    await used.engine.kv.put('user:ann', 'settings', 'theme', { value: 'dark' })
    await used.engine.waitForIndex()
    await used.db.exec('ANALYZE; SET enable_seqscan = off')
    expect(await contents(used.db)).not.toEqual(before)
    const { closed } = poolCounts()
    await used[Symbol.asyncDispose]()
    expect(poolCounts().closed).toBe(closed)
    expect(used.db.closed).toBe(true)
    await expect(used.db.query('SELECT 1')).rejects.toThrow(/handed back/)

    const { reused } = poolCounts()
    await using next = await openTestEngine()
    expect(poolCounts().reused).toBe(reused + 1)
    expect(await contents(next.db)).toEqual(before)
    expect((await next.db.query(`SELECT current_setting('enable_seqscan') AS s`)).rows).toEqual([{ s: 'on' }])
  })

  it('a database whose log has grown comes back with its log as small as a fresh one', async () => {
    const first = await openTestEngine()
    const fresh = await walBytes(first.db)
    await first[Symbol.asyncDispose]()
    const used = await openTestEngine()
    // Several MiB of log and nothing else: each message is a record of its own.
    await used.db.exec(`SELECT pg_logical_emit_message(false, 'test', repeat('x', 1048576)) FROM generate_series(1, 6)`)
    expect(await walBytes(used.db)).toBeGreaterThan(fresh + 5 * 2 ** 20)
    const { closed } = poolCounts()
    await used[Symbol.asyncDispose]()
    expect(poolCounts().closed).toBe(closed)
    await using next = await openTestEngine()
    // One segment more at most: the checkpoint's own record may start the next.
    expect(await walBytes(next.db)).toBeLessThanOrEqual(fresh + 2 ** 20)
  })

  it('a closed test memory hands its database on, and the next memory starts empty', async () => {
    const first = await openTestMemory()
    await first.recordTurn({ conversationId: 'c', scope: { userId: 'ann' }, user: 'hello', agent: 'hi' })
    await first.close()
    const { reused } = poolCounts()
    await using second = await openTestMemory()
    expect(poolCounts().reused).toBe(reused + 1)
    expect((await second.graph.conversation('c')).events).toEqual([])
  })
})
