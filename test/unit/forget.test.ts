import { describe, expect, it } from 'vitest'
import { toMemoryError, withMemoryErrors } from '../../src/core/db/errors.ts'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { testClock } from '../support/clock.ts'
import { openTestEngine } from '../support/engine.ts'

async function seeded() {
  const clock = testClock('2025-05-01T08:00:00.000Z')
  const t = await openTestEngine({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
  const m = t.engine
  const big = 'line of build output\n'.repeat(5000)
  const a = await m.recordTurn({
    conversationId: 'c1',
    scope: { userId: 'ann' },
    user: 'build it',
    agent: 'Built; README updated.',
    procedures: [
      { tool: 'build', args: {}, output: big },
      { tool: 'write_file', args: {}, document: { path: 'README.md', content: 'secret plan', effect: 'write' } },
    ],
  })
  clock.advance(1000)
  const b = await m.recordTurn({
    conversationId: 'c2',
    scope: { userId: 'bob' },
    user: 'read the readme',
    agent: 'It holds a plan.',
    procedures: [{ tool: 'read_file', args: {}, document: { path: 'README.md', content: 'secret plan', effect: 'read' } }],
  })
  clock.advance(1000)
  return { t, m, a, b, clock }
}

describe('append-only store', () => {
  it('the database refuses UPDATE and DELETE of events and versions', async () => {
    const { t, a } = await seeded()
    await using _ = t
    await expect(t.db.query(`UPDATE events SET content = '{}' WHERE id = $1`, [a.userEventId])).rejects.toMatchObject({
      code: 'EG001',
    })
    await expect(t.db.query(`DELETE FROM events`)).rejects.toThrow(/append-only/)
    await expect(t.db.query(`UPDATE doc_versions SET content = 'x'`)).rejects.toThrow(/append-only/)
    await expect(t.db.query(`UPDATE edges SET props = '{}'`)).rejects.toThrow(/append-only/)
    await expect(t.db.query(`DELETE FROM edges`)).rejects.toThrow(/append-only/)
    await t.engine.forget({ conversationId: 'nothing-here' })
    await expect(t.db.query(`DELETE FROM forget_log`)).rejects.toThrow(/append-only/)
    expect((await t.engine.events.get(a.userEventId)).content).toEqual({ text: 'build it' })
  })

  it('a refused write that passes through the engine is APPEND_ONLY', async () => {
    const { t, a } = await seeded()
    await using _ = t
    const raw = await t.db.query(`UPDATE events SET tags = '{x}' WHERE id = $1`, [a.userEventId]).catch((e: unknown) => e)
    const mapped = toMemoryError(raw)
    expect(mapped).toBeInstanceOf(MemoryError)
    expect(mapped).toMatchObject({ code: 'APPEND_ONLY', details: { sqlstate: 'EG001' }, cause: raw })

    const api = withMemoryErrors({
      nested: { rewrite: () => t.db.query(`DELETE FROM events WHERE id = $1`, [a.userEventId]) },
    })
    await expect(api.nested.rewrite()).rejects.toMatchObject({ name: 'MemoryError', code: 'APPEND_ONLY' })
  })
})

describe('forget', () => {
  it('forgetting a conversation deletes its content and leaves a content-free audit row', async () => {
    const { t, m, a, b } = await seeded()
    await using _ = t
    const before = (await m.stats()).counts
    expect(before).toMatchObject({ events: 6, artifacts: 1, documents: 1, doc_versions: 1, forget_log: 0 })

    const r = await m.forget({ conversationId: 'c1' })
    expect(r.forgetId).toMatch(/^fgt_/)
    expect(r.counts).toEqual({
      events: 4,
      chunks: a.chunkIds.length,
      artifacts: 1,
      edges: 4, // MESSAGE, build, RESULT, write_file; VERSION_OF is structural and stays
      versionsCleared: 1,
      versionsDeleted: 0,
      documentsDeleted: 0,
      archives: 0,
      memories: 0,
      memoryHistory: 0,
      memoryContexts: 0,
      kv: 0,
      nodes: 0,
    })
    const after = (await m.stats()).counts
    expect(after).toMatchObject({ events: 2, chunks: b.chunkIds.length, artifacts: 0, documents: 1, doc_versions: 1, forget_log: 1 })
    expect(await m.events.list({ conversationId: 'c1' })).toEqual([])
    await expect(m.events.get(a.userEventId)).rejects.toMatchObject({ code: 'NOT_FOUND' })

    // The version stays (c2 still points at it) but its content and link to c1 are gone.
    const version = await m.documents.version(a.versionIds[0] as string)
    expect(version).toMatchObject({ content: null, conversationId: null, eventId: null, version: 1 })
    expect((await m.graph.in(version.id)).map((e) => e.src)).toEqual([b.agentEventId])

    const { rows } = await t.db.query<{ target: unknown; counts: unknown; reason: unknown }>(
      'SELECT target, counts, reason FROM forget_log',
    )
    expect(rows).toEqual([{ target: { conversationId: 'c1', tenantId: 'default' }, counts: r.counts, reason: null }])
    const { rows: leftovers } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT content::text AS t FROM events UNION ALL SELECT text FROM chunks
         UNION ALL SELECT coalesce(content, '') FROM doc_versions UNION ALL SELECT target::text FROM forget_log
       ) x WHERE t LIKE '%build%' OR t LIKE '%secret plan%'`,
    )
    expect(leftovers[0]?.n).toBe(0)
  })

  it('forgetting one event removes it, its chunks and the edges touching it', async () => {
    const { t, m, a } = await seeded()
    await using _ = t
    const r = await m.forget({ eventId: a.toolEventIds[1] as string, reason: 'too long' })
    // The 64 KB excerpt of the build output was cut into 19 chunks of ≤ 1000 estimated tokens.
    expect(r.counts).toMatchObject({ events: 1, chunks: 19, artifacts: 1, edges: 1 })
    expect(await m.graph.out(a.toolEventIds[0] as string, 'RESULT')).toEqual([])
    await expect(m.forget({ eventId: a.toolEventIds[1] as string })).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect((await m.stats()).counts.forget_log).toBe(1)
  })

  it("artifactsBefore deletes the tenant's older full tool outputs and keeps their events' excerpts", async () => {
    const { t, m, a, clock } = await seeded()
    await using _ = t
    const cutoff = clock.now().toISOString()
    clock.advance(1000)
    const later = await m.recordTurn({
      conversationId: 'c3',
      scope: { userId: 'ann' },
      user: 'test it',
      agent: 'Tests pass.',
      procedures: [{ tool: 'test', args: {}, output: 'test output line\n'.repeat(5000) }],
    })
    const other = await m.recordTurn({
      conversationId: 'c4',
      scope: { userId: 'ann', tenantId: 'acme' },
      user: 'lint it',
      agent: 'Clean.',
      procedures: [{ tool: 'lint', args: {}, output: 'lint output line\n'.repeat(5000) }],
    })
    clock.advance(1000)
    const artifactOf = async (eventId: string, tenantId?: string) => {
      const event = await m.events.get(eventId, tenantId ? { tenantId } : {})
      return { id: event.content.artifactId as string, excerpt: event.content.output as string, truncated: event.content.truncated }
    }
    const old = await artifactOf(a.toolEventIds[1] as string)
    const kept = await artifactOf(later.toolEventIds[1] as string)
    const elsewhere = await artifactOf(other.toolEventIds[1] as string, 'acme')

    const r = await m.forget({ artifactsBefore: cutoff, reason: 'retention: 30 days' })
    expect(r.counts).toMatchObject({ events: 0, chunks: 0, artifacts: 1, edges: 0, versionsCleared: 0, versionsDeleted: 0, documentsDeleted: 0, archives: 0, memories: 0 })
    await expect(m.artifacts.get(old.id)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect(await artifactOf(a.toolEventIds[1] as string)).toEqual(old)
    expect(old.truncated).toBe(true)
    expect((await m.artifacts.get(kept.id)).content).toContain('test output line')
    expect((await m.artifacts.get(elsewhere.id, { tenantId: 'acme' })).content).toContain('lint output line')
    // The audit row says what and when, and the change feed lists it.
    const changes = await m.diffSince(cutoff)
    expect(changes.forgets.map((f) => f.target)).toEqual([{ artifactsBefore: cutoff, tenantId: 'default' }])
    // Nothing older is left: forgetting again deletes nothing.
    expect((await m.forget({ artifactsBefore: cutoff })).counts.artifacts).toBe(0)
    await expect(m.forget({ artifactsBefore: 'last month' })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('forgetting a user scope leaves other users alone; a whole tenant takes its documents too', async () => {
    const { t, m, b } = await seeded()
    await using _ = t
    // The words of the actors' ids that search reads (schema/0010-actor-terms.ts) follow the events.
    const actorsKept = async () => ({
      terms: (await t.db.query<{ actor_id: string }>('SELECT DISTINCT actor_id FROM actor_terms ORDER BY 1')).rows.map((r) => r.actor_id),
      events: (await t.db.query<{ actor_id: string }>('SELECT DISTINCT actor_id FROM events ORDER BY 1')).rows.map((r) => r.actor_id),
    })
    const before = await actorsKept()
    expect(before.terms).toEqual(before.events)
    const r = await m.forget({ scope: { tenantId: 'default', userId: 'ann' } })
    expect(r.counts).toMatchObject({ events: 4, versionsCleared: 1, documentsDeleted: 0 })
    expect((await m.events.list({ conversationId: 'c2' })).map((e) => e.id)).toEqual([b.userEventId, b.agentEventId])
    const after = await actorsKept()
    expect(after.terms).toEqual(after.events)
    expect(after.terms.length).toBeLessThan(before.terms.length)

    const all = await m.forget({ scope: { tenantId: 'default' } })
    expect(all.counts).toMatchObject({ events: 2, versionsDeleted: 1, documentsDeleted: 1 })
    const counts = (await m.stats()).counts
    expect(counts).toMatchObject({ events: 0, chunks: 0, edges: 0, documents: 0, doc_versions: 0, actor_terms: 0, forget_log: 2 })
  })

  it("curated memories are erased with every earlier text; a user's or tenant's forget takes their memories, contexts, policy entries and nodes", async () => {
    const { t, m } = await seeded()
    await using _ = t
    const note = await m.remember({ content: 'Ann lives in Bergen', category: 'fact', userId: 'ann', context: 'Home' })
    await m.memories.update(note.id, { content: 'Ann lives in Oslo' })
    await m.remember({ content: 'Ann drinks tea', category: 'preference', userId: 'ann', relatedTo: [note.id] })
    await m.remember({ content: 'Bob drinks coffee', category: 'preference', userId: 'bob', context: 'Home' })
    await m.kv.put('user:ann', 'rules', 'tone', 'short answers')
    await m.kv.put('user:bob', 'rules', 'tone', 'long answers')
    await m.graph.putNode({ id: 'person:ann', type: 'person' })
    const texts = async () => {
      const { rows } = await t.db.query<{ t: string }>(
        `SELECT content AS t FROM memories UNION ALL SELECT coalesce(old_value, '') || coalesce(new_value, '') FROM memory_history`,
      )
      return rows.map((r) => r.t).join('|')
    }
    expect(await texts()).toContain('Bergen')

    // One memory by id: its row, its history (Bergen, then Oslo) and its links go; nothing else.
    const one = await m.forget({ memoryIds: [note.id], reason: 'asked to' })
    expect(one.counts).toMatchObject({ memories: 1, memoryHistory: 2, events: 0 })
    expect(await m.memories.get(note.id)).toBeNull()
    expect(await texts()).not.toMatch(/Bergen|Oslo/)
    expect((await m.memories.list({ userId: 'ann' })).map((x) => [x.content, x.relatedTo])).toEqual([['Ann drinks tea', []]])
    await expect(m.forget({ memoryIds: [note.id] })).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(m.forget({ memoryIds: [] })).rejects.toMatchObject({ code: 'INVALID_INPUT' })

    // A memory by id goes with its earlier versions: the memories it replaced, by key and so on.
    const first = await m.remember({ content: 'Ann lives at 1 Main Street', category: 'fact', userId: 'ann', key: 'address' })
    await m.remember({ content: 'Ann lives at 9 Elm Road', category: 'fact', userId: 'ann', key: 'address' })
    const last = await m.remember({ content: 'Ann lives at 22 Oak Avenue', category: 'fact', userId: 'ann', key: 'address' })
    expect(first.id).not.toBe(last.id)
    const address = await m.forget({ memoryIds: [last.id] })
    expect(address.counts).toMatchObject({ memories: 3 })
    expect(await texts()).not.toMatch(/Main Street|Elm Road|Oak Avenue/)
    expect((await m.memories.list({ userId: 'ann', status: 'any' })).map((x) => x.content)).toEqual(['Ann drinks tea'])

    // A user: their events as before, and now their memories, contexts and own policy scope.
    const ann = await m.forget({ scope: { tenantId: 'default', userId: 'ann' } })
    expect(ann.counts).toMatchObject({ memories: 1, memoryContexts: 1, kv: 1, nodes: 0 })
    expect(await texts()).not.toContain('Ann drinks tea')
    expect(await m.kv.get('user:ann', 'rules', 'tone')).toBeNull()
    expect(await m.kv.history('user:ann', 'rules', 'tone')).toEqual([])
    expect((await m.memories.list({ userId: 'bob' })).map((x) => x.content)).toEqual(['Bob drinks coffee'])
    expect((await m.memories.contexts()).map((c) => [c.name, c.userId])).toEqual([['Home', 'bob']])
    expect((await m.kv.get('user:bob', 'rules', 'tone'))?.payload).toBe('long answers')
    // Nothing of Ann's curated memory reaches an export either.
    const exported = new TextDecoder().decode(
      new Uint8Array(await new Response((await m.exportFile()).slice(9).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer()),
    )
    expect(exported).not.toMatch(/Bergen|Oslo|Ann drinks tea|short answers/)
    expect(exported).toContain('Bob drinks coffee')

    // The whole tenant: every memory, context, policy entry and node.
    const all = await m.forget({ scope: { tenantId: 'default' } })
    expect(all.counts).toMatchObject({ memories: 1, memoryContexts: 1, kv: 1, nodes: 1 })
    expect((await m.stats()).counts).toMatchObject({ memories: 0, events: 0 })
    expect(await m.graph.getNode('person:ann')).toBeNull()
    expect(await m.graph.nodeHistory('person:ann')).toEqual([])
  })

  it('the forgetting switch does not outlive forget', async () => {
    const { t, m, a } = await seeded()
    await using _ = t
    await m.forget({ conversationId: 'c2' })
    await expect(t.db.query(`DELETE FROM events WHERE id = $1`, [a.userEventId])).rejects.toThrow(/append-only/)
  })
})

describe('forget and the retrieval hits a search noted', () => {
  it("a forgotten conversation's hits, noted before it was forgotten, are not written after", async () => {
    await using t = await openTestEngine({ indexing: 'manual' })
    const m = t.engine
    await m.recordTurn({ conversationId: 'secret-conv', user: 'the zebra password', agent: 'noted' })
    await m.recordTurn({ conversationId: 'kept-conv', user: 'a zebra at the zoo', agent: 'noted' })
    const found = await m.search('zebra', { mode: 'keyword' })
    expect(new Set(found.map((hit) => hit.conversationId))).toEqual(new Set(['secret-conv', 'kept-conv']))
    // The hits wait in memory: forgetting, with a write of them queued behind it (archiving
    // reads them), then the stop's.
    const forgetting = m.forget({ conversationId: 'secret-conv' })
    const candidates = m.archives.candidates({ idleForMs: 0 })
    await Promise.all([forgetting, candidates])
    await m.stopIndexing()
    const { rows } = await t.db.query<{ conversation_id: string }>('SELECT conversation_id FROM conversation_hits ORDER BY 1')
    expect(rows.map((r) => r.conversation_id)).toEqual(['kept-conv'])
  })
})
