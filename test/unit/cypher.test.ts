import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { testClock } from '../support/clock.ts'
import { openTestDb, openTestMemory, templateBlob } from '../support/memory.ts'
import { createEngine } from '../../src/core/engine.ts'
import { CATCH_UP_QUIET_MS } from '../../src/core/cypher/cypher.ts'
import type { GraphDatabase } from '../../src/core/cypher/age-graphs.ts'
import { openGraphDatabase } from '../../src/node/graph-database.ts'
import { durableDb } from '../../src/runtime/pglite.ts'

/** Three conversations around one file: c1 reads it, c2 edits it, c3 reads the new version. */
async function threeConversations() {
  const clock = testClock('2025-04-01T09:00:00.000Z')
  const memory = await openTestMemory({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
  const read = (content: string) => ({ tool: 'read_file', args: { path: 'src/auth.ts' }, document: { path: 'src/auth.ts', content, effect: 'read' as const } })
  const t1 = await memory.recordTurn({ conversationId: 'c1', scope: { userId: 'ann' }, user: 'how does login work?', agent: 'It checks a bcrypt hash.', procedures: [read('v1')] })
  clock.advance(60_000)
  const t2 = await memory.recordTurn({
    conversationId: 'c2',
    scope: { userId: 'ann' },
    user: 'switch login to argon2',
    agent: 'Done.',
    procedures: [read('v1'), { tool: 'edit_file', args: { path: 'src/auth.ts' }, document: { path: 'src/auth.ts', content: 'v2', effect: 'write' } }],
  })
  clock.advance(60_000)
  const t3 = await memory.recordTurn({ conversationId: 'c3', scope: { userId: 'bob' }, user: 'which hash do we use?', agent: 'Argon2.', procedures: [read('v2')] })
  clock.advance(60_000)
  return { memory, clock, t1, t2, t3 }
}

describe('cypher over one memory', () => {
  let graph: Awaited<ReturnType<typeof threeConversations>>
  beforeAll(async () => {
    graph = await threeConversations()
  })
  afterAll(() => graph.memory.close())

  // The queries of the README's "Ask the graph", word for word, here and below.
  it('follows a question to the documents it touched, their versions and other conversations', async () => {
    const { memory, t1 } = graph
    const { columns, rows } = await memory.cypher(
      `MATCH (q:Message {id: $id})-[:MESSAGE]->(:Message)-[]->(:Version)-[:VERSION_OF]->(d:Document)
   MATCH (v:Version)-[:VERSION_OF]->(d)
   OPTIONAL MATCH (m:Message)-[]->(:Version)-[:VERSION_OF]->(d) WHERE m.conversationId <> q.conversationId
   RETURN d.key AS document, collect(DISTINCT v.version) AS versions, collect(DISTINCT m.conversationId) AS others`,
      { id: t1.userEventId },
    )
    expect(columns).toEqual(['document', 'versions', 'others'])
    expect(rows).toHaveLength(1)
    expect(rows[0]?.document).toBe('src/auth.ts')
    expect((rows[0]?.versions as number[]).sort()).toEqual([1, 2])
    expect((rows[0]?.others as string[]).sort()).toEqual(['c2', 'c3'])
  })

  it('returns nodes and relationships by their memory ids', async () => {
    const { memory, t1 } = graph
    const { rows } = await memory.cypher('MATCH (a {id: $id})-[r]->(b) RETURN a, r, b', { id: t1.agentEventId })
    expect(rows).toHaveLength(1)
    expect(rows[0]?.a).toMatchObject({ kind: 'node', id: t1.agentEventId, label: 'Message' })
    expect(rows[0]?.r).toMatchObject({ kind: 'relationship', type: 'read_file', start: t1.agentEventId, end: t1.versionIds[0] })
    expect(rows[0]?.b).toMatchObject({ kind: 'node', id: t1.versionIds[0], label: 'Version' })
  })

  it('refuses writes and bad syntax as INVALID_INPUT', async () => {
    const { memory } = graph
    await expect(memory.cypher("CREATE (n:Memory {content: 'x'}) RETURN n")).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(memory.cypher('MATCH (n RETURN n')).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/syntax error/) })
    await expect(memory.cypher('MATCH (n) RETURN *')).rejects.toBeInstanceOf(MemoryError)
  })

  it('finds the subgraph within two hops of a match', async () => {
    const { memory, t1, t2 } = graph
    const { rows } = await memory.cypher('MATCH p = (n {id: $id})-[*1..2]-() RETURN p', { id: t1.agentEventId })
    const ids = new Set(rows.flatMap((r) => (r.p as { kind: string; id: string }[]).filter((x) => x.kind === 'node').map((x) => x.id)))
    // One hop: the question and the version read; two: the document and c2's reply, which read it too.
    expect(ids).toEqual(new Set([t1.agentEventId, t1.userEventId, t1.versionIds[0], t1.documentIds[0], t2.agentEventId]))
  })

  it('finds the conversations that read a document this one edits', async () => {
    const { memory } = graph
    const { rows } = await memory.cypher(
      `MATCH (me:Message {conversationId: $c})-[w]->(:Version)-[:VERSION_OF]->(d:Document) WHERE w.props.effect = 'write'
   MATCH (other:Message)-[r]->(:Version)-[:VERSION_OF]->(d) WHERE other.conversationId <> $c AND r.props.effect = 'read'
   RETURN DISTINCT other.conversationId AS conversation`,
      { c: 'c2' },
    )
    expect(rows.map((r) => r.conversation).sort()).toEqual(['c1', 'c3'])
  })

  it('returns at most limit rows, and says when more matched', async () => {
    const { memory } = graph
    const some = await memory.cypher('MATCH (m:Message) RETURN m.id AS id', {}, { limit: 4 })
    expect(some.rows).toHaveLength(4)
    expect(some.truncated).toBe(true)
    const all = await memory.cypher('MATCH (m:Message) RETURN m.id AS id', {}, { limit: 6 })
    expect(all).toMatchObject({ truncated: false, rows: { length: 6 } })
  })

  it('binds parameters, never splicing them into the query', async () => {
    const { memory } = graph
    const sly = "x'}) RETURN 1 AS n //"
    const { rows } = await memory.cypher('MATCH (m:Message {text: $text}) RETURN m.id AS id', { text: sly })
    expect(rows).toEqual([])
    await expect(memory.cypher('MATCH (m:Message) RETURN m.id AS id', { text: 1n } as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

})

describe('cypher as the memory changes', () => {
  it('sees a write committed before the query', async () => {
    const { memory, clock } = await threeConversations()
    const count = async () => (await memory.cypher('MATCH (m:Message) RETURN count(m) AS n')).rows[0]?.n
    expect(await count()).toBe(6)
    await memory.recordTurn({ conversationId: 'c4', user: 'hi', agent: 'hello' })
    clock.advance(1000)
    expect(await count()).toBe(8)
    await memory.close()
  })

  it('sees a write committed while an earlier call is still running, and what that call writes later', async () => {
    const { memory, clock } = await threeConversations()
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    // A rehearsal that waits before it begins: a call running since before the turn below.
    const warming = memory.warmUp({ turns: 1, beforeEach: () => gate })
    clock.advance(1000)
    await memory.recordTurn({ conversationId: 'c4', user: 'hi', agent: 'hello' })
    const count = async () => (await memory.cypher("MATCH (m:Message {conversationId: 'c4'}) RETURN count(m) AS n")).rows[0]?.n
    expect(await count()).toBe(2)
    release()
    await warming
    await memory.recordTurn({ conversationId: 'c4', user: 'again', agent: 'yes' })
    expect(await count()).toBe(4)
    await memory.close()
  })

  it("draws curated memories with what they supersede, derive from, matter for and belong to", async () => {
    const { memory, t1 } = await threeConversations()
    await memory.remember({ content: 'Two-space indent', category: 'preference', key: 'style', userId: 'ann' })
    const now = await memory.remember({
      content: 'Tabs, width 4',
      category: 'preference',
      key: 'style',
      userId: 'ann',
      context: 'formatting',
      derivedFrom: [t1.userEventId],
      relatedTo: [t1.documentIds[0] as string],
    })
    const { rows } = await memory.cypher(
      `MATCH (m:Memory {id: $id})-[s:SUPERSEDES]->(old:Memory)
       MATCH (m)-[:DERIVED_FROM]->(q:Message), (m)-[:RELEVANT_TO]->(d:Document), (m)-[:BELONGS_TO_CONTEXT]->(c:Context)
       RETURN old.content AS old, old.status AS status, q.text AS question, d.key AS document, c.name AS context`,
      { id: now.id },
    )
    expect(rows).toEqual([{ old: 'Two-space indent', status: 'superseded', question: 'how does login work?', document: 'src/auth.ts', context: 'formatting' }])
    await memory.close()
  })

  it('leaves out tombstoned edges, removed nodes, deleted memories and forgotten conversations', async () => {
    const { memory, clock, t1 } = await threeConversations()
    const fact = await memory.remember({ content: 'Login uses argon2', category: 'fact', relatedTo: [t1.documentIds[0] as string] })
    await memory.graph.putNode({ id: 'ann', type: 'person', payload: { name: 'Ann' } })
    await memory.graph.putNode({ id: 'acme', type: 'company', payload: {} })
    await memory.graph.defineRelation('works_at')
    await memory.graph.putEdge('ann', 'works_at', 'acme', {})
    clock.advance(1000)
    const ids = async (q: string) => (await memory.cypher(q)).rows.map((r) => r.id).sort()
    expect(await ids('MATCH (m:Memory)-[:RELEVANT_TO]->(d:Document) RETURN m.id AS id')).toEqual([fact.id])
    expect(await ids("MATCH (p:Entity)-[:works_at]->(c:Entity {type: 'company'}) RETURN p.id AS id")).toEqual(['ann'])
    const before = clock.now()
    clock.advance(1000)

    await memory.graph.tombstone(t1.procedures[0]?.edgeId as string)
    await memory.memories.delete(fact.id)
    await memory.graph.removeNode('acme')
    clock.advance(1000)
    expect(await ids(`MATCH (m {id: '${t1.agentEventId}'})-[r]->(:Version) RETURN r.id AS id`)).toEqual([])
    expect(await ids('MATCH (m:Memory) RETURN m.id AS id')).toEqual([])
    expect(await ids('MATCH (p:Entity) RETURN p.id AS id')).toEqual(['ann'])
    // As of before those changes, the graph is as it was.
    const then = await memory.cypher('MATCH (m:Memory)-[:RELEVANT_TO]->(:Document) RETURN m.id AS id', {}, { asOf: before })
    expect(then.rows).toEqual([{ id: fact.id }])

    await memory.forget({ conversationId: 'c1' })
    expect(await ids("MATCH (m:Message {conversationId: 'c1'}) RETURN m.id AS id")).toEqual([])
    await memory.close()
  })

  it('shows a reader only what its scope, channel and asOf may see', async () => {
    const clock = testClock('2025-05-01T00:00:00.000Z')
    await using memory = await openTestMemory({ now: clock.now })
    const who = fc.record({
      tenant: fc.constantFrom('t0', 't1'),
      user: fc.constantFrom('u0', 'u1'),
      sensitivity: fc.constantFrom('none' as const, 'low' as const, 'high' as const),
    })
    const reader = fc.record({
      tenant: fc.constantFrom('t0', 't1'),
      user: fc.constantFrom('u0', 'u1', undefined),
      channel: fc.constantFrom('public' as const, 'agent' as const, 'private' as const),
      // Read as of just after the write of this index, or now.
      asOf: fc.option(fc.nat(4), { nil: undefined }),
    })
    const shows = { public: ['none'], agent: ['none', 'low'], private: ['none', 'low', 'high'] }
    let run = 0
    await fc.assert(
      fc.asyncProperty(fc.array(who, { minLength: 1, maxLength: 5 }), reader, async (writes, r) => {
        run++
        const tenant = (t: string) => `r${run}-${t}`
        const written: { id: string; tenant: string; user: string; sensitivity: string; index: number }[] = []
        const after: Date[] = []
        for (const [index, w] of writes.entries()) {
          // Past the 1 ms a Cypher query's catch-up moves the engine's clock on.
          clock.advance(1000)
          const scope = { tenantId: tenant(w.tenant), userId: w.user }
          const turn = await memory.recordTurn({ conversationId: `c${index}`, scope, sensitivity: w.sensitivity, user: `question ${index}`, agent: `answer ${index}` })
          const m = await memory.remember({ content: `fact ${run} ${index}`, category: 'fact', ...scope, sensitivity: w.sensitivity, dedup: 'exact' })
          for (const id of [turn.userEventId, turn.agentEventId, m.id]) written.push({ id, tenant: w.tenant, user: w.user, sensitivity: w.sensitivity, index })
          after.push(clock.now())
        }
        const asOf = r.asOf === undefined ? undefined : after[Math.min(r.asOf, after.length - 1)]
        const { rows } = await memory.cypher('MATCH (n) WHERE n.id IS NOT NULL RETURN n.id AS id', {}, {
          scope: { tenantId: tenant(r.tenant), ...(r.user ? { userId: r.user } : {}) },
          channel: r.channel,
          ...(asOf ? { asOf } : {}),
        })
        const expected = written.filter(
          (w) =>
            w.tenant === r.tenant &&
            (r.user === undefined || w.user === r.user) &&
            shows[r.channel].includes(w.sensitivity) &&
            (r.asOf === undefined || w.index <= Math.min(r.asOf, after.length - 1)),
        )
        expect(new Set(rows.map((x) => x.id))).toEqual(new Set(expected.map((w) => w.id)))
      }),
      { numRuns: 12, seed: 20261207 },
    )
  }, 60_000)
})

describe('cypher without a graph database', () => {
  it('fails with NOT_SUPPORTED', async () => {
    const pg = await openTestDb()
    const engine = await createEngine({ db: durableDb(pg) })
    try {
      await expect(engine.cypher('MATCH (m:Message) RETURN m.id AS id')).rejects.toMatchObject({ code: 'NOT_SUPPORTED' })
    } finally {
      await engine.stopIndexing()
      await pg.close()
    }
  })
})

describe('cypher in the background', () => {
  it('brings drawn graphs up to date once writes pause, so the next query draws nothing', async () => {
    const pg = await openTestDb()
    let inserts = 0
    const graphDatabase = async (): Promise<GraphDatabase> => {
      const db = await openGraphDatabase(await templateBlob())
      return {
        ...db,
        query: (sql, params) => {
          if (/^\s*WITH x AS/.test(sql)) inserts++
          return db.query(sql, params)
        },
        exec: (sql) => db.exec(sql),
        close: () => db.close(),
      }
    }
    const engine = await createEngine({ db: durableDb(pg), graphDatabase })
    try {
      const count = async () => (await engine.cypher('MATCH (m:Message) RETURN count(m) AS n')).rows[0]?.n
      await engine.recordTurn({ conversationId: 'c1', user: 'hi', agent: 'hello' })
      expect(await count()).toBe(2)
      await engine.recordTurn({ conversationId: 'c1', user: 'again', agent: 'yes' })
      await new Promise((resolve) => setTimeout(resolve, CATCH_UP_QUIET_MS + 500))
      const before = inserts
      expect(before).toBeGreaterThan(0)
      expect(await count()).toBe(4)
      expect(inserts).toBe(before)
    } finally {
      await engine.stopIndexing()
      await pg.close()
    }
  })
})

describe('cypher time limit', () => {
  it('stops a query past its time limit with TIMEOUT, and the next query runs', async () => {
    const { memory } = await threeConversations()
    const slow = 'UNWIND range(1, 100000000) AS i WITH i WHERE i = -1 RETURN i'
    await expect(memory.cypher(slow, {}, { timeoutMs: 300 })).rejects.toMatchObject({ code: 'TIMEOUT' })
    const { rows } = await memory.cypher('MATCH (m:Message) RETURN count(m) AS n')
    expect(rows).toEqual([{ n: 6 }])
    await memory.close()
  })
})
