import { describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import type { Db } from '../../src/core/kernel/db.ts'
import { type Embedder, VectorCache } from '../../src/core/kernel/embedder.ts'
import type { EngineContext } from '../../src/core/kernel/engine-context.ts'
import { withPreparedStatements } from '../../src/core/db/prepared.ts'
import { DEFAULT_SCORING, resolveScoring, Z_WINDOW } from '../../src/core/kernel/scoring.ts'
import {
  keywordBranches,
  MAX_PAIRED_TERMS,
  readsEveryMatch,
  MAX_SEARCH_LIMIT,
  MIN_NEAREST,
  MAX_RESCORED,
  MIN_RESCORED,
  planSearch,
  rescoredFor,
  runSearchWithPool,
  searchInTransaction,
  type SearchPlan,
  withLimit,
  withoutNames,
} from '../../src/core/retrieval/search.ts'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import { DAY, testClock } from '../support/clock.ts'
import { createTestEmbedder } from '../support/embedder.ts'
import { standardise, standoutCase } from '../support/fusion.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestMemory } from '../support/memory.ts'
import { say } from '../support/events.ts'
import { itWithVectors } from '../support/backend.ts'

/** What `planSearch` reads of an engine: `db` with its statements kept prepared, the default scoring. */
function searchContext(db: Db, now: () => Date, embedder: Embedder): EngineContext {
  const ctx = {
    db: withPreparedStatements(db),
    now,
    embedder,
    vectors: new VectorCache(),
    scoring: resolveScoring(DEFAULT_SCORING, undefined),
    beforeRead: async () => {},
  }
  return ctx as unknown as EngineContext
}

describe('search', () => {
  it('finds events by keywords before anything is embedded, with the keyword part explained', async () => {
    await using memory = await openTestMemory({ now: testClock().now, embedder: createTestEmbedder(), indexing: 'manual' })
    await memory.record(say('c1', 'The login page throws a null pointer when the password is empty'))
    await memory.record(say('c2', 'Lunch is at noon on Fridays'))
    const hits = await memory.search('login password bug')
    expect(hits).toHaveLength(1)
    const [hit] = hits
    expect(hit?.text).toBe('The login page throws a null pointer when the password is empty')
    expect(hit?.explain.vector).toBeNull()
    expect(hit?.explain.keyword?.rank).toBe(1)
    expect(hit?.explain.keyword?.score).toBeGreaterThan(0)
    // The only event of the only list: z 0 in both, so S = zShift / (zShift + 3).
    expect(hit?.explain.keyword?.z).toBe(0)
    expect(hit?.explain.fused).toBeCloseTo(6 / 9, 9)
    expect(hit?.actor).toEqual({ type: 'human', id: 'ann' })
    expect(hit?.conversationId).toBe('c1')
  })

  it('after embedding, hybrid search uses both lists and vector search finds a paraphrase with no shared word', async () => {
    const embedder = createTestEmbedder({
      table: {
        'resolve the authentication issue': [1, 0, 0],
        'fix the login bug': [0.95, 0.31, 0],
        'plan the team offsite': [0, 0, 1],
      },
    })
    await using t = await openTestEngine({ now: testClock().now, embedder, indexing: 'manual' })
    const { engine } = t
    const login = await engine.record(say('c1', 'fix the login bug'))
    await engine.record(say('c1', 'plan the team offsite'))
    expect((await engine.indexNow()).done).toBe(2)

    const byVector = await engine.search('resolve the authentication issue', { mode: 'vector', limit: 1 })
    expect(byVector.map((h) => h.eventId)).toEqual([login.eventId])
    expect(byVector[0]?.explain.keyword).toBeNull()
    expect(byVector[0]?.explain.vector?.rank).toBe(1)
    expect(byVector[0]?.explain.vector?.similarity).toBeCloseTo(0.95, 2)

    const byKeyword = await engine.search('resolve the authentication issue', { mode: 'keyword' })
    expect(byKeyword).toEqual([])

    const hybrid = await engine.search('login bug')
    expect(hybrid[0]?.eventId).toBe(login.eventId)
    expect(hybrid[0]?.explain.keyword?.rank).toBe(1)
    expect(hybrid[0]?.explain.vector?.rank).toBe(1)
  })

  it('keeps a filtered nearest-neighbour search complete when few rows match among many', async () => {
    const embedder = createTestEmbedder()
    await using t = await openTestEngine({ now: testClock().now, embedder, indexing: 'manual' })
    const { engine, db } = t
    // 400 rows of one user, 4 of another, all about the same thing: an HNSW scan that stopped
    // at ef_search candidates would see almost none of the second user's rows.
    await db.exec(`
      INSERT INTO events (id, kind, tenant_id, user_id, conversation_id, actor_type, actor_id, content, created_at)
      SELECT 'evt_' || lpad(n::text, 26, '0'), 'message', 'default', CASE WHEN n % 101 = 0 THEN 'bob' ELSE 'ann' END,
             'c' || (n % 7), 'human', 'ann',
             jsonb_build_object('text', 'deploy notes ' || n || ' about the release pipeline of service s' || (n % 37) || ' in zone z' || (n % 11),
                                'owner', CASE WHEN n % 101 = 0 THEN 'bob' ELSE 'ann' END),
             now()
      FROM generate_series(0, 403) n;
      INSERT INTO chunks (id, source_id, ord, text, token_est, tenant_id, user_id, conversation_id, kind, channel, sensitivity, created_at)
      SELECT 'chk_' || substr(id, 5), id, 0, content ->> 'text', 10, tenant_id, user_id, conversation_id, kind, channel, sensitivity, created_at
      FROM events;
    `)
    await engine.indexNow()
    // The table is small: make the planner take the HNSW index as it would on a large one.
    await db.exec('ANALYZE chunks; SET enable_seqscan = off; SET enable_sort = off')
    const hits = await engine.search('release pipeline deploy notes', {
      mode: 'vector',
      limit: 20,
      filters: { field: 'content.owner', operator: 'eq', value: 'bob' },
      weights: { neighbour: 0 },
    })
    expect(hits).toHaveLength(4)
    expect(hits.every((h) => h.explain.vector !== null)).toBe(true)
    const plan = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM chunks WHERE vector_dims(embedding) = 384
       ORDER BY (embedding::vector(384)) <=> (SELECT embedding FROM chunks LIMIT 1)::vector(384) LIMIT 5`,
    )
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('chunks_embedding_hnsw_384')
  }, 120_000)

  it('applies kinds, time range, asOf, filters, channel and excludeConversation inside the query', async () => {
    const clock = testClock('2025-01-01T00:00:00Z')
    await using memory = await openTestMemory({ now: clock.now })
    const a = await memory.record(say('c1', 'deploy the billing service', { createdAt: '2025-01-02T00:00:00Z', tags: ['ops'] }))
    const b = await memory.record({
      kind: 'decision',
      scope: { conversationId: 'c2', userId: 'ann' },
      actor: { type: 'agent', id: 'coder' },
      content: { decision: 'deploy the billing service on Mondays only', ticket: 'OPS-7' },
      createdAt: '2025-01-05T00:00:00Z',
    })
    const c = await memory.record(
      say('c3', 'deploy the billing service secret runbook', { createdAt: '2025-01-09T00:00:00Z', sensitivity: 'high' }),
    )
    const ids = async (options: Parameters<typeof memory.search>[1]) =>
      (await memory.search('deploy billing service', options)).map((h) => h.eventId).sort()

    expect(await ids({})).toEqual([a.eventId, b.eventId, c.eventId].sort())
    expect(await ids({ kinds: ['decision'] })).toEqual([b.eventId])
    expect(await ids({ since: '2025-01-03T00:00:00Z', until: '2025-01-06T00:00:00Z' })).toEqual([b.eventId])
    expect(await ids({ asOf: '2025-01-06T00:00:00Z' })).toEqual([a.eventId, b.eventId].sort())
    expect(await ids({ filters: { field: 'content.ticket', operator: 'eq', value: 'OPS-7' } })).toEqual([b.eventId])
    expect(await ids({ filters: { field: 'tags', operator: 'contains', value: 'ops' } })).toEqual([a.eventId])
    expect(await ids({ filters: { field: 'actor_id', operator: 'eq', value: 'coder' } })).toEqual([b.eventId])
    expect(await ids({ channel: 'public' })).toEqual([a.eventId, b.eventId].sort())
    expect(await ids({ excludeConversation: 'c1' })).toEqual([b.eventId, c.eventId].sort())
    expect(await ids({ scope: { conversationId: 'c3' } })).toEqual([c.eventId])
  })

  itWithVectors('as of a time, a search gives the hits and scores a search then gave: the keyword statistics leave out the chunks created since', async () => {
    const clock = testClock('2025-01-01T00:00:00Z')
    await using memory = await openTestMemory({ now: clock.now, embedder: createTestEmbedder() })
    for (let n = 0; n < 6; n++) {
      clock.advance(60_000)
      await memory.record(say(`c${n % 3}`, n % 2 ? `deploy the billing service, take ${n}` : `billing report ${n} for the deploy team`))
    }
    await memory.record(say('c9', 'deploy billing secrets', { sensitivity: 'high' }))
    await memory.indexNow()
    const then = clock.now().toISOString()
    const query = 'deploy billing service'
    const before = await memory.search(query, { channel: 'agent' })
    // Later chunks holding the query's terms, and more of the same tenant without them.
    for (let n = 0; n < 8; n++) {
      clock.advance(60_000)
      await memory.record(say('c4', n % 2 ? `deploy deploy service ${n}` : `lunch menu ${n}`))
    }
    await memory.record({ ...say('c1', 'deploy billing service elsewhere'), scope: { tenantId: 'zeta', conversationId: 'c1' } })
    await memory.indexNow()
    const now = await memory.search(query, { channel: 'agent' })
    expect(now.map((h) => h.explain.keyword?.score)).not.toEqual(before.map((h) => h.explain.keyword?.score))
    expect(await memory.search(query, { channel: 'agent', asOf: then })).toEqual(before)
    // Counted in term_stats or still waiting: the same.
    await memory.refreshStatistics()
    expect(await memory.search(query, { channel: 'agent', asOf: then })).toEqual(before)
  })

  it('never crosses tenants', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    await memory.record({ ...say('c1', 'quarterly revenue numbers'), scope: { tenantId: 'acme', conversationId: 'c1' } })
    const own = await memory.record({ ...say('c1', 'quarterly revenue forecast'), scope: { tenantId: 'zeta', conversationId: 'c1' } })
    expect((await memory.search('quarterly revenue', { scope: { tenantId: 'zeta' } })).map((h) => h.eventId)).toEqual([own.eventId])
    expect(await memory.search('quarterly revenue')).toEqual([])
  })

  it('finds the answer to a question by the words of the question just before it', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    const q = await memory.record(say('c1', 'Did you ever visit the lighthouse museum?'))
    const answer = await memory.record({ ...say('c1', 'Yes, last summer with my sister.'), actor: { type: 'human', id: 'bo' } })
    await memory.record(say('c2', 'Shall we order pizza tonight?'))
    const hits = await memory.search('lighthouse museum visit')
    expect(hits.map((h) => h.eventId)).toEqual([q.eventId, answer.eventId])
    const none = await memory.search('lighthouse museum visit', { weights: { neighbour: 0 } })
    expect(none.map((h) => h.eventId)).toEqual([q.eventId])
  })

  it('passes a share to the neighbours of only the best neighbourDepth events of each list', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    const q1 = await memory.record(say('c1', 'Did you ever visit the lighthouse museum?'))
    const r1 = await memory.record(say('c1', 'Yes, last summer with my sister.'))
    const q2 = await memory.record(say('c2', 'Is the museum worth a visit?'))
    const r2 = await memory.record(say('c2', 'Only on a rainy day.'))
    const ids = async (neighbourDepth: number) =>
      (await memory.search('lighthouse museum visit', { mode: 'keyword', weights: { neighbourDepth } })).map((h) => h.eventId)
    expect(await ids(1)).toEqual([q1.eventId, q2.eventId, r1.eventId])
    expect((await ids(2)).sort()).toEqual([q1.eventId, q2.eventId, r1.eventId, r2.eventId].sort())
    await expect(memory.search('museum', { weights: { neighbourDepth: 0 } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('passes a smaller share to the event two steps away, up to neighbourReach steps', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    const q = await memory.record(say('c1', 'Did you ever visit the lighthouse museum?'))
    const next = await memory.record(say('c1', 'Which one do you mean?'))
    const after = await memory.record(say('c1', 'Yes, last summer with my sister.'))
    await memory.record(say('c1', 'Shall we order pizza tonight?'))
    const search = (neighbourReach: number) =>
      memory.search('lighthouse museum visit', { mode: 'keyword', weights: { neighbourReach } })
    expect((await search(1)).map((h) => h.eventId)).toEqual([q.eventId, next.eventId])
    const two = await search(2)
    expect(two.map((h) => h.eventId)).toEqual([q.eventId, next.eventId, after.eventId])
    // Half the question's score one step away, a quarter two steps away.
    const [own, one, second] = two.map((h) => h.explain.keyword!.score)
    expect(one! / own!).toBeCloseTo(0.5, 5)
    expect(second! / own!).toBeCloseTo(0.25, 5)
    expect((await search(3)).length).toBe(4)
  })

  it('passes no share to a neighbour the reader may not see or the filters leave out, and never returns one without a chunk', async () => {
    await using t = await openTestEngine({ now: testClock().now, embedder: createTestEmbedder({ dims: 64 }), indexing: 'manual' })
    const { engine, db } = t
    const q = await engine.record(say('c1', 'Did you ever visit the lighthouse museum?', { tags: ['trip'] }))
    const secret = await engine.record(say('c1', 'Yes, with my sister.', { sensitivity: 'high', tags: ['trip'] }))
    const decided = await engine.record({
      kind: 'decision',
      scope: { conversationId: 'c1', userId: 'ann' },
      actor: { type: 'agent', id: 'coder' },
      content: { decision: 'book the tickets for Sunday' },
    })
    const search = async (options: Parameters<typeof engine.search>[1]) =>
      (await engine.search('lighthouse museum visit', { mode: 'keyword', ...options })).map((h) => h.eventId).sort()
    expect(await search({})).toEqual([q.eventId, secret.eventId, decided.eventId].sort())
    expect(await search({ channel: 'public' })).toEqual([q.eventId, decided.eventId].sort())
    expect(await search({ kinds: ['message'] })).toEqual([q.eventId, secret.eventId].sort())
    expect(await search({ filters: { field: 'tags', operator: 'contains', value: 'trip' } })).toEqual(
      [q.eventId, secret.eventId].sort(),
    )
    expect(await search({ filters: { field: 'kind', operator: 'eq', value: 'decision' } })).toEqual([])

    // An event with no chunk (none was cut from it) next to the best match of a second
    // conversation: its share ranks it, but the hits are the events that have a chunk, as many
    // as asked for.
    const q2 = await engine.record(say('c2', 'The lighthouse museum visit was lovely.'))
    await db.query(
      `INSERT INTO events (id, kind, tenant_id, user_id, conversation_id, actor_type, actor_id, content, created_at)
       VALUES ('evt_00000000000000000000000000', 'message', 'default', 'ann', 'c2', 'human', 'ann', '{"text": ""}', $1)`,
      [new Date(Date.parse(q2.createdAt) + 1000)],
    )
    const hits = await engine.search('lighthouse museum visit', { mode: 'keyword', limit: 4 })
    expect(hits.map((h) => h.eventId).sort()).toEqual([q.eventId, secret.eventId, decided.eventId, q2.eventId].sort())
    expect(hits.every((h) => h.text.length > 0)).toBe(true)
  })

  it('fuses by z-scores: each list standardised over its events, a missing event counting as the lowest', async () => {
    await using t = await openTestEngine({ now: testClock().now, embedder: createTestEmbedder({ dims: 64 }), indexing: 'manual' })
    const texts = [
      'the backup job failed on the storage server',
      'storage quota raised for the backup volume',
      'backup restored from last night',
      'lunch at noon',
      'the storage team meets on Fridays',
      'a long note that mentions storage once among many other words about nothing much at all',
      'deploy finished',
      'the printer is out of paper',
    ]
    for (const [i, text] of texts.entries()) await t.engine.record(say(`c${i}`, text))
    await t.engine.indexNow()
    const hits = await t.engine.search('backup storage', { limit: 200, weights: { neighbour: 0 } })
    expect(hits).toHaveLength(texts.length) // every event: the vector list ranks them all
    const inKeyword = hits.filter((h) => h.explain.keyword !== null)
    expect(inKeyword.length).toBeGreaterThan(2)
    expect(inKeyword.length).toBeLessThan(texts.length)
    const k = standardise(inKeyword.map((h) => h.explain.keyword!.score))
    const v = standardise(hits.map((h) => h.explain.vector!.score))
    for (const h of hits) {
      const zk = h.explain.keyword ? k.z(h.explain.keyword.score) : k.floor
      const zv = v.z(h.explain.vector!.score)
      if (h.explain.keyword) expect(h.explain.keyword.z).toBeCloseTo(zk, 9)
      expect(h.explain.vector?.z).toBeCloseTo(zv, 9)
      expect(h.explain.vector?.score).toBeCloseTo(h.explain.vector?.similarity ?? NaN, 9) // no neighbour shares
      expect(h.explain.fused, h.text).toBeCloseTo(Math.max(0, (zk + zv) / 2 + 6) / 9, 9)
    }
    // The other fusions stay available, per search or per engine.
    const rrf = await t.engine.search('backup storage', { limit: 200, fusion: 'rrf', weights: { neighbour: 0 } })
    const top = rrf[0]!.explain
    expect(top.fused).toBeCloseTo(((top.vector ? 1 / (60 + top.vector.rank) : 0) + (top.keyword ? 1 / (60 + top.keyword.rank) : 0)) * 61 / 2, 9)
    await expect(t.engine.search('x', { weights: { fusion: 'borda' as never } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(t.engine.search('x', { weights: { zShift: -1 } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('takes the 150 nearest chunks into the vector list for a top 10, and three times the hits asked for past 50', async () => {
    // 180 turns, each less similar to the query than the one before, the last 30 far less: the
    // vector list's scores are standardised over the chunks it took, so the best one's z says
    // whether those 30 were among them.
    const similarity = (i: number) => (i < 150 ? 0.9 - i * 0.001 : 0.3 - (i - 150) * 0.001)
    const texts = Array.from({ length: 180 }, (_, i) => `note number ${i}`)
    const at = (x: number) => [x, Math.sqrt(1 - x * x)]
    const table = { 'where is it': [1, 0], ...Object.fromEntries(texts.map((text, i) => [text, at(similarity(i))])) }
    await using t = await openTestEngine({ now: testClock().now, embedder: createTestEmbedder({ dims: 8, table }), indexing: 'manual' })
    for (const [i, text] of texts.entries()) await t.engine.record(say(`c${i}`, text))
    await t.engine.indexNow()
    const best = async (limit: number) =>
      (await t.engine.search('where is it', { mode: 'vector', limit, weights: { neighbour: 0 } }))[0]!.explain.vector!
    const zOver = (n: number) => standardise(texts.slice(0, n).map((_, i) => similarity(i))).z(similarity(0))
    expect(MIN_NEAREST).toBe(150)
    const top10 = await best(10)
    expect(top10.similarity).toBeCloseTo(similarity(0), 5)
    expect(top10.z).toBeCloseTo(zOver(150), 4)
    expect(zOver(180)).toBeLessThan(zOver(150) - 0.5)
    expect((await best(60)).z).toBeCloseTo(zOver(180), 4)
  })

  it('an event ranked below the z window counts as the window\'s lowest z, whatever its own score', async () => {
    const clock = testClock()
    await using t = await openTestEngine({ now: clock.now, indexing: 'manual' })
    // The more words a turn has, the lower its BM25 score. The window's 200 have 40 lengths, 5
    // turns each; one longer turn, a day newer, ranks below it. It ties on the lowest z with the
    // 5 longest of the window, and recency keeps it among the 200 hits search may return: one
    // of those 5 is left out.
    const turn = (words: number) => ['storage', ...Array.from({ length: words }, (_, j) => `word${j}`)].join(' ')
    for (let i = 0; i < Z_WINDOW; i++) await t.engine.record(say(`c${i}`, turn(i % 40)))
    clock.advance(DAY)
    const late = await t.engine.record(say('d', turn(60)))
    const hits = await t.engine.search('storage', { limit: MAX_SEARCH_LIMIT, mode: 'keyword', weights: { neighbour: 0 } })
    expect(hits).toHaveLength(MAX_SEARCH_LIMIT)
    const below = hits.filter((h) => h.explain.keyword!.rank > Z_WINDOW)
    expect(below.map((h) => h.eventId)).toEqual([late.eventId])
    const inWindow = hits.filter((h) => h.explain.keyword!.rank <= Z_WINDOW)
    const lowest = Math.min(...inWindow.map((h) => h.explain.keyword!.score))
    // The window: the hits returned from it, and the one left out, which scores the lowest.
    const window = standardise([...inWindow.map((h) => h.explain.keyword!.score), lowest])
    for (const h of inWindow) expect(h.explain.keyword!.z).toBeCloseTo(window.z(h.explain.keyword!.score), 9)
    const last = below[0]!.explain
    expect(last.keyword!.score).toBeLessThan(lowest - 1e-6)
    expect(last.keyword!.z).toBeCloseTo(window.floor, 9)
    expect(last.fused).toBeCloseTo(Math.max(0, window.floor + 6) / 9, 9)
  })

  it('a match that stands far above the rest of its list outranks one the other list barely prefers; rrf ranks them the other way', async () => {
    const { query, strong: strongText, barely: barelyText, others, table } = standoutCase()
    await using t = await openTestEngine({ now: testClock().now, embedder: createTestEmbedder({ dims: 8, table }), indexing: 'manual' })
    const strong = await t.engine.record(say('c1', strongText))
    const barely = await t.engine.record(say('c2', barelyText))
    for (const [i, text] of others.entries()) await t.engine.record(say(`c${i + 3}`, text))
    await t.engine.indexNow()
    const weights = { neighbour: 0 }
    const z = await t.engine.search(query, { limit: 3, weights })
    expect(z[0]?.eventId).toBe(strong.eventId)
    expect(z[0]?.explain.keyword?.z).toBeGreaterThan(1.5)
    const rrf = await t.engine.search(query, { limit: 3, weights: { ...weights, fusion: 'rrf' } })
    expect(rrf[0]?.eventId).toBe(barely.eventId)
    expect(rrf.findIndex((h) => h.eventId === strong.eventId)).toBeGreaterThan(0)
  })

  it('ranks the recent one of two equally relevant events first', async () => {
    const clock = testClock('2025-03-01T00:00:00Z')
    await using memory = await openTestMemory({ now: clock.now })
    const old = await memory.record(say('c1', 'use postgres for storage', { createdAt: '2024-01-01T00:00:00Z' }))
    const recent = await memory.record(say('c2', 'use postgres for storage', { createdAt: '2025-02-28T00:00:00Z' }))
    const hits = await memory.search('postgres storage', { weights: { neighbour: 0 } })
    expect(hits.map((h) => h.eventId)).toEqual([recent.eventId, old.eventId])
    expect(hits[0]?.explain.recency).toBeGreaterThan(hits[1]?.explain.recency ?? 1)
    expect(hits[0]?.explain.importance).toBe(0.5)
  })

  it('an event a thousand half-lives old or more has a recency of 0, in search and in the context', async () => {
    await using memory = await openTestMemory({ now: testClock('2025-03-01T00:00:00Z').now })
    const old = await memory.record(say('c1', 'ledger format in cents', { createdAt: '1931-05-01T00:00:00Z' }))
    const hits = await memory.search('ledger format')
    expect(hits.map((h) => [h.eventId, h.explain.recency])).toEqual([[old.eventId, 0]])
    expect((await memory.search('ledger format', { weights: { recencyHalfLifeDays: 1 }, asOf: '2025-03-01T00:00:00Z' }))[0]?.explain.recency).toBe(0)
    const bundle = await memory.buildContext({ query: 'ledger format', conversationId: 'c2' })
    expect(bundle.sections.find((s) => s.name === 'retrieved_evidence')?.items.map((i) => i.source.eventId)).toEqual([old.eventId])
  })

  it('ranks a decision above a task update above a message with the same words at the same time', async () => {
    await using memory = await openTestMemory({ now: testClock('2025-03-01T00:00:00Z').now })
    const at = { createdAt: '2025-02-01T00:00:00Z' }
    const message = await memory.record(say('c1', 'use postgres for storage', at))
    const task = await memory.record({ ...say('c2', 'use postgres for storage', at), kind: 'task_update' })
    const decision = await memory.record({ ...say('c3', 'use postgres for storage', at), kind: 'decision', actor: { type: 'agent', id: 'coder' } })
    const hits = await memory.search('postgres storage', { weights: { neighbour: 0 } })
    expect(hits.map((h) => h.eventId)).toEqual([decision.eventId, task.eventId, message.eventId])
    expect(hits.map((h) => h.explain.importance)).toEqual([1, 0.75, 0.5])
    expect(hits[0]!.explain.final - hits[2]!.explain.final).toBeCloseTo(DEFAULT_SCORING.importance * 0.5, 9)
    // Importance weighed 0: the three tie, and ties go by id.
    const flat = await memory.search('postgres storage', { weights: { neighbour: 0, importance: 0 } })
    expect(new Set(flat.map((h) => h.explain.final)).size).toBe(1)
    expect(flat.map((h) => h.eventId)).toEqual([message.eventId, task.eventId, decision.eventId].sort())
  })

  it('ranks the turns of the person a question names above the same words from someone else', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    const at = { createdAt: '2025-01-01T00:00:00Z' }
    const ann = await memory.record(say('c1', 'I moved the backups to postgres storage', at))
    const bo = await memory.record({ ...say('c2', 'I moved the backups to postgres storage', at), actor: { type: 'human', id: 'Bo' } })
    const hits = await memory.search('What did Bo do with the postgres backups?', { weights: { neighbour: 0 } })
    expect(hits.map((h) => h.eventId)).toEqual([bo.eventId, ann.eventId])
    expect(hits.map((h) => h.explain.actorNamed)).toEqual([true, false])
    // Without the bonus the same lists fuse to the same scores, Bo's only 1.3× lower.
    const off = await memory.search('What did Bo do with the postgres backups?', { weights: { neighbour: 0, actorMatch: 0 } })
    const offFused = new Map(off.map((h) => [h.eventId, h.explain.fused]))
    expect(hits[0]?.explain.fused).toBeCloseTo((offFused.get(bo.eventId) ?? 0) * 1.3, 9)
    expect(hits[1]?.explain.fused).toBeCloseTo(offFused.get(ann.eventId) ?? 0, 9)
    expect(off.map((h) => h.explain.actorNamed)).toEqual(off.map((h) => h.eventId === bo.eventId))
  })

  it('looks up only the events that can be hits when the query names no actor and no period, ranking as the full look-up does', async () => {
    const clock = testClock('2025-03-01T00:00:00Z')
    const embedder = createHashEmbedder({ dims: 32 })
    await using t = await openTestEngine({ now: clock.now, embedder, indexing: 'manual' })
    const actors = [
      { type: 'human' as const, id: 'ann-smith' },
      { type: 'agent' as const, id: 'helper' },
      { type: 'tool' as const, id: 'run_tests' },
    ]
    const words = ['postgres', 'backup', 'deploy', 'release', 'index', 'vacuum', 'replica', 'schema']
    for (let i = 0; i < 180; i++) {
      const text = `${words[i % 8]} ${words[(i * 3 + 1) % 8]} ${words[(i * 5 + 2) % 8]} step ${i}`
      await t.engine.record({ ...say(`c${i % 12}`, text), actor: actors[i % 3]!, createdAt: new Date(Date.parse('2025-01-01T00:00:00Z') + i * 3_600_000).toISOString() })
    }
    // The same word as an actor of another tenant: not an actor of this one.
    await t.engine.record({ ...say('x1', 'postgres deploy'), scope: { tenantId: 'other', conversationId: 'x1' }, actor: { type: 'human', id: 'postgres' } })
    await t.engine.indexNow()
    const ctx = searchContext(t.db, clock.now, embedder)
    const plan = (q: string) => planSearch(ctx, q, { limit: 10 })

    for (const q of ['postgres backup deploy', 'release index', 'vacuum the replica schema', 'what happened to the deploy']) {
      const fast = await plan(q)
      expect(fast.namedActors, q).toEqual([])
      const pruned = await runSearchWithPool(t.db, fast)
      // Naming an actor no listed event has takes the statement that looks every event up.
      const full = await runSearchWithPool(t.db, { ...fast, namedActors: ['nobody'] })
      expect(pruned.poolSize, q).toBeGreaterThan(50)
      expect(pruned, q).toEqual(full)
      expect(pruned.hits.some((h) => h.explain.actorNamed), q).toBe(false)
    }
    // A word of an id names its actor: "smith" of "ann-smith".
    const named = await plan('what did smith say about the postgres backup')
    expect(named.namedActors).toEqual(['ann-smith'])
    const { hits } = await runSearchWithPool(t.db, named)
    expect(hits.length).toBe(10)
    expect(hits.map((h) => h.explain.actorNamed)).toEqual(hits.map((h) => h.actor.id === 'ann-smith'))
    expect(hits.filter((h) => h.actor.id === 'ann-smith').length).toBeGreaterThan(5)
    // With the bonus weighed 0 no fused score can change: the short statement, which still
    // says whom each hit names.
    const unweighed = await planSearch(ctx, 'what did smith say about the postgres backup', { limit: 10, weights: { actorMatch: 0 } })
    const plain = await runSearchWithPool(t.db, unweighed)
    expect(plain).toEqual(await runSearchWithPool(t.db, { ...unweighed, scoring: { ...unweighed.scoring, actorMatch: 1e-300 } }))
    expect(plain.hits.some((h) => h.explain.actorNamed)).toBe(true)
    expect(plain.hits.map((h) => h.explain.actorNamed)).toEqual(plain.hits.map((h) => h.actor.id === 'ann-smith'))
  })

  it("plans its own statements for each search's values, reads the keyword statistics and the names with one generic plan, and leaves the rest of the transaction to Postgres' default", async () => {
    const clock = testClock('2025-03-01T00:00:00Z')
    const embedder = createHashEmbedder({ dims: 32 })
    await using t = await openTestEngine({ now: clock.now, embedder, indexing: 'manual' })
    for (const text of ['postgres backup', 'deploy the release', 'vacuum the replica']) await t.engine.record(say('c1', text))
    await t.engine.indexNow()
    const ctx = searchContext(t.db, clock.now, embedder)
    const db = ctx.db
    const plan = await planSearch(ctx, 'postgres backup', { limit: 10 })
    for (let i = 0; i < 7; i++) {
      const after = await db.transaction(async (tx) => {
        expect((await searchInTransaction(tx, plan)).hits.length).toBeGreaterThan(0)
        return (await tx.query<{ mode: string; ef: string }>(`SELECT current_setting('plan_cache_mode') AS mode, current_setting('hnsw.ef_search') AS ef`)).rows[0]
      })
      expect(after).toEqual({ mode: 'auto', ef: String(MIN_NEAREST) })
    }
    // Past the five runs after which Postgres may choose a generic plan, still none.
    const { rows } = await t.db.query<{ generic: number; custom: number }>(
      `SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE statement LIKE '%kw_event AS%'`,
    )
    expect(rows).toEqual([{ generic: 0, custom: 7 }])
    // The keyword statistics and the names look up rows by key whatever the query: planned
    // once, their generic plan every time (Postgres' own choice would plan them anew).
    const plans = async (fragment: string) =>
      (
        await t.db.query<{ generic: number; custom: number }>(
          `SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE statement LIKE $1`,
          [`%${fragment}%`],
        )
      ).rows
    expect(await plans('FROM term_stats s')).toEqual([{ generic: 7, custom: 0 }])
    expect(await plans('WITH names AS')).toEqual([{ generic: 1, custom: 0 }])
    // As of a time they also count the chunks written since, by time: planned for that time.
    const past = await planSearch(ctx, 'postgres backup', { limit: 10, asOf: clock.now() })
    for (let i = 0; i < 6; i++) await db.transaction((tx) => searchInTransaction(tx, past))
    expect(await plans('since_corpus')).toEqual([{ generic: 0, custom: 6 }])
  })

  it("finds a common term's newest chunks by reading every chunk of the memory that holds it when few enough do, as a walk by time finds them", async () => {
    const clock = testClock('2025-03-01T00:00:00Z')
    await using t = await openTestEngine({ now: clock.now, indexing: 'manual' })
    const ctx = searchContext(t.db, clock.now, createHashEmbedder({ dims: 32 }))
    /**
     * 210 chunks holding "alpha", then 40 without it, a minute apart. The oldest ten hold it
     * three times: BM25 ranks them first whenever they are candidates. Returns their ids.
     */
    const fill = async (tenantId: string) => {
      const oldest: string[] = []
      for (let i = 0; i < 250; i++) {
        clock.advance(60_000)
        const text = i < 10 ? `alpha alpha alpha ${i}` : i < 210 ? `alpha draft ${i}` : `other note ${i}`
        const { eventId } = await t.engine.record({ ...say(`c${i % 3}`, text), scope: { tenantId, conversationId: `c${i % 3}` } })
        if (i < 10) oldest.push(eventId)
      }
      return oldest
    }
    const search = async (limit: number) => {
      const statements: string[] = []
      const plan = await planSearch(ctx, 'alpha', { limit, mode: 'keyword', weights: { neighbour: 0 } })
      const { hits } = await ctx.db.transaction((tx) =>
        searchInTransaction({ query: (sql, params, o) => (statements.push(sql), tx.query(sql, params, o)), exec: (sql) => tx.exec(sql) }, plan),
      )
      const statement = statements.find((sql) => sql.includes('kw_event AS'))!
      return { ids: hits.map((h) => h.eventId), readsEvery: /OFFSET 0\) c\s+ORDER BY c\.created_at DESC/.test(statement) }
    }
    const oldest = await fill('default')
    // A top 10 ranks 200 candidates. 210 chunks hold the term, under √(200 × 250) ≈ 224: every
    // one is read, then sorted, and the newest 200 kept.
    const alone = await search(10)
    expect(alone.readsEvery).toBe(true)
    expect(alone.ids).toHaveLength(10)
    expect(alone.ids.filter((id) => oldest.includes(id))).toEqual([])
    // A top 70 ranks 210: the oldest ten come first.
    expect((await search(70)).ids.slice(0, 10).sort()).toEqual([...oldest].sort())
    // Another tenant's chunks are in the GIN index too: 420 of the memory's 500, scaled from
    // this tenant's, over the bound now, and the tenant's chunks are walked by time instead.
    await fill('other')
    const shared = await search(10)
    expect(shared.readsEvery).toBe(false)
    expect(shared.ids).toEqual(alone.ids)
  })

  it("leaves a word that is a person's or agent's id out of the keyword ranking; a tool's name stays a term", async () => {
    await using t = await openTestEngine({ now: testClock().now, indexing: 'manual' })
    const at = { createdAt: '2025-01-01T00:00:00Z' }
    const by = (type: 'human' | 'agent' | 'tool', id: string) => ({ actor: { type, id } })
    const mention = await t.engine.record(say('c1', 'Bo, that trip sounds lovely', { ...at, ...by('human', 'ann') }))
    const own = await t.engine.record(say('c2', 'I say the trip was lovely', { ...at, ...by('human', 'Bo') }))
    const ran = await t.engine.record(say('c3', 'I ran grep on the logs', { ...at, ...by('agent', 'coder') }))
    await t.engine.record(say('c4', '3 matches', { ...at, ...by('tool', 'grep') }))
    const ids = (hits: { eventId: string }[]) => hits.map((h) => h.eventId)
    const search = (query: string, weights: Record<string, number> = {}) =>
      t.engine.search(query, { mode: 'keyword', weights: { neighbour: 0, ...weights } })

    // "bo" names a person (case aside, possessive too): only "say" is a keyword, so Ann's
    // turn addressing Bo is not matched for his name.
    expect(ids(await search("What did Bo's sister say?"))).toEqual([own.eventId])
    expect(ids(await search('what did BO say'))).toEqual([own.eventId])
    // Counted like any other term, the name brings Ann's turn in; at half weight, half its score.
    const full = await search("What did Bo's sister say?", { actorNameTerm: 1 })
    expect(new Set(ids(full))).toEqual(new Set([own.eventId, mention.eventId]))
    const half = await search("What did Bo's sister say?", { actorNameTerm: 0.5 })
    const score = (hits: Awaited<typeof full>, id: string) => hits.find((h) => h.eventId === id)?.explain.keyword?.score
    expect(score(half, mention.eventId)).toBeCloseTo((score(full, mention.eventId) ?? 0) / 2, 9)
    // A query made only of names keeps them.
    expect(ids(await search('Bo'))).toEqual([mention.eventId])
    // A tool is not a person: its name is a term, and the agent's message that mentions it matches.
    expect(new Set(ids(await search('what did grep say')))).toEqual(new Set([ran.eventId, own.eventId]))
    await expect(search('x', { actorNameTerm: 2 })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    // The lookup is an index probe per query word, not a scan of the log.
    const { rows } = await t.db.query<{ plan: string }>(
      `EXPLAIN SELECT 1 FROM events e WHERE e.tenant_id = 'default' AND lower(e.actor_id) = 'bo' AND e.actor_type <> 'tool'`,
    )
    expect(rows.map((r) => Object.values(r)[0]).join('\n')).toContain('events_actor_names')
  })

  it("leaves a person's name out of the text embedded for the vector ranking; names alone, or with actorNamesEmbedded, are embedded", async () => {
    const embedder = createHashEmbedder()
    await using t = await openTestEngine({ now: testClock().now, embedder, indexing: 'manual' })
    const at = { createdAt: '2025-01-01T00:00:00Z' }
    const by = (type: 'human' | 'tool', id: string) => ({ actor: { type, id } })
    // Ann's turn says Kit's name twice; Kit's own turn shares only "the trip" with the question.
    // (The hash embedder's buckets: some short names collide with "the" or "trip"; "kit" does not.)
    const mention = await t.engine.record(say('c1', 'Kit! Kit, the trip', { ...at, ...by('human', 'ann') }))
    const own = await t.engine.record(say('c2', 'the trip was long', { ...at, ...by('human', 'Kit') }))
    await t.engine.record(say('c3', 'no match', { ...at, ...by('tool', 'grep') }))
    await t.engine.indexNow()
    const search = (query: string, weights: Record<string, unknown> = {}) =>
      t.engine.search(query, { mode: 'vector', weights: { neighbour: 0, actorMatch: 0, ...weights } })
    const similarity = async (a: string, b: string) => {
      const [x, y] = await embedder.embed([a, b])
      return x!.reduce((sum, v, i) => sum + v * y![i]!, 0)
    }
    const similarityOf = (hits: Awaited<ReturnType<typeof search>>, id: string) =>
      hits.find((h) => h.eventId === id)?.explain.vector?.similarity

    const question = "What did Kit's sister say about the trip?"
    const hits = await search(question)
    expect(hits[0]?.eventId).toBe(own.eventId)
    expect(similarityOf(hits, own.eventId)).toBeCloseTo(await similarity('What did sister say about the trip?', 'the trip was long'), 5)
    expect(similarityOf(hits, mention.eventId)).toBeCloseTo(await similarity('What did sister say about the trip?', 'Kit! Kit, the trip'), 5)
    // With the name embedded, the turn that says it twice comes first.
    const whole = await search(question, { actorNamesEmbedded: true })
    expect(whole[0]?.eventId).toBe(mention.eventId)
    expect(similarityOf(whole, mention.eventId)).toBeCloseTo(await similarity(question, 'Kit! Kit, the trip'), 5)
    // Names and stop words only: the whole query is embedded. A tool's name stays in.
    expect(similarityOf(await search('What about Kit?'), mention.eventId)).toBeCloseTo(await similarity('What about Kit?', 'Kit! Kit, the trip'), 5)
    expect(similarityOf(await search('what did grep say about the trip'), own.eventId)).toBeCloseTo(
      await similarity('what did grep say about the trip', 'the trip was long'),
      5,
    )
    await expect(search('x', { actorNamesEmbedded: 'no' })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('withoutNames drops the named words and their possessive, keeping the rest as written', () => {
    const names = new Set(['bo', 'ann.lee'])
    expect(withoutNames("What did Bo's sister say?", names)).toBe('What did sister say?')
    expect(withoutNames('when did BO and Ann.Lee meet Bob', names)).toBe('when did and meet Bob')
    expect(withoutNames('Bo’s trip, Bo.', names)).toBe('trip,')
    expect(withoutNames('nothing to drop', new Set())).toBe('nothing to drop')
  })

  it('ranks events from a date the query names above more recent ones with the same words', async () => {
    await using memory = await openTestMemory({ now: testClock('2023-08-01T00:00:00Z').now })
    const june = await memory.record(say('c1', 'we chose postgres for storage', { createdAt: '2023-06-03T15:00:00Z' }))
    const july = await memory.record(say('c2', 'we chose postgres for storage', { createdAt: '2023-07-20T15:00:00Z' }))
    const opts = { weights: { neighbour: 0 } }
    expect((await memory.search('postgres storage', opts)).map((h) => h.eventId)).toEqual([july.eventId, june.eventId])
    for (const q of ['What did we choose for storage on 3 June 2023?', 'storage choice, June 3, 2023', 'storage in June 2023', 'storage 2023-06-03']) {
      const hits = await memory.search(q, opts)
      expect(hits.map((h) => h.eventId), q).toEqual([june.eventId, july.eventId])
      expect(hits.map((h) => h.explain.dateNamed), q).toEqual([true, false])
    }
    // Relative to the search's clock (here its asOf): 48 days before 21 July is 3 June.
    const asOf = '2023-07-21T09:00:00Z'
    const twoDays = await memory.search('what did we choose for storage two days ago', { ...opts, asOf })
    expect(twoDays.map((h) => [h.eventId, h.explain.dateNamed])).toEqual([[july.eventId, true], [june.eventId, false]])
    const daysAgo = await memory.search('storage choice 48 days ago', { ...opts, asOf })
    expect(daysAgo.map((h) => [h.eventId, h.explain.dateNamed])).toEqual([[june.eventId, true], [july.eventId, false]])
    const off = await memory.search('storage on 3 June 2023', { weights: { neighbour: 0, dateMatch: 0 } })
    expect(off.map((h) => h.eventId)).toEqual([july.eventId, june.eventId])
    await expect(memory.search('x', { weights: { dateMatch: -1 } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  itWithVectors('says a vector search waits for a model still loading (MODEL_LOADING), and one that failed to load is unavailable', async () => {
    let fail!: (cause: Error) => void
    const loading = new Promise<Embedder>((_, reject) => (fail = reject))
    await using memory = await openTestMemory({ embedder: loading })
    await expect(memory.search('x', { mode: 'vector' })).rejects.toMatchObject({
      code: 'MODEL_LOADING',
      message: expect.stringContaining('still loading'),
    })
    // Hybrid search answers on keywords meanwhile.
    expect(await memory.search('x')).toEqual([])
    fail(new Error('no model files'))
    await expect(memory.embed(['x'])).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    await expect(memory.search('x', { mode: 'vector' })).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
  })

  it('refuses vector mode without an embedder and bad options', async () => {
    await using memory = await openTestMemory()
    await expect(memory.search('x', { mode: 'vector' })).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    await expect(memory.search('x', { limit: 500 })).rejects.toBeInstanceOf(MemoryError)
    await expect(memory.search('  ')).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(memory.search('x', { filters: { field: 'kind', operator: 'like', value: 1 } })).rejects.toMatchObject({
      code: 'INVALID_FILTER',
    })
  })
  it('familiarity counts the conversations that touched the hit\'s documents, any version, as of the search', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, indexing: 'manual' })
    const read = (path: string, content: string) => ({ tool: 'read_file', args: { path }, document: { path, content, effect: 'read' as const } })
    const turn = async (conversationId: string, user: string, ...procedures: ReturnType<typeof read>[]) => {
      clock.advance(60_000)
      await memory.recordTurn({ conversationId, user, agent: 'Done.', procedures })
    }
    await turn('c1', 'the deploy pipeline is broken', read('/repo/a.ts', 'v1'))
    await turn('c2', 'unrelated words here', read('/repo/a.ts', 'v1'))
    const beforeC3 = clock.now()
    await turn('c3', 'more unrelated words', read('/repo/a.ts', 'v2'))
    await turn('c4', 'other words again', read('/repo/b.ts', 'b'))
    await turn('c5', 'the release checklist', read('/repo/a.ts', 'v2'), read('/repo/b.ts', 'b'))
    const scale = Math.log(1 + 10) // the default familiarityScale

    // a.ts (either version) was touched by c1, c2, c3 and c5.
    const [deploy] = await memory.search('deploy pipeline', { limit: 1 })
    expect(deploy?.conversationId).toBe('c1')
    expect(deploy?.explain.familiarity).toBeCloseTo(Math.log(1 + 4) / scale, 9)
    // Two documents: the conversations that touched either, each once (c1, c2, c3, c4, c5).
    const [release] = await memory.search('release checklist', { limit: 1 })
    expect(release?.conversationId).toBe('c5')
    expect(release?.explain.familiarity).toBeCloseTo(Math.log(1 + 5) / scale, 9)
    // As of before c3: only c1 and c2 had touched a.ts.
    const [then] = await memory.search('deploy pipeline', { limit: 1, asOf: beforeC3 })
    expect(then?.explain.familiarity).toBeCloseTo(Math.log(1 + 2) / scale, 9)

    // Each document's conversations are counted up to familiarityScale (the bonus is full from
    // there): below it every one counts, across documents each once; at or above it, full.
    const at = async (query: string, familiarityScale: number) =>
      (await memory.search(query, { limit: 1, weights: { familiarityScale } }))[0]?.explain.familiarity
    expect(await at('deploy pipeline', 4.5)).toBeCloseTo(Math.log(1 + 4) / Math.log(1 + 4.5), 9)
    expect(await at('deploy pipeline', 3.5)).toBe(1) // four conversations, more than 3.5
    expect(await at('deploy pipeline', 2)).toBe(1)
    expect(await at('release checklist', 4.5)).toBe(1) // five conversations: four from a.ts, c4 from b.ts
    expect(await at('release checklist', 6)).toBeCloseTo(Math.log(1 + 5) / Math.log(1 + 6), 9)

    // A conversation that observed a new version of a.ts, with no event to link it from,
    // touched it too: five now, as the document's own signals count them.
    clock.advance(60_000)
    await memory.observeDocument({ path: '/repo/a.ts', content: 'v3', conversationId: 'c6' })
    const [after] = await memory.search('deploy pipeline', { limit: 1 })
    expect(after?.explain.familiarity).toBeCloseTo(Math.log(1 + 5) / scale, 9)
    expect((await memory.documents.signals({ path: '/repo/a.ts' })).familiarity).toBe(5)
  })
})

describe('withLimit', () => {
  it('asks the same planned search for more hits, ranking deeper, and refuses a limit search would refuse', () => {
    const vector = new Float32Array([1, 0])
    const plan = { query: 'q', vector, options: { limit: 23, mode: 'hybrid' }, candidates: 200 } as unknown as SearchPlan
    const deeper = withLimit(plan, 100)
    expect(deeper.options).toEqual({ limit: 100, mode: 'hybrid' })
    expect(deeper.candidates).toBe(300)
    expect(deeper.nearest).toBe(300)
    expect(withLimit(plan, 10)).toMatchObject({ candidates: 200, nearest: MIN_NEAREST })
    expect(withLimit(plan, 60)).toMatchObject({ candidates: 200, nearest: 180 })
    // The events rescored: three times the hits, at least MIN_RESCORED, at most MAX_RESCORED.
    expect([1, 10, 11, 23, 200].map(rescoredFor)).toEqual([MIN_RESCORED, 30, 33, 69, MAX_RESCORED])
    expect(deeper.vector).toBe(vector)
    expect(plan.options.limit).toBe(23)
    for (const bad of [0, MAX_SEARCH_LIMIT + 1, 2.5, Number.NaN]) {
      expect(() => withLimit(plan, bad)).toThrow(MemoryError)
    }
  })
})

describe('keywordBranches', () => {
  const t = (lexeme: string, df: number, rows = df) => ({ lexeme, df, rows })
  const branch = (most: number, ...queries: string[]) => ({ queries, most })
  const always = (...branches: { queries: string[]; most: number }[]) => ({ always: branches, fallback: null })

  it('brings every chunk of a rare term, and pairs of common terms in one branch', () => {
    expect(keywordBranches([], 200)).toEqual(always())
    expect(keywordBranches([t('flaki', 3), t('migrat', 200)], 200)).toEqual(always(branch(3, "'flaki'"), branch(200, "'migrat'")))
    // One common term beside a rare one: nothing of its own.
    expect(keywordBranches([t('flaki', 3), t('test', 201)], 200)).toEqual(always(branch(3, "'flaki'")))
    expect(keywordBranches([t('flaki', 3), t('test', 900), t('run', 5000)], 200)).toEqual(
      always(branch(3, "'flaki'"), branch(900, "'test' & 'run'")),
    )
  })

  it('with only common terms: every pair and all of them together, the rarest alone as the fallback', () => {
    expect(keywordBranches([t('test', 900)], 200)).toEqual(always(branch(900, "'test'")))
    expect(keywordBranches([t('test', 900), t('run', 5000)], 200)).toEqual({
      always: [branch(900, "'test' & 'run'")],
      fallback: branch(900, "'test'"),
    })
    // The pairs as one tsquery per term with the terms after it: (a & b) | (a & c) | (b & c).
    expect(keywordBranches([t('a', 300), t('b', 400), t('c', 500)], 200)).toEqual({
      always: [branch(700, "'a' & ('b' | 'c')", "'b' & 'c'"), branch(300, "'a' & 'b' & 'c'")],
      fallback: branch(300, "'a'"),
    })
  })

  it('bounds each branch by the rows of the whole memory that hold its terms', () => {
    // Every pair's chunks hold a term other than the most common: at most the others' rows.
    const { always: [pairs, all], fallback } = keywordBranches([t('a', 300, 3000), t('b', 400, 400), t('c', 500, 100_000)], 200)
    expect(pairs?.most).toBe(3400)
    expect(all?.most).toBe(400)
    expect(fallback?.most).toBe(3000)
  })

  it(`pairs only the rarest ${MAX_PAIRED_TERMS} common terms, and quotes each lexeme`, () => {
    const many = Array.from({ length: 12 }, (_, i) => t(`w${i}`, 300 + i))
    const { always: [pairs, all], fallback } = keywordBranches(many, 200)
    expect(fallback?.queries).toEqual(["'w0'"])
    expect(pairs?.queries).toHaveLength(MAX_PAIRED_TERMS - 1)
    expect(pairs?.queries[0]?.split(' | ')).toHaveLength(MAX_PAIRED_TERMS - 1)
    expect(pairs?.queries.join(' ')).not.toContain(`'w${MAX_PAIRED_TERMS}'`)
    expect(all?.queries[0]?.split(' & ')).toHaveLength(12)
    expect(keywordBranches([t("o'brien", 1)], 200)).toEqual(always(branch(1, "'o''brien'")))
  })
})

describe('readsEveryMatch', () => {
  it('reads every match of a branch up to the square root of candidates times the chunks walked', () => {
    expect(readsEveryMatch(4472, 200, 100_000)).toBe(true)
    expect(readsEveryMatch(4473, 200, 100_000)).toBe(false)
    // Never fewer than the candidates themselves, however small the tenant.
    expect(readsEveryMatch(200, 200, 10)).toBe(true)
    expect(readsEveryMatch(201, 200, 10)).toBe(false)
  })
})
