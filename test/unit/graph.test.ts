import { describe, expect, it } from 'vitest'
import { testClock } from '../support/clock.ts'
import { openTestMemory } from '../support/memory.ts'

async function twoConversationsSharingAFile() {
  const clock = testClock('2025-04-01T09:00:00.000Z')
  const memory = await openTestMemory({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
  const t1 = await memory.recordTurn({
    conversationId: 'c1',
    user: 'how does login work?',
    agent: 'It checks a bcrypt hash.',
    procedures: [{ tool: 'read_file', args: { path: 'src/auth.ts' }, document: { path: 'src/auth.ts', content: 'v1', effect: 'read' } }],
  })
  clock.advance(60_000)
  const t2 = await memory.recordTurn({
    conversationId: 'c2',
    user: 'switch login to argon2',
    agent: 'Done.',
    procedures: [
      { tool: 'read_file', args: { path: 'src/auth.ts' }, document: { path: 'src/auth.ts', content: 'v1', effect: 'read' } },
      { tool: 'edit_file', args: { path: 'src/auth.ts' }, document: { path: 'src/auth.ts', content: 'v2', effect: 'write' } },
    ],
  })
  clock.advance(60_000)
  return { memory, clock, t1, t2 }
}

describe('graph', () => {
  it('out and in list edges by relation, oldest first', async () => {
    const { memory, t1, t2 } = await twoConversationsSharingAFile()
    await using _ = memory
    const v1 = t1.procedures[0]?.versionId as string
    const v2 = t2.procedures[1]?.versionId as string
    expect(t2.procedures[0]?.versionId).toBe(v1)
    expect(t2.procedures[1]).toMatchObject({ provenance: 'agent', version: 2, versionCreated: true })

    const intoV1 = await memory.graph.in(v1)
    expect(intoV1.map((e) => [e.rel, e.src, e.conversationId])).toEqual([
      ['read_file', t1.agentEventId, 'c1'],
      ['read_file', t2.agentEventId, 'c2'],
    ])
    expect((await memory.graph.in(v2, 'edit_file')).map((e) => e.src)).toEqual([t2.agentEventId])
    expect(await memory.graph.in(v2, 'read_file')).toEqual([])
    // A relation no edge was ever written under is a hard error, as in the entity graph.
    for (const read of [
      () => memory.graph.out(t2.agentEventId, { rel: 'nonexistent' }),
      () => memory.graph.in(v2, 'nonexistent'),
      () => memory.graph.walk(t2.agentEventId, { rels: ['read_file', 'nonexistent'] }),
    ]) {
      await expect(read()).rejects.toMatchObject({ code: 'UNKNOWN_RELATION', details: { relations: ['nonexistent'] } })
    }
  })

  it('walk follows edges both ways without looping and reports each node at its shortest depth', async () => {
    const { memory, t1, t2 } = await twoConversationsSharingAFile()
    await using _ = memory
    const v1 = t1.procedures[0]?.versionId as string
    const v2 = t2.procedures[1]?.versionId as string
    const doc = t1.procedures[0]?.documentId as string

    const w = await memory.graph.walk(t1.userEventId, { depth: 4 })
    const depthOf = Object.fromEntries(w.nodes.map((n) => [n.id, n.depth]))
    expect(depthOf).toEqual({
      [t1.userEventId]: 0,
      [t1.agentEventId]: 1,
      [v1]: 2,
      [doc]: 3,
      [t2.agentEventId]: 3,
      [v2]: 4,
      [t2.userEventId]: 4,
    })
    expect(w.nodes.find((n) => n.id === doc)?.kind).toBe('document')
    expect(w.nodes.find((n) => n.id === v1)?.kind).toBe('version')
    expect(w.truncated).toBe(false)
    // Every edge between kept nodes that the walk crossed: MESSAGE×2, read_file×2, edit_file, VERSION_OF×2.
    expect(w.edges.map((e) => e.rel).sort()).toEqual([
      'MESSAGE',
      'MESSAGE',
      'VERSION_OF',
      'VERSION_OF',
      'edit_file',
      'read_file',
      'read_file',
    ])

    const onlyMessages = await memory.graph.walk(t1.userEventId, { depth: 5, rels: ['MESSAGE'] })
    expect(onlyMessages.nodes.map((n) => n.id)).toEqual([t1.userEventId, t1.agentEventId])

    const limited = await memory.graph.walk(t1.userEventId, { depth: 4, limit: 3 })
    expect(limited.nodes.map((n) => n.depth)).toEqual([0, 1, 2])
    expect(limited.truncated).toBe(true)
  })

  it('asOf hides later rows and shows tombstoned edges before their tombstone', async () => {
    const { memory, clock, t1, t2 } = await twoConversationsSharingAFile()
    await using _ = memory
    const v1 = t1.procedures[0]?.versionId as string
    const firstEdge = t1.procedures[0]?.edgeId as string

    expect((await memory.graph.in(v1, { asOf: '2025-04-01T09:00:30Z' })).map((e) => e.src)).toEqual([t1.agentEventId])
    const before = await memory.graph.walk(t1.userEventId, { depth: 4, asOf: '2025-04-01T09:00:30Z' })
    expect(before.nodes).toHaveLength(4) // user, reply, v1, document

    clock.advance(60_000)
    const tomb = await memory.graph.tombstone(firstEdge)
    expect(tomb.tombstonedAt).toBe('2025-04-01T09:03:00.000Z')
    await expect(memory.graph.tombstone(firstEdge)).rejects.toMatchObject({ code: 'CONFLICT' })

    expect((await memory.graph.in(v1)).map((e) => e.src)).toEqual([t2.agentEventId])
    expect((await memory.graph.in(v1, { asOf: '2025-04-01T09:02:30Z' })).map((e) => e.src)).toEqual([
      t1.agentEventId,
      t2.agentEventId,
    ])
    const conv = await memory.graph.conversation('c1', { asOf: '2025-04-01T09:02:30Z' })
    // Ordered by time, then id: a version's VERSION_OF edge is written before the turn's own edges.
    expect(conv.edges.map((e) => e.rel)).toEqual(['VERSION_OF', 'MESSAGE', 'read_file'])
    // After the tombstone the read is gone; the version c1 created still belongs to its subgraph.
    expect((await memory.graph.conversation('c1')).edges.map((e) => e.rel)).toEqual(['VERSION_OF', 'MESSAGE'])
  })

  it('conversation returns the subgraph of one conversation with the versions and documents it touched', async () => {
    const { memory, t2 } = await twoConversationsSharingAFile()
    await using _ = memory
    const g = await memory.graph.conversation('c2')
    expect(g.events.map((e) => e.id)).toEqual([t2.userEventId, t2.agentEventId])
    expect(g.edges.map((e) => e.rel)).toEqual(['VERSION_OF', 'VERSION_OF', 'MESSAGE', 'read_file', 'edit_file'])
    expect(g.edges[0]?.createdAt).toBe('2025-04-01T09:00:00.000Z') // v1's, from c1's turn
    expect(g.versions.map((v) => [v.version, v.provenance])).toEqual([
      [1, 'initial'],
      [2, 'agent'],
    ])
    expect(g.documents.map((d) => d.canonicalKey)).toEqual(['src/auth.ts'])
    expect(await memory.graph.conversation('nobody')).toMatchObject({ events: [], edges: [], versions: [], documents: [] })
  })

  it('walk crosses edges written by the entity graph, to ids that are no rows', async () => {
    const { memory, t1 } = await twoConversationsSharingAFile()
    await using _ = memory
    await memory.graph.defineRelation('SUPPORTED_BY', 'an answer → the ticket that backs it')
    await memory.graph.putEdge(t1.agentEventId, 'SUPPORTED_BY', 'ext:ticket-42', { w: 1 })
    const [edge] = await memory.graph.out(t1.agentEventId, 'SUPPORTED_BY')
    expect(edge).toMatchObject({ rel: 'SUPPORTED_BY', dst: 'ext:ticket-42', props: { w: 1 }, tenantId: 'default' })
    const w = await memory.graph.walk('ext:ticket-42', { depth: 1 })
    expect(w.nodes).toEqual([
      { id: 'ext:ticket-42', kind: null, depth: 0 },
      { id: t1.agentEventId, kind: 'event', depth: 1 },
    ])
  })

  it('documents.interactions lists the turns that touched a document, newest first, with the version each saw and its staleness', async () => {
    const { memory, clock, t1, t2 } = await twoConversationsSharingAFile()
    await using _ = memory
    const touches = await memory.documents.interactions('src/auth.ts')
    expect(touches.map((t) => [t.rel, t.eventId, t.conversationId, t.version, t.staleness])).toEqual([
      ['edit_file', t2.agentEventId, 'c2', 2, 0],
      ['read_file', t2.agentEventId, 'c2', 1, 1],
      ['read_file', t1.agentEventId, 'c1', 1, 1],
    ])
    expect(touches[2]?.createdAt).toBe('2025-04-01T09:00:00.000Z')
    // As of before the edit, version 1 was the latest; limit keeps the newest.
    const before = await memory.documents.interactions('src/auth.ts', { asOf: '2025-04-01T09:00:30Z' })
    expect(before.map((t) => [t.conversationId, t.staleness])).toEqual([['c1', 0]])
    expect((await memory.documents.interactions('src/auth.ts', { limit: 1 })).map((t) => t.rel)).toEqual(['edit_file'])
    // A sensitive turn's touch stays out of a public channel; another tenant has no such document.
    clock.advance(1000)
    await memory.recordTurn({
      conversationId: 'c3',
      user: 'audit login',
      agent: 'Audited.',
      sensitivity: 'high',
      procedures: [{ tool: 'read_file', args: { path: 'src/auth.ts' }, document: { path: 'src/auth.ts', content: 'v2', effect: 'read' } }],
    })
    expect((await memory.documents.interactions('src/auth.ts')).map((t) => t.conversationId)[0]).toBe('c3')
    expect((await memory.documents.interactions('src/auth.ts', { channel: 'public' })).map((t) => t.conversationId)[0]).toBe('c2')
    await expect(memory.documents.interactions('src/auth.ts', { tenantId: 'other' })).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(memory.documents.interactions('src/auth.ts', { limit: 0 })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('turns lead from search hits to their turns: question, answer, procedures and the versions they saw, with staleness', async () => {
    const { memory, t1, t2 } = await twoConversationsSharingAFile()
    await using _ = memory
    const note = await memory.record({ kind: 'message', scope: { conversationId: 'c3' }, actor: { type: 'human', id: 'ann' }, content: { text: 'no turn' } })
    const secret = await memory.recordTurn({ conversationId: 'c4', user: 'the admin password policy?', agent: 'Rotated monthly.', sensitivity: 'high' })
    const hits = await memory.search('login')
    expect(hits.map((h) => h.eventId)).toContain(t1.agentEventId)
    const [first, second, standalone, ...rest] = await memory.turns([t1.agentEventId, t2.userEventId, note.eventId, 'evt_nothing', secret.userEventId], {
      channel: 'public',
    })
    expect(rest).toEqual([])
    expect(first).toMatchObject({
      eventId: t1.agentEventId,
      userEventId: t1.userEventId,
      userText: 'how does login work?',
      replyEventId: t1.agentEventId,
      replyText: 'It checks a bcrypt hash.',
    })
    expect(first?.procedures).toEqual([
      { tool: 'read_file', args: { path: 'src/auth.ts' }, versionId: t1.procedures[0]?.versionId, document: 'src/auth.ts', version: 1, latestVersion: 2, staleness: 1 },
    ])
    expect(second?.procedures.map((p) => [p.tool, p.version, p.staleness])).toEqual([
      ['read_file', 1, 1],
      ['edit_file', 2, 0],
    ])
    expect(standalone).toEqual({ eventId: note.eventId, userEventId: null, userText: null, replyEventId: null, replyText: null, procedures: [] })
    // As of before the edit, what c1 read was current; the sensitive turn is there on a private channel.
    expect((await memory.turns([t1.agentEventId], { asOf: '2025-04-01T09:00:30Z' }))[0]?.procedures[0]?.staleness).toBe(0)
    expect((await memory.turns([secret.userEventId]))[0]?.replyText).toBe('Rotated monthly.')
    expect(await memory.turns([t1.agentEventId], { tenantId: 'other' })).toEqual([])
    await expect(memory.turns('evt_x' as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('diffSince lists what was created after a time', async () => {
    const { memory, clock, t2 } = await twoConversationsSharingAFile()
    await using _ = memory
    const d = await memory.diffSince('2025-04-01T09:00:30Z')
    expect(d.events.map((e) => e.id)).toEqual([t2.userEventId, t2.agentEventId])
    expect(d.versions.map((v) => v.version)).toEqual([2])
    expect(d.documents).toEqual([])
    expect(d.edges.map((e) => e.rel).sort()).toEqual(['MESSAGE', 'VERSION_OF', 'edit_file', 'read_file'])
    expect(d.until).toBe('2025-04-01T09:02:00.000Z')

    clock.advance(1000)
    await memory.forget({ conversationId: 'c1', reason: 'user asked' })
    const later = await memory.diffSince('2025-04-01T09:02:00Z')
    expect(later.events).toEqual([])
    expect(later.forgets).toHaveLength(1)
    expect(later.forgets[0]).toMatchObject({ target: { conversationId: 'c1', tenantId: 'default' }, reason: 'user asked' })
    expect([later.nodes, later.kv, later.memories]).toEqual([[], [], []])
  })

  it("diffSince's until, passed back as the next since, misses no write: one in the same millisecond as the cut lands after it", async () => {
    const { memory, clock } = await twoConversationsSharingAFile()
    await using _ = memory
    const first = await memory.diffSince('2025-04-01T09:00:30Z')
    // The clock has not moved: without the cut these would carry the time of `until` and fall
    // outside both lists.
    await memory.kv.put('repo', 'rules', 'r1', 'tabs')
    await memory.graph.putNode({ id: 'module:auth', type: 'module' })
    const second = await memory.diffSince(first.until)
    expect(second.kv.map((k) => k.key)).toEqual(['r1'])
    expect(second.nodes.map((n) => n.id)).toEqual(['module:auth'])
    expect(new Date(second.kv[0]?.createdAt as Date).getTime()).toBe(Date.parse(first.until) + 1)
    clock.advance(1000)
    expect((await memory.diffSince(second.until)).kv).toEqual([])
    // A write still running when a list is cut (it took its time, it has not committed): in
    // this list or the next, never in neither.
    for (let n = 0; n < 5; n++) {
      const from = (await memory.diffSince(first.since)).until
      clock.advance(1)
      const writing = memory.record({ kind: 'message', scope: { conversationId: 'c9' }, actor: { type: 'human', id: 'u' }, content: { text: `note ${n} ${'x'.repeat(20_000)}` } })
      const during = await memory.diffSince(from)
      clock.advance(1)
      const { eventId } = await writing
      const after = await memory.diffSince(during.until)
      const lists = [during, after].map((d) => d.events.some((e) => e.id === eventId))
      expect(lists.filter(Boolean), `run ${n}: ${JSON.stringify(lists)}`).toHaveLength(1)
    }
    // An explicit until cuts nothing: a write at that time keeps it.
    clock.advance(1000)
    await memory.diffSince(first.since, { until: clock.now() })
    await memory.kv.put('repo', 'rules', 'r2', 'spaces')
    expect((await memory.kv.get('repo', 'rules', 'r2'))?.createdAt).toEqual(clock.now())
  })

  it('an edge tombstoned later reads untombstoned as of a time before; a tombstone to come is refused', async () => {
    const { memory, clock, t1 } = await twoConversationsSharingAFile()
    await using _ = memory
    const v1 = t1.procedures[0]?.versionId as string
    const edge = t1.procedures[0]?.edgeId as string
    const before = clock.now().toISOString()
    clock.advance(1000)
    await expect(memory.graph.tombstone(edge, { at: new Date(clock.now().getTime() + 3_600_000) })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      details: { field: 'at' },
    })
    expect((await memory.graph.in(v1)).map((e) => e.id)).toContain(edge)
    const ended = await memory.graph.tombstone(edge)
    expect(ended.tombstonedAt).toBe(clock.now().toISOString())
    const tombOf = (edges: { id: string; tombstonedAt: string | null }[]) => edges.find((e) => e.id === edge)?.tombstonedAt
    expect(tombOf(await memory.graph.in(v1, { asOf: before }))).toBeNull()
    expect(tombOf((await memory.graph.walk(t1.userEventId, { depth: 2, asOf: before })).edges)).toBeNull()
    expect(tombOf((await memory.graph.conversation('c1', { asOf: before })).edges)).toBeNull()
    expect(tombOf((await memory.diffSince('2025-04-01T08:00:00Z', { until: before })).edges)).toBeNull()
    // As of the tombstone and after, it is ended; a list reaching past it names the end.
    expect(tombOf(await memory.graph.in(v1, { asOf: ended.tombstonedAt as string }))).toBeUndefined()
    expect(tombOf((await memory.diffSince(before)).edges)).toBe(ended.tombstonedAt)
  })

  it('diffSince also lists entity-graph node revisions, policy revisions and what happened to curated memories', async () => {
    const { memory, clock } = await twoConversationsSharingAFile()
    await using _ = memory
    const since = clock.now().toISOString()
    clock.advance(1000)
    await memory.graph.putNode({ id: 'module:auth', type: 'module', payload: { owner: 'ann' }, runId: 'r1' })
    await memory.graph.putNode({ id: 'module:auth', type: 'module', payload: { owner: 'bo' }, runId: 'r1' })
    await memory.kv.put('project', 'rules', 'indent', { spaces: 2 }, { runId: 'r1', taskId: 't1' })
    await memory.graph.putNode({ id: 'module:billing', type: 'module', tenantId: 'other' })
    const m = await memory.remember({ content: 'Ann reviews auth changes', category: 'fact', userId: 'ann' })
    clock.advance(1000)
    const cut = clock.now().toISOString()
    clock.advance(1000)
    await memory.memories.update(m.id, { content: 'Bo reviews auth changes' })
    await memory.graph.removeNode('module:auth')
    await memory.kv.delete('project', 'rules', 'indent')

    const d = await memory.diffSince(since, { until: cut, tenantId: 'default' })
    expect(d.nodes.map((n) => [n.id, n.rev, n.payload, n.runId, n.tombstone])).toEqual([
      ['module:auth', 1, { owner: 'ann' }, 'r1', false],
      ['module:auth', 2, { owner: 'bo' }, 'r1', false],
    ])
    expect(d.nodes[0]?.updatedAt).toBeInstanceOf(Date)
    expect(d.kv.map((k) => [k.key, k.rev, k.payload, k.deleted, k.runId, k.taskId, k.tenantId])).toEqual([
      ['indent', 1, { spaces: 2 }, false, 'r1', 't1', 'default'],
    ])
    expect(d.memories.map((h) => [h.memoryId, h.event, h.newValue, h.tenantId])).toEqual([[m.id, 'ADD', 'Ann reviews auth changes', 'default']])
    expect(d.memories[0]?.createdAt).toBeInstanceOf(Date)

    const after = await memory.diffSince(cut)
    expect(after.nodes.map((n) => [n.id, n.rev, n.tombstone])).toEqual([['module:auth', 3, true]])
    expect(after.kv.map((k) => [k.key, k.rev, k.deleted])).toEqual([['indent', 2, true]])
    expect(after.memories.map((h) => [h.event, h.oldValue, h.newValue])).toEqual([['UPDATE', 'Ann reviews auth changes', 'Bo reviews auth changes']])
    // Every tenant's without one.
    expect((await memory.diffSince(since, { until: cut })).nodes.map((n) => n.tenantId)).toEqual(['default', 'default', 'other'])
  })
})
