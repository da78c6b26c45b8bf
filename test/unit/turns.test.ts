import { describe, expect, it } from 'vitest'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import { steppingClock, testClock } from '../support/clock.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestMemory } from '../support/memory.ts'

const README = '# invoicer\n\nConverts supplier invoices (CSV) into ledger entries.\n'
const PACKAGE = '{\n  "name": "invoicer",\n  "main": "src/index.js"\n}\n'

describe('recordTurn', () => {
  it('onboarding a legacy project stores the message, three tool calls, their results, the answer and a decision', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
    const scope = { tenantId: 't1', userId: 'u1', agentId: 'coder' }

    const turn = await memory.recordTurn({
      conversationId: 'onboard',
      scope,
      tags: ['repo:legacy'],
      user: 'what this project for?',
      agent: 'It converts supplier invoices (CSV) into ledger entries; the entry point is src/index.js.',
      procedures: [
        { tool: 'list_root', args: {}, output: 'README.md\npackage.json\nsrc/\n' },
        {
          tool: 'read_file',
          args: { path: 'README.md' },
          document: { path: 'README.md', content: README, effect: 'read' },
        },
        {
          tool: 'read_file',
          args: { path: 'package.json' },
          document: { path: '/repo/package.json', content: PACKAGE, effect: 'read' },
        },
      ],
    })
    expect(turn.turnIndex).toBe(0)
    expect(turn.toolEventIds).toHaveLength(2) // list_root: call + result
    expect(turn.versionIds).toHaveLength(2)
    expect(turn.documentIds).toHaveLength(2)
    // MESSAGE + 3 procedure edges + RESULT + 2 VERSION_OF
    expect(turn.edgeIds).toHaveLength(7)
    expect(turn.procedures.map((p) => [p.tool, p.canonicalKey ?? null, p.provenance ?? null])).toEqual([
      ['list_root', null, null],
      ['read_file', 'README.md', 'initial'],
      ['read_file', 'package.json', 'initial'],
    ])

    const decision = await memory.record({
      kind: 'decision',
      scope: { ...scope, conversationId: 'onboard' },
      actor: { type: 'agent', id: 'coder' },
      content: { decision: 'Project purpose hypothesis v0.1: an invoice-to-ledger converter' },
      refs: [turn.agentEventId, ...(turn.procedures.map((p) => p.versionId).filter(Boolean) as string[])],
    })

    const counts = (await memory.stats()).counts
    expect(counts).toMatchObject({
      events: 5, // user, reply, tool_call, tool_result, decision
      documents: 2,
      doc_versions: 2,
      edges: 10, // 7 from the turn + 3 REFERS_TO
    })
    expect(counts.chunks).toBe(5)

    const events = await memory.events.list({ tenantId: 't1', conversationId: 'onboard' })
    expect(events.map((e) => [e.kind, e.actor.type, e.turnIndex])).toEqual([
      ['message', 'human', 0],
      ['message', 'agent', 0],
      ['tool_call', 'agent', 0],
      ['tool_result', 'tool', 0],
      ['decision', 'agent', null],
    ])
    expect(events[0]?.content).toEqual({ text: 'what this project for?' })
    expect(events[0]?.tags).toEqual(['repo:legacy'])
    expect(events[3]?.content).toMatchObject({ tool: 'list_root', excerptText: 'README.md\npackage.json\nsrc/\n' })
    expect(events[3]?.refs).toEqual([events[2]?.id])

    const fromUser = await memory.graph.out(turn.userEventId, { tenantId: 't1' })
    expect(fromUser.map((e) => [e.rel, e.dst])).toEqual([['MESSAGE', turn.agentEventId]])
    const fromReply = await memory.graph.out(turn.agentEventId, { tenantId: 't1' })
    expect(fromReply.map((e) => [e.rel, e.dst, e.props, e.turnIndex, e.conversationId])).toEqual([
      ['list_root', turn.toolEventIds[0], { args: {} }, 0, 'onboard'],
      ['read_file', turn.procedures[1]?.versionId, { args: { path: 'README.md' }, effect: 'read' }, 0, 'onboard'],
      ['read_file', turn.procedures[2]?.versionId, { args: { path: 'package.json' }, effect: 'read' }, 0, 'onboard'],
    ])
    expect(fromReply.map((e) => e.id)).toEqual(turn.procedures.map((p) => p.edgeId))
    expect((await memory.graph.out(turn.toolEventIds[0] as string, 'RESULT', { tenantId: 't1' })).map((e) => e.dst)).toEqual([
      turn.toolEventIds[1],
    ])
    const refsOut = await memory.graph.out(decision.eventId, 'REFERS_TO', { tenantId: 't1' })
    expect(refsOut.map((e) => e.dst)).toEqual([
      turn.agentEventId,
      turn.procedures[1]?.versionId,
      turn.procedures[2]?.versionId,
    ])
    const readme = await memory.documents.version(turn.procedures[1]?.versionId as string, { tenantId: 't1' })
    expect(readme).toMatchObject({ content: README, version: 1, provenance: 'initial', eventId: turn.agentEventId })
  })

  it('turns recorded at once take their numbers and their times in the same order', async () => {
    await using memory = await openTestMemory({ now: steppingClock(), workspace: { mode: 'local', root: '/repo' } })
    // The first is called first but prepared longer (a 1 MB document to hash): it commits second.
    const slow = memory.recordTurn({
      conversationId: 'c',
      user: 'read the file',
      agent: 'read',
      procedures: [{ tool: 'read_file', document: { path: 'big.txt', content: 'a line of the file\n'.repeat(60_000), effect: 'read' } }],
    })
    const quick = memory.recordTurn({ conversationId: 'c', user: 'thanks', agent: 'welcome' })
    const turns = (await Promise.all([slow, quick])).sort((a, b) => a.turnIndex - b.turnIndex)
    expect(turns.map((t) => t.turnIndex)).toEqual([0, 1])
    expect(Date.parse(turns[0].createdAt)).toBeLessThan(Date.parse(turns[1].createdAt))
    // As of the first turn's time, the memory holds that turn alone.
    const then = await memory.events.list({ conversationId: 'c', asOf: turns[0].createdAt })
    expect(new Set(then.map((e) => e.turnIndex))).toEqual(new Set([0]))
  })

  it('numbers turns per conversation', async () => {
    await using memory = await openTestMemory()
    const t = (conversationId: string) => memory.recordTurn({ conversationId, user: 'q', agent: 'a' })
    expect((await t('c1')).turnIndex).toBe(0)
    expect((await t('c1')).turnIndex).toBe(1)
    expect((await t('c2')).turnIndex).toBe(0)
    expect((await t('c1')).turnIndex).toBe(2)
  })

  it('twelve agents writing and reading at once lose nothing, number their turns in order and see only their own', async () => {
    const clock = testClock()
    await using t = await openTestEngine({ now: clock.now, embedder: createHashEmbedder({ dims: 32 }), indexingPause: { quietMs: 0 } })
    const agents = Array.from({ length: 12 }, (_, n) => `agent${n}`)
    const turns = 4
    const readsSeen: string[][] = []
    await Promise.all(
      agents.map(async (agentId, n) => {
        const scope = { tenantId: 'team', userId: 'ann', agentId }
        for (let k = 0; k < turns; k++) {
          const turn = await t.engine.recordTurn({
            conversationId: `conv-${agentId}`,
            scope,
            user: `step ${k} for ${agentId}: wire the kestrel${n} parser`,
            agent: `done step ${k} of the kestrel${n} parser`,
            procedures: [{ tool: 'write_file', args: { path: `src/k${n}.ts` }, document: { path: `/repo/src/k${n}.ts`, content: `v${k}`, effect: 'write' } }],
          })
          expect(turn.turnIndex).toBe(k)
          const hits = await t.engine.search(`kestrel${n} parser`, { scope, limit: 20 })
          readsSeen.push(hits.map((h) => h.conversationId))
          await t.engine.buildContext({ ...scope, query: `kestrel${n}`, conversationId: `conv-${agentId}`, maxTokens: 1500 })
        }
      }),
    )
    // Every read saw its own agent's conversation only, and at least the turn just written.
    for (const [i, seen] of readsSeen.entries()) {
      expect(seen.length, `read ${i}`).toBeGreaterThan(0)
      expect(new Set(seen).size, `read ${i}`).toBe(1)
    }
    // A turn with a document procedure is two events (the request and the reply) and edges.
    const stats = await t.engine.stats()
    expect(stats.counts.events).toBe(agents.length * turns * 2)
    for (const [n, agentId] of agents.entries()) {
      const events = await t.engine.events.list({ tenantId: 'team', conversationId: `conv-${agentId}`, limit: 100 })
      expect(events).toHaveLength(turns * 2)
      expect(events.every((e) => e.scope.agentId === agentId)).toBe(true)
      expect(events.map((e) => e.turnIndex).sort()).toEqual([0, 0, 1, 1, 2, 2, 3, 3])
      const { versions } = await t.engine.documents.history(`/repo/src/k${n}.ts`, { tenantId: 'team' })
      expect(versions.map((v) => v.version).sort()).toEqual([1, 2, 3, 4])
    }
    const status = await t.engine.indexNow()
    expect(status.pending).toBe(0)
    expect(status.done).toBe(stats.counts.chunks)
  })

  it('stores a turn\'s events in its order, each with its chunks, scope, tags and artifact', async () => {
    await using t = await openTestEngine()
    const output = `${'line of test output\n'.repeat(4000)}done\n` // over the excerpt limit: an artifact
    const turn = await t.engine.recordTurn({
      conversationId: 'c1',
      scope: { tenantId: 't1', agentId: 'coder' }, // no user: NULL in every row
      tags: ['repo:x', 'sprint-4'],
      user: 'run the tests twice',
      agent: 'Ran them twice.',
      procedures: [
        { tool: 'run_tests', args: { pass: 1 }, output },
        { tool: 'lint', args: {} },
        { tool: 'run_tests', args: { pass: 2 }, output: 'ok\n' },
      ],
    })
    const { rows: events } = await t.db.query<{ id: string; kind: string; turn_index: number; user_id: string | null; tags: string[] }>(
      `SELECT id, kind, turn_index, user_id, tags FROM events WHERE tenant_id = 't1' ORDER BY seq`,
    )
    expect(events.map((e) => e.id)).toEqual([turn.userEventId, turn.agentEventId, ...turn.toolEventIds])
    expect(events.map((e) => e.kind)).toEqual(['message', 'message', 'tool_call', 'tool_result', 'tool_call', 'tool_call', 'tool_result'])
    for (const e of events) expect(e).toMatchObject({ turn_index: 0, user_id: null, tags: ['repo:x', 'sprint-4'] })

    const { rows: chunks } = await t.db.query<{ id: string; source_id: string; ord: number; kind: string; user_id: string | null; agent_id: string; tags: string[] }>(
      `SELECT c.id, c.source_id, c.ord, c.kind, c.user_id, c.agent_id, c.tags FROM chunks c JOIN events e ON e.id = c.source_id ORDER BY e.seq, c.ord`,
    )
    expect(chunks.map((c) => c.id)).toEqual(turn.chunkIds)
    const kinds = new Map(events.map((e) => [e.id, e.kind]))
    for (const c of chunks) expect(c).toMatchObject({ kind: kinds.get(c.source_id), user_id: null, agent_id: 'coder', tags: ['repo:x', 'sprint-4'] })
    // The long output's event is cut into several chunks, numbered from 0.
    const longResult = turn.toolEventIds[1]!
    expect(chunks.filter((c) => c.source_id === longResult).map((c) => c.ord)).toEqual(
      [...Array(chunks.filter((c) => c.source_id === longResult).length).keys()],
    )

    const { rows: artifacts } = await t.db.query<{ event_id: string; bytes: number; tenant_id: string }>(`SELECT event_id, bytes, tenant_id FROM artifacts`)
    expect(artifacts).toEqual([{ event_id: longResult, bytes: output.length, tenant_id: 't1' }])
    // The keyword statistics count every chunk of the turn once.
    const { rows: stats } = await t.db.query<{ chunks: number }>(`SELECT chunks::int FROM chunk_stats WHERE tenant_id = 't1'`)
    expect(stats).toEqual([{ chunks: chunks.length }])
  })

  it('a back-dated turn that reads then rewrites a file in one go, seen as of its time', async () => {
    const clock = testClock('2025-06-01T00:00:00.000Z')
    await using memory = await openTestMemory({ now: clock.now })
    const turn = await memory.recordTurn({
      conversationId: 'session-3',
      scope: { userId: 'caroline', agentId: 'assistant' },
      createdAt: '2023-05-08T13:56:00Z',
      user: { text: 'fix the typo in my notes', actorId: 'caroline@home' },
      agent: 'Fixed "teh" → "the".',
      procedures: [
        { tool: 'read', args: {}, document: { path: '/home/c/notes.txt', content: 'teh end', effect: 'read' } },
        { tool: 'write', args: {}, document: { path: '/home/c/notes.txt', content: 'the end', effect: 'write' } },
      ],
    })
    expect(turn.createdAt).toBe('2023-05-08T13:56:00.000Z')
    expect(turn.procedures.map((p) => [p.version, p.provenance, p.versionCreated])).toEqual([
      [1, 'initial', true],
      [2, 'agent', true],
    ])
    expect(turn.documentIds).toHaveLength(1)
    const [user, agent] = await memory.events.list({ conversationId: 'session-3' })
    expect(user?.actor).toEqual({ type: 'human', id: 'caroline@home' })
    expect(agent?.actor).toEqual({ type: 'agent', id: 'assistant' })
    expect(user?.createdAt).toBe('2023-05-08T13:56:00.000Z')
    expect(await memory.events.list({ conversationId: 'session-3', asOf: '2023-05-08T13:55:59Z' })).toEqual([])
    expect(await memory.events.list({ conversationId: 'session-3', kinds: ['tool_call'] })).toEqual([])
    const { versions } = await memory.documents.history('/home/c/notes.txt')
    expect(versions.map((v) => [v.version, v.eventId])).toEqual([
      [1, turn.agentEventId],
      [2, turn.agentEventId],
    ])
  })

  it('a turn is all or nothing: a failure on its last edge leaves no trace', async () => {
    await using t = await openTestEngine({ workspace: { mode: 'local', root: '/repo' } })
    const memory = t.engine
    await memory.recordTurn({ conversationId: 'c0', user: 'warm-up', agent: 'ok' })
    await memory.observeDocument({ path: 'src/a.ts', content: 'v1', conversationId: 'c0' })
    // A trigger stands in for any failure late in the transaction: it refuses write_file edges,
    // which are written last, after the events, chunks, documents and versions of the turn.
    await t.db.exec(`
      CREATE FUNCTION refuse_write_file() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.rel = (SELECT id FROM relations WHERE name = 'write_file') THEN
          RAISE EXCEPTION 'disk full';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_write_file BEFORE INSERT ON edges FOR EACH ROW EXECUTE FUNCTION refuse_write_file();
    `)
    const before = await memory.stats()

    const failed = memory.recordTurn({
      conversationId: 'c1',
      user: 'rename the helper',
      agent: 'Done.',
      procedures: [
        { tool: 'read_file', args: { path: 'src/a.ts' }, document: { path: 'src/a.ts', content: 'v2', effect: 'read' } },
        { tool: 'run_tests', args: {}, output: 'ok' },
        { tool: 'write_file', args: { path: 'src/b.ts' }, document: { path: 'src/b.ts', content: 'new', effect: 'write' } },
      ],
    })
    await expect(failed).rejects.toMatchObject({ name: 'MemoryError', code: 'INTERNAL' })
    await expect(failed).rejects.toThrow(/disk full/)

    const after = await memory.stats()
    expect(after.counts).toEqual(before.counts)
    expect((await memory.documents.history('src/a.ts')).versions).toHaveLength(1)
    await expect(memory.documents.get('src/b.ts')).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect(await memory.events.list({ conversationId: 'c1' })).toEqual([])

    // The same turn goes through once the failure is gone, and takes the next turn index.
    await t.db.exec('DROP TRIGGER refuse_write_file ON edges')
    const ok = await memory.recordTurn({
      conversationId: 'c1',
      user: 'rename the helper',
      agent: 'Done.',
      procedures: [
        { tool: 'write_file', args: { path: 'src/b.ts' }, document: { path: 'src/b.ts', content: 'new', effect: 'write' } },
      ],
    })
    expect(ok.turnIndex).toBe(0)
    expect(ok.procedures[0]).toMatchObject({ provenance: 'agent', version: 1, versionCreated: true })
  })
})
