import { describe, expect, it, vi } from 'vitest'
import type { Db } from '../../src/core/kernel/db.ts'
import { createEngine } from '../../src/core/engine.ts'
import { ANALYZED_TABLES, KEYWORDS_BEFORE_READ } from '../../src/core/maintenance/planner-statistics.ts'
import type { EngineErrorEvent } from '../../src/core/maintenance/indexer.ts'
import { KEYWORD_PENDING_BOUND } from '../../src/core/db/schema/0009-keyword-pending.ts'
import { BULK_VECTOR_ROWS } from '../../src/core/db/vectors.ts'
import { steppingClock } from '../support/clock.ts'
import { createTestEmbedder } from '../support/embedder.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestDb } from '../support/memory.ts'
import { say } from '../support/events.ts'

interface Queryable {
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>
}

/** Document frequencies as counted afresh from every chunk. */
const COUNTED = `SELECT c.tenant_id, u.lexeme, c.sensitivity, count(*)::int AS df
  FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) u GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`

/** The chunks term_stats has not counted yet. */
const WAITING = `SELECT * FROM chunks WHERE stats_seq > (SELECT upto FROM keyword_counted)`

/** What term_stats holds and what the chunks it has not counted yet add to it. */
const KEPT_AND_PENDING = `SELECT tenant_id, lexeme, sensitivity, sum(df)::int AS df FROM (
    SELECT tenant_id, lexeme, sensitivity, df FROM term_stats
    UNION ALL
    SELECT c.tenant_id, u.lexeme, c.sensitivity, count(*) FROM (${WAITING}) c CROSS JOIN LATERAL unnest(c.tsv) u GROUP BY 1, 2, 3
  ) x GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`

const pendingChunks = async (db: Queryable) => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${WAITING}) c`)).rows[0]?.n

/**
 * The keyword statistics as kept by the triggers (with the chunks waiting to be counted), and
 * as counted afresh from the chunks; then the same once the waiting chunks are counted in.
 */
async function statsAgree(db: Queryable): Promise<void> {
  const counted = await db.query(COUNTED)
  expect((await db.query(KEPT_AND_PENDING)).rows).toEqual(counted.rows)
  await db.query(`SELECT engram_keyword_stats_apply()`)
  expect(await pendingChunks(db)).toBe(0)
  expect((await db.query(`SELECT tenant_id, lexeme, sensitivity, df FROM term_stats ORDER BY 1, 2, 3`)).rows).toEqual(counted.rows)
  const keptTotals = await db.query(`SELECT tenant_id, sensitivity, chunks::int, lexemes::int FROM chunk_stats ORDER BY 1, 2`)
  const countedTotals = await db.query(
    `SELECT tenant_id, sensitivity, count(*)::int AS chunks, sum(length(tsv))::int AS lexemes
     FROM chunks GROUP BY 1, 2 ORDER BY 1, 2`,
  )
  expect(keptTotals.rows).toEqual(countedTotals.rows)
}

describe('keyword statistics', () => {
  it('follow every write, forget and import, per tenant and sensitivity', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual' })
    const { db, engine } = t
    await engine.record(say('c1', 'The login page fails when the password is empty'))
    await engine.record(say('c1', 'Password rules: twelve characters', { sensitivity: 'high' }))
    await engine.record({ ...say('c2', 'Deploy the login fix on Friday'), scope: { tenantId: 'acme', conversationId: 'c2' } })
    await engine.recordTurn({
      conversationId: 'c3',
      user: 'Why is the login slow?',
      agent: 'The session cache misses on every login.',
      procedures: [{ tool: 'run_tests', args: { filter: 'login' }, output: 'PASS login.test.ts' }],
    })
    await statsAgree(db)
    expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM term_stats`)).rows[0]?.n).toBeGreaterThan(10)

    await engine.forget({ conversationId: 'c1' })
    await statsAgree(db)

    const file = await engine.exportFile()
    await engine.importFile(file, { mode: 'replace' })
    await statsAgree(db)
    await engine.importFile(file, { mode: 'merge' })
    await statsAgree(db)
    // Import gathers GIN entries in the pending list, then merges it and turns it off again.
    const gin = await db.query<{ options: string[] | null }>(`SELECT reloptions AS options FROM pg_class WHERE relname = 'chunks_tsv'`)
    expect(gin.rows[0]?.options).toEqual(['fastupdate=off'])
    const found = await engine.search('login', { mode: 'keyword' })
    expect(found.length).toBeGreaterThan(0)
  })

  it('are built for the chunks already there when a memory is migrated', async () => {
    const db = await openTestDb()
    try {
      const engine = await createEngine({ db, indexing: 'manual' })
      await engine.record(say('c1', 'Rotate the signing keys every quarter'))
      await engine.stopIndexing()
      // As a memory from before the statistics existed: empty tables, then the backfill again.
      // (The backfill counts every chunk: none waits any longer.)
      await db.exec(`DELETE FROM term_stats; DELETE FROM chunk_stats; UPDATE keyword_counted SET upto = (SELECT max(stats_seq) FROM chunks)`)
      const { keywordStats } = await import('../../src/core/db/schema/0004-keyword-stats.ts')
      const backfill = keywordStats.slice(keywordStats.indexOf('INSERT INTO term_stats (tenant_id'))
      await db.exec(backfill)
      await statsAgree(db)
    } finally {
      await db.close()
    }
  })

  it("refuse a change to a chunk's text, tenant or sensitivity", async () => {
    await using t = await openTestEngine({ indexing: 'manual' })
    await t.engine.record(say('c1', 'Rotate the signing keys every quarter'))
    await expect(t.db.query(`UPDATE chunks SET text = 'something else'`)).rejects.toThrow(/fixed/)
    await expect(t.db.query(`UPDATE chunks SET sensitivity = 'high'`)).rejects.toThrow(/fixed/)
    await expect(t.db.query(`UPDATE chunks SET tenant_id = 'other'`)).rejects.toThrow(/fixed/)
    await statsAgree(t.db)
  })

  it('rank by BM25 with each term counted as often as it occurs', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', scoring: { neighbour: 0, actorMatch: 0 } })
    const texts = ['apple apple apple banana', 'apple cherry', 'cherry durian elderberry fig']
    for (const [n, text] of texts.entries()) await t.engine.record(say(`c${n}`, text))
    const { rows } = await t.db.query<{ tsv: string }>(`SELECT tsv::text FROM chunks ORDER BY created_at`)
    expect(rows.map((r) => r.tsv)).toEqual([
      "'appl':1,2,3 'banana':4",
      "'appl':1 'cherri':2",
      "'cherri':1 'durian':2 'elderberri':3 'fig':4",
    ])
    // BM25 (k1 1.2, b 0.75); a chunk's length is its number of distinct terms.
    const n = 3
    const avgdl = (2 + 2 + 4) / 3
    const term = (tf: number, df: number, dl: number) =>
      (Math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf * 2.2) / (tf + 1.2 * (1 - 0.75 + (0.75 * dl) / avgdl))
    const hits = await t.engine.search('apple banana', { mode: 'keyword' })
    expect(hits.map((h) => h.text)).toEqual(texts.slice(0, 2))
    expect(hits[0]?.explain.keyword?.score).toBeCloseTo(term(3, 2, 2) + term(1, 1, 2), 10)
    expect(hits[1]?.explain.keyword?.score).toBeCloseTo(term(1, 2, 2), 10)
  })

  it("give a reader the same scores whatever chunks it may not see hold", async () => {
    const visible = ['The invoice export times out for large customers', 'Customers ask for invoice PDFs', 'The cache is warm']
    const scores = async (withHidden: boolean) => {
      await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual' })
      for (const text of visible) await t.engine.record(say('c1', text))
      if (withHidden) {
        for (let i = 0; i < 20; i++) await t.engine.record(say('c2', `invoice ${i} for the board`, { sensitivity: 'high' }))
      }
      const hits = await t.engine.search('invoice export', { channel: 'public', mode: 'keyword' })
      return hits.map((h) => [h.text, h.explain.keyword?.score])
    }
    const alone = await scores(false)
    expect(alone.length).toBeGreaterThanOrEqual(2)
    expect(await scores(true)).toEqual(alone)
  })

  it("count a write's chunks later, all at once; a search meanwhile scores as if they were counted", async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', statistics: 'manual' })
    for (const text of ['The invoice export times out', 'Invoice PDFs for customers']) await t.engine.record(say('c1', text))
    await t.engine.refreshStatistics()
    for (const text of ['The cache is warm', 'Export the invoice again', 'An invoice, an export']) await t.engine.record(say('c1', text))
    // Two chunks counted, three waiting.
    expect(await pendingChunks(t.db)).toBe(3)
    const df = await t.db.query<{ df: number }>(`SELECT df FROM term_stats WHERE lexeme = 'invoic'`)
    expect(df.rows).toEqual([{ df: 2 }])
    const ranked = async () =>
      (await t.engine.search('invoice export', { mode: 'keyword' })).map((h) => [h.text, h.explain.keyword?.score])
    const waiting = await ranked()
    expect(waiting.length).toBeGreaterThanOrEqual(4)
    await t.engine.refreshStatistics()
    expect(await pendingChunks(t.db)).toBe(0)
    expect(await ranked()).toEqual(waiting)
  })

  it(`are counted within the write that leaves ${KEYWORD_PENDING_BOUND} chunks waiting, and when the writes pause`, async () => {
    {
      await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', statistics: 'manual' })
      // One chunk each.
      for (let i = 0; i < KEYWORD_PENDING_BOUND + 10; i++) await t.engine.record(say('c1', `Note ${i} on the release`))
      expect(await pendingChunks(t.db)).toBe(10)
      await statsAgree(t.db)
    }
    {
      await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', indexingPause: { quietMs: 500, maxWaitMs: 5_000 } })
      await t.engine.record(say('c1', 'Rotate the signing keys every quarter'))
      // Waiting until the writes have paused for half a second.
      expect(await pendingChunks(t.db)).toBe(1)
      await vi.waitFor(async () => expect(await pendingChunks(t.db)).toBe(0), { timeout: 5_000, interval: 20 })
      await statsAgree(t.db)
    }
  })

  it(`are counted before a search once writes that never pause have changed ${KEYWORDS_BEFORE_READ} rows`, async () => {
    // Writes never pause for a minute here: only a search counts them sooner.
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', indexingPause: { quietMs: 60_000, maxWaitMs: 60_000 } })
    for (let i = 0; i < KEYWORDS_BEFORE_READ - 1; i++) await t.engine.record(say('c1', `Note ${i} on the release`))
    await t.engine.search('release', { mode: 'keyword' })
    expect(await pendingChunks(t.db)).toBe(KEYWORDS_BEFORE_READ - 1)
    await t.engine.record(say('c1', 'One more note on the release'))
    const hits = await t.engine.search('release', { mode: 'keyword' })
    expect(await pendingChunks(t.db)).toBe(0)
    expect(hits.length).toBeGreaterThan(0)
    await statsAgree(t.db)
  })
})

describe('keyword candidates', () => {
  it('a rare term finds its chunk however many chunks hold the common one', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual' })
    const { engine } = t
    await engine.record(say('old', 'The flaky migration test fails on Mondays'))
    // 250 newer chunks with the common term: more than the 200 a term brings in on its own.
    for (let i = 0; i < 250; i++) await engine.record(say(`c${i % 5}`, `The test run ${i} passed`))
    const hits = await engine.search('flaky test', { mode: 'keyword', limit: 5 })
    expect(hits[0]?.text).toBe('The flaky migration test fails on Mondays')
    // The common term alone still finds chunks, newest first among equals.
    const common = await engine.search('test', { mode: 'keyword', limit: 3 })
    expect(common).toHaveLength(3)
    expect(common.every((h) => h.explain.keyword !== null)).toBe(true)
    // A chunk holding every term of the query is found even when each term is common.
    await engine.record(say('old2', 'unrelated words only'))
    const both = await engine.search('test passed', { mode: 'keyword', limit: 1 })
    expect(both[0]?.text).toMatch(/^The test run \d+ passed$/)
  })

  it('an old chunk holding two common terms of the query is found, though it is not among the newest of either', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual' })
    const { engine } = t
    const old = await engine.record(say('old', 'alpha and beta notes from the kickoff'))
    // 210 newer chunks for each common term, none with both: more than the 200 a branch keeps.
    for (let i = 0; i < 210; i++) {
      await engine.record(say(`a${i % 3}`, `alpha draft ${i}`))
      await engine.record(say(`b${i % 3}`, `beta draft ${i}`))
    }
    const rare = await engine.record(say('g', 'gamma rollout plan'))
    const hits = await engine.search('alpha beta gamma', { mode: 'keyword', limit: 5 })
    // The rare term's chunk first (its weight is the highest), then the one with two common terms.
    expect(hits.slice(0, 2).map((h) => h.eventId)).toEqual([rare.eventId, old.eventId])
    // A chunk with one common term and no other is no candidate when another term is rare…
    expect(hits).toHaveLength(2)
    // …but with only common terms, the rarest brings its newest chunks: when it is the only
    // term, and when fewer than 200 chunks hold two of them (here one does).
    const common = await engine.search('alpha', { mode: 'keyword', limit: 3 })
    expect(common).toHaveLength(3)
    expect(common.every((h) => h.text.startsWith('alpha draft') && h.explain.keyword !== null)).toBe(true)
    const two = await engine.search('alpha beta', { mode: 'keyword', limit: 5, weights: { neighbour: 0 } })
    expect(two[0]?.eventId).toBe(old.eventId)
    expect(two).toHaveLength(5)
    expect(two.slice(1).every((h) => h.text.startsWith('alpha draft'))).toBe(true)
  })

  it('finds old chunks holding any pair of three common terms, the pair of the two most common too', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual' })
    const { engine } = t
    const pairs = []
    for (const text of ['alpha beta kickoff', 'alpha delta kickoff', 'beta delta kickoff']) pairs.push((await engine.record(say('old', text))).eventId)
    // More newer chunks of each term alone than a branch keeps, delta the most common.
    for (const [word, n] of [['alpha', 205], ['beta', 210], ['delta', 215]] as const) {
      for (let i = 0; i < n; i++) await engine.record(say(`${word}${i % 3}`, `${word} draft ${i}`))
    }
    const hits = await engine.search('alpha beta delta', { mode: 'keyword', limit: 3, weights: { neighbour: 0 } })
    expect(hits.map((h) => h.eventId).sort()).toEqual([...pairs].sort())
  })

  it('with only common terms and enough chunks holding two of them, a chunk holding one brings nothing', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual' })
    const { engine } = t
    for (let i = 0; i < 10; i++) await engine.record(say('flakes', `test flake ${i}`))
    for (let i = 0; i < 250; i++) await engine.record(say(`c${i % 5}`, `The test run ${i} passed`))
    // The newest chunk, holding the rarer term only: alone, the best BM25 match of all.
    const solo = await engine.record(say('solo', Array(20).fill('passed').join(' ')))
    const options = { mode: 'keyword', limit: 10, weights: { neighbour: 0 } } as const
    const alone = await engine.search('passed', options)
    expect(alone[0]?.eventId).toBe(solo.eventId)
    const hits = await engine.search('test passed', options)
    expect(hits).toHaveLength(10)
    expect(hits.every((h) => /^The test run \d+ passed$/.test(h.text))).toBe(true)
  })

  it('a query of words no chunk holds, or of stop words only, finds nothing by keywords', async () => {
    await using t = await openTestEngine({ indexing: 'manual' })
    await t.engine.record(say('c1', 'Rotate the signing keys every quarter'))
    expect(await t.engine.search('zebra', { mode: 'keyword' })).toEqual([])
    expect(await t.engine.search('the and of', { mode: 'keyword' })).toEqual([])
  })
})

/** A database holding 20 notes whose tables were never analysed. */
async function neverAnalysed() {
  const db = await openTestDb()
  const first = await createEngine({ db, indexing: 'manual', statistics: 'manual' })
  for (let i = 0; i < 20; i++) await first.record(say('c1', `note ${i}`))
  await first.stopIndexing()
  return db
}

describe('planner statistics', () => {
  const analysed = async (db: Queryable) =>
    (await db.query<{ n: number }>(`SELECT reltuples::float8 AS n FROM pg_class WHERE oid = 'chunks'::regclass`)).rows[0]?.n ?? -1

  it('are refreshed once writes have changed enough of the memory, before the next search at the latest', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual' })
    expect(await analysed(t.db)).toBeLessThan(0)
    for (let i = 0; i < 130; i++) {
      await t.engine.recordTurn({ conversationId: `c${i % 7}`, user: `question ${i}`, agent: `answer ${i}` })
    }
    await t.engine.search('question')
    expect(await analysed(t.db)).toBeGreaterThanOrEqual(260)
    // …and the write-ahead log is checkpointed with them, so it does not grow without end.
    // Its segments are 1 MiB (initdb's parameter), and the checkpoint keeps a few of them.
    const wal = await t.db.query<{ bytes: number }>(`SELECT sum(size)::int AS bytes FROM pg_ls_waldir()`)
    expect(wal.rows[0]?.bytes).toBeLessThanOrEqual(8 * 2 ** 20)
    expect((await t.db.query<{ wal_segment_size: string }>(`SHOW wal_segment_size`)).rows[0]?.wal_segment_size).toBe('1MB')
    expect((await t.db.query<{ max_wal_size: string }>(`SHOW max_wal_size`)).rows[0]?.max_wal_size).toBe('64MB')
  })

  it('a search goes on when a refresh is due but the statistics are near: the refresh waits for the pause', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', indexingPause: { quietMs: 200, maxWaitMs: 60_000 } })
    const turn = (i: number) => t.engine.recordTurn({ conversationId: `c${i % 7}`, user: `question ${i}`, agent: `answer ${i}` })
    for (let i = 0; i < 600; i++) await turn(i)
    // Far off (never analysed): the search refreshes first.
    await t.engine.search('question')
    const first = await analysed(t.db)
    expect(first).toBeGreaterThanOrEqual(1200)
    // Due again, but the statistics still describe most of the memory: the search goes on.
    for (let i = 600; i < 730; i++) await turn(i)
    await t.engine.search('question')
    expect(await analysed(t.db)).toBe(first)
    await vi.waitFor(async () => expect(await analysed(t.db)).toBeGreaterThanOrEqual(1460), { timeout: 5_000, interval: 50 })
  })

  it('the automatic refresh waits for a pause in the writes, and for maxWaitMs at most', async () => {
    // Writes a few milliseconds apart, as a conversation's come: timers get their turn between them.
    const gap = () => new Promise((resolve) => setTimeout(resolve, 5))
    const turn = (t: Awaited<ReturnType<typeof openTestEngine>>, i: number) =>
      t.engine.recordTurn({ conversationId: `c${i % 7}`, user: `question ${i}`, agent: `answer ${i}` })
    {
      await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', indexingPause: { quietMs: 1_000, maxWaitMs: 60_000 } })
      for (let i = 0; i < 130; i++) {
        await turn(t, i)
        await gap()
      }
      // Due for some turns already, but the writes have not paused.
      expect(await analysed(t.db)).toBeLessThan(0)
      await vi.waitFor(async () => expect(await analysed(t.db)).toBeGreaterThanOrEqual(260), { timeout: 5_000, interval: 50 })
    }
    {
      // Writes that never pause still get their refresh, maxWaitMs after it fell due.
      await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', indexingPause: { quietMs: 60_000, maxWaitMs: 300 } })
      let turns = 0
      while ((await analysed(t.db)) < 0 && turns < 1_000) {
        await turn(t, turns++)
        await gap()
      }
      expect(await analysed(t.db)).toBeGreaterThanOrEqual(260)
      expect(turns).toBeLessThan(1_000)
    }
  })

  it('a refresh vacuums the tables: the dead versions the indexer leaves behind are gone', async () => {
    await using t = await openTestEngine({ now: steppingClock(), embedder: createTestEmbedder(), indexing: 'manual', statistics: 'manual' })
    for (let i = 0; i < 40; i++) {
      await t.engine.recordTurn({ conversationId: `c${i % 3}`, user: `question ${i}`, agent: `answer ${i}` })
    }
    await t.engine.indexNow()
    // Every chunk was written twice: once by the turn, once with its vector.
    const stats = async () => {
      // Single-user Postgres reports its counters when asked to.
      await t.db.query('SELECT pg_stat_force_next_flush()')
      return (
        await t.db.query<{ dead: number; vacuums: number }>(
          `SELECT n_dead_tup::int AS dead, vacuum_count::int AS vacuums FROM pg_stat_user_tables WHERE relname = 'chunks'`,
        )
      ).rows[0]
    }
    expect(await stats()).toEqual({ dead: 80, vacuums: 0 })
    await t.engine.refreshStatistics()
    expect(await stats()).toEqual({ dead: 0, vacuums: 1 })
  })

  it('a refresh analyses one table per statement: a search that comes meanwhile waits for one at most', async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', statistics: 'manual' })
    for (let i = 0; i < 20; i++) {
      await t.engine.recordTurn({ conversationId: `c${i % 3}`, user: `question ${i}`, agent: `answer ${i}` })
    }
    const inner: Db = t.db
    const order: string[] = []
    let searching: Promise<unknown> | undefined
    const watched: Db = {
      query: (sql, params, options) => inner.query(sql, params, options),
      exec(sql) {
        order.push(sql)
        // A search asked for as the first table's sample is taken.
        if (sql.startsWith('ANALYZE') && !searching) searching = engine.search('question')
        return inner.exec(sql)
      },
      transaction: (fn) => (order.push('search'), inner.transaction(fn)),
    }
    const engine = await createEngine({ db: watched, indexing: 'manual', statistics: 'manual' })
    order.length = 0
    await engine.refreshStatistics()
    await searching
    const analyses = order.filter((sql) => sql.startsWith('ANALYZE'))
    expect(analyses).toHaveLength(ANALYZED_TABLES.length)
    expect(analyses.every((sql) => /^ANALYZE "\w+"$/.test(sql))).toBe(true)
    expect(order.indexOf('search')).toBeLessThan(order.indexOf(analyses[1]!))
    await engine.stopIndexing()
  })

  it("in 'manual' mode wait for refreshStatistics()", async () => {
    await using t = await openTestEngine({ now: steppingClock(), indexing: 'manual', statistics: 'manual' })
    for (let i = 0; i < 130; i++) {
      await t.engine.recordTurn({ conversationId: `c${i % 7}`, user: `question ${i}`, agent: `answer ${i}` })
    }
    await t.engine.search('question')
    expect(await analysed(t.db)).toBeLessThan(0)
    await t.engine.refreshStatistics()
    expect(await analysed(t.db)).toBeGreaterThanOrEqual(260)
  })

  it('a memory opened from files never analysed is analysed soon after opening', async () => {
    const db = await neverAnalysed()
    try {
      expect(await analysed(db)).toBeLessThan(0)
      const second = await createEngine({ db, indexing: 'manual' })
      await second.search('note')
      expect(await analysed(db)).toBe(20)
      await second.stopIndexing()
    } finally {
      await db.close()
    }
  })

  it('…and without a search, at the first pause after opening', async () => {
    const db = await neverAnalysed()
    try {
      const second = await createEngine({ db, indexing: 'manual', indexingPause: { quietMs: 300 } })
      expect(await analysed(db)).toBeLessThan(0)
      await vi.waitFor(async () => expect(await analysed(db)).toBe(20), { timeout: 5_000, interval: 50 })
      await second.stopIndexing()
    } finally {
      await db.close()
    }
  })

  it('a memory whose statistics predate its vectors is analysed again soon after opening; one whose statistics are current is not', async () => {
    const db = await openTestDb()
    // What the planner believes: the share of chunks without a vector, and analyses so far.
    const believed = async () => {
      await db.query('SELECT pg_stat_force_next_flush()')
      const { rows } = await db.query<{ null_frac: number | null; analyses: number }>(
        `SELECT (SELECT null_frac FROM pg_stats WHERE tablename = 'chunks' AND attname = 'embed_model')::float8 AS null_frac,
                (SELECT analyze_count::int FROM pg_stat_user_tables WHERE relname = 'chunks') AS analyses`,
      )
      return rows[0]
    }
    try {
      const first = await createEngine({ db, embedder: createTestEmbedder(), indexing: 'manual', statistics: 'manual' })
      for (let i = 0; i < 260; i++) {
        await first.recordTurn({ conversationId: `c${i % 7}`, user: `question ${i}`, agent: `answer ${i}` })
      }
      // Analysed before the indexer ran, then closed after it and before the next refresh.
      await first.refreshStatistics()
      await first.indexNow()
      await first.stopIndexing()
      expect(await believed()).toEqual({ null_frac: 1, analyses: 1 })

      const second = await createEngine({ db, embedder: createTestEmbedder(), indexing: 'manual' })
      await second.search('question')
      expect(await believed()).toEqual({ null_frac: 0, analyses: 2 })
      await second.stopIndexing()

      const third = await createEngine({ db, embedder: createTestEmbedder(), indexing: 'manual' })
      await third.search('question')
      expect(await believed()).toEqual({ null_frac: 0, analyses: 2 })
      await third.stopIndexing()
    } finally {
      await db.close()
    }
  })

  it("a memory re-embedded by another model and closed before its refresh is analysed after opening, once the model is known", async () => {
    const db = await openTestDb()
    const models = async () => {
      const { rows } = await db.query<{ models: string | null }>(
        `SELECT most_common_vals::text AS models FROM pg_stats WHERE tablename = 'chunks' AND attname = 'embed_model'`,
      )
      return rows[0]?.models
    }
    // Every chunk re-embedded by `id` (manual statistics: no refresh follows), then closed.
    const reembed = async (id: string) => {
      const engine = await createEngine({ db, embedder: createTestEmbedder({ id }), indexing: 'manual', statistics: 'manual' })
      await engine.indexNow()
      await engine.stopIndexing()
    }
    try {
      const first = await createEngine({ db, embedder: createTestEmbedder({ id: 'model-a' }), indexing: 'manual', statistics: 'manual' })
      for (let i = 0; i < 260; i++) {
        await first.recordTurn({ conversationId: `c${i % 7}`, user: `question ${i}`, agent: `answer ${i}` })
      }
      await first.indexNow()
      await first.refreshStatistics()
      await first.stopIndexing()
      await reembed('model-b')
      expect(await models()).toBe('{model-a}')

      // The model is known at the open.
      const second = await createEngine({ db, embedder: createTestEmbedder({ id: 'model-b' }), indexing: 'manual' })
      await second.search('question')
      expect(await models()).toBe('{model-b}')
      await second.stopIndexing()

      // The model loads after the open.
      await reembed('model-c')
      expect(await models()).toBe('{model-b}')
      const third = await createEngine({
        db,
        embedder: new Promise((resolve) => setTimeout(() => resolve(createTestEmbedder({ id: 'model-c' })), 50)),
        indexing: 'manual',
        indexingPause: { quietMs: 100 },
      })
      await vi.waitFor(async () => expect(await models()).toBe('{model-c}'), { timeout: 5_000, interval: 50 })
      await third.stopIndexing()
    } finally {
      await db.close()
    }
  })

  it('a memory closed after many writes since its last refresh is analysed soon after opening', async () => {
    const db = await openTestDb()
    try {
      const first = await createEngine({ db, indexing: 'manual', statistics: 'manual' })
      for (let i = 0; i < 10; i++) await first.recordTurn({ conversationId: 'c1', user: `question ${i}`, agent: `answer ${i}` })
      await first.refreshStatistics()
      // 600 chunks more than the statistics know of: past the 500 rows that make a refresh due.
      for (let i = 10; i < 310; i++) await first.recordTurn({ conversationId: 'c1', user: `question ${i}`, agent: `answer ${i}` })
      await first.stopIndexing()
      expect(await analysed(db)).toBe(20)

      const second = await createEngine({ db, indexing: 'manual' })
      await second.search('question')
      expect(await analysed(db)).toBe(620)
      await second.stopIndexing()
    } finally {
      await db.close()
    }
  })

  it('an imported memory closed before its refresh is analysed soon after opening', async () => {
    const source = await openTestDb()
    const db = await openTestDb()
    try {
      const from = await createEngine({ db: source, embedder: createTestEmbedder(), indexing: 'manual', statistics: 'manual' })
      for (let i = 0; i < BULK_VECTOR_ROWS; i++) await from.record(say('c1', `note ${i}`))
      await from.indexNow()
      const file = await from.exportFile()
      await from.stopIndexing()

      const first = await createEngine({ db, embedder: createTestEmbedder(), indexing: 'manual', statistics: 'manual' })
      await first.importFile(file, { mode: 'replace' })
      await first.stopIndexing()
      const { rows } = await db.query<{ tuples: number; stats: number }>(
        `SELECT reltuples::float8 AS tuples, (SELECT count(*)::int FROM pg_stats WHERE tablename = 'chunks') AS stats
         FROM pg_class WHERE oid = 'chunks'::regclass`,
      )
      // The import's index build counted the rows, but nothing analysed them.
      expect(rows[0]).toEqual({ tuples: BULK_VECTOR_ROWS, stats: 0 })

      const second = await createEngine({ db, embedder: createTestEmbedder(), indexing: 'manual' })
      await second.search('note')
      const after = await db.query<{ stats: number }>(`SELECT count(*)::int AS stats FROM pg_stats WHERE tablename = 'chunks'`)
      expect(after.rows[0]?.stats).toBeGreaterThan(0)
      await second.stopIndexing()
    } finally {
      await source.close()
      await db.close()
    }
  })

  it('a refresh that fails is reported to onError; the read it preceded still runs', async () => {
    const db = await neverAnalysed()
    try {
      const inner: Db = db
      const failing: Db = {
        query: (sql, params, options) => inner.query(sql, params, options),
        exec: (sql) => (/^(VACUUM|ANALYZE)/.test(sql) ? Promise.reject(new Error('disk on fire')) : inner.exec(sql)),
        transaction: (fn) => inner.transaction(fn),
      }
      const second = await createEngine({ db: failing, indexing: 'manual' })
      const errors: EngineErrorEvent[] = []
      second.onError((e) => errors.push(e))
      const hits = await second.search('note')
      expect(hits.length).toBeGreaterThan(0)
      expect(await analysed(db)).toBeLessThan(0)
      expect(errors.length).toBeGreaterThan(0)
      expect(errors[0]).toMatchObject({ code: 'INTERNAL', message: 'Refreshing the planner statistics failed: disk on fire' })
      await second.stopIndexing()
    } finally {
      await db.close()
    }
  })
})
