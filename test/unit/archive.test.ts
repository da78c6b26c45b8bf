import { describe, expect, it } from 'vitest'
import { createHitLog } from '../../src/core/maintenance/hits.ts'
import type { MemoryError } from '../../src/core/kernel/errors.ts'
import type { Engine } from '../../src/core/engine.ts'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import { DAY, testClock } from '../support/clock.ts'
import { openTestEngine } from '../support/engine.ts'

const IDLE = 30 * DAY

async function conversations() {
  const clock = testClock('2025-01-01T09:00:00.000Z')
  const t = await openTestEngine({
    now: clock.now,
    embedder: createHashEmbedder({ dims: 32 }),
    indexing: 'manual',
    workspace: { mode: 'local', root: '/repo' },
  })
  const m = t.engine
  const old = await m.recordTurn({
    conversationId: 'c-old',
    scope: { userId: 'ann', agentId: 'coder' },
    user: 'Why does the invoice export drop the currency column?',
    agent: 'The exporter trims columns past the twelfth; currency was the thirteenth.',
    procedures: [
      { tool: 'read_file', args: { path: 'src/export.ts' }, document: { path: 'src/export.ts', content: 'const MAX_COLUMNS = 12', effect: 'read' } },
      { tool: 'run_tests', args: { filter: 'export' }, output: 'currency column missing: 1 failed' },
    ],
  })
  await m.record({
    kind: 'decision',
    scope: { conversationId: 'c-old', userId: 'ann' },
    actor: { type: 'agent', id: 'coder' },
    content: { text: 'Raise the export column limit to 32' },
    refs: [old.agentEventId],
  })
  await m.recordTurn({ conversationId: 'c-found', scope: { userId: 'ann' }, user: 'Where do refunds post?', agent: 'Refunds post to the suspense ledger.' })
  clock.advance(40 * DAY)
  await m.recordTurn({ conversationId: 'c-new', scope: { userId: 'bob' }, user: 'Rename the payroll job', agent: 'Renamed to payroll-nightly.' })
  await m.indexNow()
  clock.advance(20 * DAY)
  return { t, m, clock, old }
}

async function conversationState(m: Engine, conversationId: string) {
  const { events, edges, versions } = await m.graph.conversation(conversationId)
  return { events, edges, versions }
}

describe('archives', () => {
  it('moves idle conversations nobody finds out of the live memory, and a restore brings back the same rows', async () => {
    const { t, m, old } = await conversations()
    await using _ = t
    // A search that finds c-found keeps it live, though it is as old as c-old.
    expect((await m.search('refunds suspense ledger', { limit: 1 }))[0]?.conversationId).toBe('c-found')
    const before = await conversationState(m, 'c-old')
    expect(before.events).toHaveLength(5)
    const { events = 0, chunks = 0, edges = 0 } = (await m.stats()).counts

    // What it would take, without taking it.
    expect(await m.archives.candidates({ idleForMs: IDLE })).toEqual([
      { conversationId: 'c-old', events: 5, firstEventAt: '2025-01-01T09:00:00.000Z', lastEventAt: '2025-01-01T09:00:00.000Z', lastHitAt: null },
    ])
    expect(await m.archives.candidates({ conversationIds: ['c-found'] })).toEqual([
      expect.objectContaining({ conversationId: 'c-found', events: 2, lastHitAt: '2025-03-02T09:00:00.000Z' }),
    ])
    expect(await m.archives.list()).toEqual([])

    const made = await m.archives.create({ idleForMs: IDLE })
    expect(made.map((a) => a.conversationId)).toEqual(['c-old'])
    const archive = made[0]!
    expect(archive).toMatchObject({
      id: expect.stringMatching(/^arc_/),
      tenantId: 'default',
      // The turn's two messages, its tool call and result, the decision; MESSAGE, read_file,
      // run_tests, RESULT and the decision's REFERS_TO (VERSION_OF belongs to the document).
      counts: { events: 5, edges: 5, artifacts: 0, chunks: 5, vectors: 5 },
      firstEventAt: '2025-01-01T09:00:00.000Z',
      createdAt: '2025-03-02T09:00:00.000Z',
    })
    expect(archive.bytes).toBeGreaterThan(100)
    expect(await m.archives.list()).toEqual(made)

    // Gone from every read: search, the conversation, the event, the counts.
    expect((await m.search('invoice export currency column', { limit: 10 })).map((h) => h.conversationId)).not.toContain('c-old')
    expect((await conversationState(m, 'c-old')).events).toEqual([])
    await expect(m.events.get(old.userEventId)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    const during = (await m.stats()).counts
    expect(during).toMatchObject({ events: events - 5, chunks: chunks - 5, edges: edges - 5, archives: 1 })
    // The document it read stays: other conversations may have seen it too.
    expect((await m.documents.history('src/export.ts')).versions).toHaveLength(1)
    // Nothing new to archive; c-found is archived once it is named.
    expect(await m.archives.create({ idleForMs: IDLE })).toEqual([])
    expect((await m.archives.create({ conversationIds: ['c-found', 'no-such-conversation'] })).map((a) => a.conversationId)).toEqual([
      'c-found',
    ])

    const restored = await m.archives.restore(archive.id)
    expect(restored).toMatchObject({ archiveId: archive.id, conversationId: 'c-old', inserted: { events: 5, edges: 5 } })
    expect(restored.vectorsRestored).toBe(archive.counts.vectors)
    expect(await conversationState(m, 'c-old')).toEqual(before)
    expect((await m.search('invoice export currency column', { limit: 1 }))[0]?.conversationId).toBe('c-old')
    expect((await m.archives.list()).map((a) => a.conversationId)).toEqual(['c-found'])
    expect((await m.stats()).unembeddedChunks).toBe(0)
    await expect(m.archives.restore(archive.id)).rejects.toMatchObject({ code: 'NOT_FOUND' })
  })

  it('a turn recorded while its conversation is archived follows the archived turns, and a restore puts them in order', async () => {
    await using t = await openTestEngine({ indexing: 'manual' })
    const m = t.engine
    const turnIndexes = async () =>
      (await m.events.list({ conversationId: 'c', kinds: ['message'] })).map((e) => [e.turnIndex, (e.content as { text: string }).text])
    await m.recordTurn({ conversationId: 'c', user: 'first question', agent: 'first answer' })
    await m.recordTurn({ conversationId: 'c', user: 'second question', agent: 'second answer' })
    const [first] = await m.archives.create({ conversationIds: ['c'] })
    expect((await m.recordTurn({ conversationId: 'c', user: 'third question', agent: 'third answer' })).turnIndex).toBe(2)
    // Archived again with its third turn, beside the first archive: the next turn is the fourth.
    const [second] = await m.archives.create({ conversationIds: ['c'] })
    expect((await m.recordTurn({ conversationId: 'c', user: 'fourth question', agent: 'fourth answer' })).turnIndex).toBe(3)
    await m.archives.restore(second!.id)
    await m.archives.restore(first!.id)
    expect((await turnIndexes()).map(([turn]) => turn)).toEqual([0, 0, 1, 1, 2, 2, 3, 3])
    expect((await m.recordTurn({ conversationId: 'c', user: 'fifth', agent: 'answer' })).turnIndex).toBe(4)
  })

  it("links from another conversation's event, or a memory, into an archived conversation stay forgotten after its restore", async () => {
    await using t = await openTestEngine({ indexing: 'manual' })
    const m = t.engine
    const say = (conversationId: string, text: string, refs: string[] = []) =>
      m.record({ kind: 'message', scope: { conversationId }, actor: { type: 'human', id: 'u' }, content: { text }, refs })
    const a1 = await say('A', 'in A')
    const b1 = await say('B', 'B refers to A', [a1.eventId])
    const kept = await say('C', 'C refers to A', [a1.eventId])
    const drawn = await m.remember({ content: 'A fact drawn from A', category: 'fact', derivedFrom: [a1.eventId] })
    const into = async () => (await m.graph.in(a1.eventId)).map((e) => e.src).sort()
    expect(await into()).toEqual([b1.eventId, kept.eventId, drawn.id].sort())
    const [archive] = await m.archives.create({ conversationIds: ['A'] })
    await m.forget({ conversationId: 'B' })
    await m.forget({ memoryIds: [drawn.id] })
    await m.archives.restore(archive!.id)
    expect(await into()).toEqual([kept.eventId])
    // Archived is not forgotten: a link between two archived conversations comes back whole,
    // in either order of restoring them.
    for (const order of ['A first', 'C first']) {
      const [a, c] = await m.archives.create({ conversationIds: ['A', 'C'] })
      for (const archive of order === 'A first' ? [a, c] : [c, a]) await m.archives.restore(archive!.id)
      expect(await into(), order).toEqual([kept.eventId])
    }
  })

  it('an archive nothing can read (a damaged file) does not block forget, which drops it, nor making a vault, which keeps it', async () => {
    const unreadable = async (t: Awaited<ReturnType<typeof openTestEngine>>) => {
      await t.engine.recordTurn({ conversationId: 'chat', scope: { userId: 'u1' }, user: 'my plan', agent: 'noted' })
      await t.db.query(
        `INSERT INTO archives (id, tenant_id, conversation_id, event_ids, user_ids, agent_ids, counts, first_event_at,
                               last_event_at, bytes, file, created_at)
         VALUES ('arc_damaged', 'default', 'chat', '{evt_gone}', '{u1}', '{}', '{"events": 1}', now(), now(), 1, '\\x00', now())`,
      )
    }
    {
      await using t = await openTestEngine({ indexing: 'manual' })
      await unreadable(t)
      expect(((await t.engine.archives.restore('arc_damaged').catch((e: unknown) => e)) as MemoryError).code).toBe('IMPORT_CORRUPT')
      const forgot = await t.engine.forget({ scope: { tenantId: 'default', userId: 'u1' } })
      expect(forgot.counts.archives).toBe(1)
      expect(forgot.counts.events).toBe(2)
      expect(await t.engine.archives.list()).toEqual([])
    }
    {
      await using t = await openTestEngine({ indexing: 'manual' })
      await unreadable(t)
      expect(await t.engine.vault.setKey({ passphrase: 'a long passphrase' })).toBe('open')
      expect((await t.engine.archives.list()).map((a) => a.id)).toEqual(['arc_damaged'])
    }
  })

  it('what forget names is forgotten in the archives too', async () => {
    const { t, m, old } = await conversations()
    await using _ = t
    await m.archives.create({ idleForMs: 0 })
    // Oldest last event first; ties by conversation.
    expect((await m.archives.list()).map((a) => a.conversationId)).toEqual(['c-found', 'c-old', 'c-new'])

    // One event: its archive is put back and the event forgotten; the rest of it is live again.
    const one = await m.forget({ eventId: old.userEventId })
    expect(one.counts).toMatchObject({ events: 1, archives: 1 })
    expect((await conversationState(m, 'c-old')).events).toHaveLength(4)
    // A user: every archive with an event of hers.
    const ann = await m.forget({ scope: { tenantId: 'default', userId: 'ann' } })
    expect(ann.counts).toMatchObject({ archives: 1 })
    expect((await m.archives.list()).map((a) => a.conversationId)).toEqual(['c-new'])
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE user_id = 'ann'`)
    expect(rows[0]?.n).toBe(0)
    // A whole tenant: its archives are deleted.
    await t.db.query(
      `INSERT INTO conversation_hits VALUES ('default', 'c-new', now()), ('default', 'c-gone', now()), ('t2', 'c-other', now())`,
    )
    await m.forget({ conversationId: 'c-gone' })
    expect((await t.db.query(`SELECT 1 FROM conversation_hits WHERE conversation_id = 'c-gone'`)).rows).toEqual([])
    const all = await m.forget({ scope: { tenantId: 'default' } })
    expect(all.counts).toMatchObject({ archives: 1, events: 0 })
    expect(await m.archives.list()).toEqual([])
    // A forgotten conversation, or tenant, leaves no record of when it was last found.
    const { rows: kept } = await t.db.query(`SELECT tenant_id, conversation_id FROM conversation_hits ORDER BY 1, 2`)
    expect(kept).toEqual([{ tenant_id: 't2', conversation_id: 'c-other' }])
    // The content-free log says how many archives each forget opened.
    const { rows: log } = await t.db.query<{ archives: number }>(`SELECT (counts->>'archives')::int AS archives FROM forget_log ORDER BY created_at, id`)
    expect(log.map((r) => r.archives)).toEqual([1, 1, 0, 1])
  })

  it('the retrieval hits noted in memory are written when archiving looks at them or the engine stops', async () => {
    const { t, m, clock } = await conversations()
    await using _ = t
    const hits = async () => (await t.db.query(`SELECT conversation_id, last_hit_at FROM conversation_hits ORDER BY 1`)).rows
    await m.buildContext({ query: 'where do refunds post?', conversationId: 'c-now', userId: 'ann' })
    // Reads never write: nothing yet.
    expect(await hits()).toEqual([])
    await m.stopIndexing()
    expect(await hits()).toContainEqual({ conversation_id: 'c-found', last_hit_at: clock.now() })
    // A later hit moves it on; an archive made after the hit went stale sees the new one.
    clock.advance(IDLE + DAY)
    await m.search('refunds', { limit: 1 })
    expect((await m.archives.create({ idleForMs: IDLE })).map((a) => a.conversationId)).not.toContain('c-found')
    expect(await hits()).toContainEqual({ conversation_id: 'c-found', last_hit_at: clock.now() })
  })

  it('the hits are written in the background a while after the first one not yet written, and never after stop', async () => {
    await using t = await openTestEngine()
    const errors: unknown[] = []
    const log = createHitLog(t.db, { onError: (e) => errors.push(e), delayMs: 20 })
    const rows = async () => (await t.db.query(`SELECT tenant_id, conversation_id FROM conversation_hits ORDER BY 2, 1`)).rows
    for (const [tenantId, conversationId] of [['default', 'a'], ['default', 'b'], ['t2', 'a']] as const) {
      await t.engine.record({ kind: 'message', scope: { tenantId, conversationId }, actor: { type: 'human', id: 'u' }, content: { text: 'hi' } })
    }
    // A conversation with no event, live or archived (forgotten since), is not written.
    log.note('default', ['gone'], new Date('2025-01-01T00:00:00Z'))
    log.note('default', ['a', 'b'], new Date('2025-01-01T00:00:00Z'))
    log.note('t2', ['a'], new Date('2025-01-01T00:00:01Z'))
    expect(await rows()).toEqual([])
    await new Promise((r) => setTimeout(r, 200))
    expect(await rows()).toEqual([
      { tenant_id: 'default', conversation_id: 'a' },
      { tenant_id: 't2', conversation_id: 'a' },
      { tenant_id: 'default', conversation_id: 'b' },
    ])
    await log.stop()
    log.note('default', ['c'], new Date('2025-01-01T00:00:02Z'))
    await new Promise((r) => setTimeout(r, 100))
    expect(await rows()).toHaveLength(3)
    expect(errors).toEqual([])
  })

  it('refuses bad options, and an export carries the archives to the memory it restores', async () => {
    const { t, m } = await conversations()
    await using _ = t
    for (const bad of [{}, { idleForMs: -1 }, { conversationIds: [] }, { idleForMs: 1, limit: 100_000 }, { idleForMs: 1, extra: true }]) {
      await expect(m.archives.create(bad as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
      await expect(m.archives.candidates(bad as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
    await expect(m.archives.restore('')).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(m.archives.list({ tenant: 'x' } as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    expect(await m.archives.list()).toEqual([])

    // Without its vectors an archive is smaller; a restore leaves the chunks to the indexer.
    const [lean] = await m.archives.create({ conversationIds: ['c-old'], vectors: false })
    expect(lean?.counts).toMatchObject({ chunks: 5, vectors: 0 })
    const [full] = await m.archives.create({ conversationIds: ['c-found'] })
    expect(full?.counts.vectors).toBe(2)
    expect(await m.archives.restore(lean!.id)).toMatchObject({ vectorsRestored: 0 })
    expect((await m.stats()).unembeddedChunks).toBe(5)
    await m.indexNow()
    expect((await m.search('invoice export currency column', { mode: 'vector', limit: 1 }))[0]?.conversationId).toBe('c-old')
    await m.archives.restore(full!.id)

    const [archive] = await m.archives.create({ conversationIds: ['c-old'] })
    expect(archive!.bytes).toBeGreaterThan(lean!.bytes)
    await using target = await openTestEngine({ embedder: createHashEmbedder({ dims: 32 }), indexing: 'manual' })
    await target.engine.importFile(await m.exportFile(), { mode: 'replace' })
    expect(await target.engine.archives.list()).toEqual([archive])
    await target.engine.archives.restore(archive!.id)
    await m.archives.restore(archive!.id)
    expect(await conversationState(target.engine, 'c-old')).toEqual(await conversationState(m, 'c-old'))
  })
})
