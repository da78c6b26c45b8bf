import { describe, expect, it } from 'vitest'
import { VectorCache } from '../../src/core/kernel/embedder.ts'
import { DEFAULT_DEDUP_THRESHOLD } from '../../src/core/engine.ts'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { memoryHash } from '../../src/core/memories/memories.ts'
import type { TelemetryEvent } from '../../src/core/kernel/telemetry.ts'
import { steppingClock, testClock } from '../support/clock.ts'
import { atSimilarity, createTestEmbedder } from '../support/embedder.ts'
import { standardise, standoutCase } from '../support/fusion.ts'
import { openTestEngine } from '../support/engine.ts'
import { codeOf } from '../support/errors.ts'
import { openTestMemory } from '../support/memory.ts'
import { expectKeptMemoryCounts } from '../support/memory-stats.ts'
import { itWithVectors } from '../support/backend.ts'

const clock = () => steppingClock()

async function rejects(p: Promise<unknown>, code: string): Promise<MemoryError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(MemoryError.is(err)).toBe(true)
  expect((err as MemoryError).code).toBe(code)
  return err as MemoryError
}

describe('curated memories', () => {
  itWithVectors('save, recall, supersede with a near duplicate, delete: the whole lifecycle', async () => {
    const embedder = createTestEmbedder({
      table: {
        'User prefers tabs for indentation': atSimilarity(1),
        'User prefers tabs for indentation, width 4': atSimilarity(0.95),
        'indentation style': atSimilarity(0.95),
      },
    })
    await using memory = await openTestMemory({ embedder, now: clock() })

    const first = await memory.remember({
      content: 'User prefers tabs for indentation',
      category: 'preference',
      source: 'explicit',
      userId: 'alice',
    })
    expect(first.action).toBe('created')
    const saved = await memory.memories.get(first.id)
    expect(saved).toMatchObject({
      confidence: 1,
      scope: 'user',
      status: 'active',
      userId: 'alice',
      useCount: 0,
    })
    expect(saved?.embedModel).toBe(embedder.id)

    const hits = await memory.recall('indentation style', { userId: 'alice' })
    expect(hits.map((h) => h.id)).toEqual([first.id])
    expect(hits[0]?.scores.vector).toBeCloseTo(0.95, 5)
    expect(hits[0]?.scores.keyword).toBeGreaterThan(0)
    // Alone in both lists: no spread, so both z's are 0 and fused = 6 / 9 (rrf: 2 / 61).
    expect(hits[0]?.scores.fused).toBeCloseTo(6 / 9, 10)
    const byRank = await memory.memories.search('indentation style', { userId: 'alice', fusion: 'rrf' })
    expect(byRank[0]?.scores.fused).toBeCloseTo(2 / 61, 10)
    const used = await memory.memories.get(first.id)
    expect(used?.useCount).toBe(1)
    expect(used?.lastUsedAt).toBeInstanceOf(Date)

    const second = await memory.remember({
      content: 'User prefers tabs for indentation, width 4',
      category: 'correction',
      source: 'corrected',
      userId: 'alice',
    })
    expect(second).toEqual({ id: expect.any(String), action: 'superseded', supersededId: first.id })
    const old = await memory.memories.get(first.id)
    expect(old).toMatchObject({ status: 'superseded', supersededBy: second.id })
    expect((await memory.memories.get(second.id))?.confidence).toBe(0.9)
    const afterSupersede = await memory.recall('indentation style', { userId: 'alice' })
    expect(afterSupersede.map((h) => h.id)).toEqual([second.id])
    const links = await memory.graph.neighbors(second.id, { rel: 'SUPERSEDES' })
    expect(links.map((l) => l.dst)).toEqual([first.id])

    await memory.memories.delete(second.id)
    expect(await memory.recall('indentation style', { userId: 'alice' })).toEqual([])
    expect((await memory.memories.get(second.id))?.status).toBe('deleted')
    expect((await memory.memories.history(first.id)).map((h) => h.event)).toEqual(['ADD', 'UPDATE'])
    expect((await memory.memories.history(second.id)).map((h) => [h.event, h.isDeleted])).toEqual([
      ['ADD', false],
      ['DELETE', true],
    ])
  })

  it('saving the same text again, differently spaced and cased, changes nothing', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    const a = await memory.remember({ content: 'Deploys go through  GitHub Actions', category: 'fact' })
    const b = await memory.remember({ content: '  deploys go through github actions ', category: 'fact' })
    expect(b).toEqual({ id: a.id, action: 'unchanged' })
    expect(await memory.memories.list()).toHaveLength(1)
    expect((await memory.memories.get(a.id))?.hash).toBe(memoryHash('deploys go through github actions'))
  })

  it('remember is not held back while other agents keep the database busy', async () => {
    await using memory = await openTestMemory()
    let writes = 0
    const agents = [0, 1, 2].map(async (a) => {
      for (let i = 0; i < 50; i++) {
        await memory.kv.put('user:ann', 'progress', `agent-${a}`, { i })
        writes++
      }
    })
    await memory.remember({ content: 'Ann prefers tea', category: 'preference', userId: 'ann' })
    const meanwhile = writes
    await Promise.all(agents)
    // Back-to-back calls leave no moment for a task to run: a remember that awaited one
    // (a Web Crypto digest) ended only after all the agents' writes.
    expect(meanwhile).toBeLessThan(150)
  })

  it('without an embedder, dedup is exact text only and recall is keyword only', async () => {
    await using memory = await openTestMemory()
    const a = await memory.remember({ content: 'The API runs on port 8080', category: 'fact' })
    const b = await memory.remember({ content: 'The API runs on port 8081', category: 'fact' })
    expect(b.action).toBe('created')
    expect((await memory.remember({ content: 'the api runs on port 8080', category: 'fact' })).action).toBe(
      'unchanged',
    )
    const hits = await memory.recall('which port does the API use')
    expect(hits.map((h) => h.id).sort()).toEqual([a.id, b.id].sort())
    expect(hits.every((h) => h.scores.vector === null && (h.scores.keyword ?? 0) > 0)).toBe(true)
    expect((await memory.memories.get(a.id))?.embedModel).toBeNull()
  })

  itWithVectors('a text asked about again is not embedded again: recall, search and a fact searched then saved share their vectors', async () => {
    const embedder = createTestEmbedder()
    await using memory = await openTestMemory({ embedder, indexing: 'manual' })
    await memory.remember({ content: 'Ann prefers tabs', category: 'preference', userId: 'ann' })
    const before = embedder.calls
    await memory.recall('how does Ann indent?', { userId: 'ann' })
    await memory.recall('how does Ann indent?', { userId: 'ann' })
    await memory.memories.search('how does Ann indent?', { userId: 'ann' })
    await memory.search('how does Ann indent?')
    expect(embedder.calls - before).toBe(1)
    // The mem0 facade's way: a fact is searched for, then saved.
    await memory.memories.search('Ann reviews on Mondays', { userId: 'ann' })
    await memory.remember({ content: 'Ann reviews on Mondays', category: 'fact', userId: 'ann' })
    expect(embedder.calls - before).toBe(2)
    // A failure is not kept: the next call tries again.
    const failing = createTestEmbedder({ failOn: (t) => t === 'broken' })
    const cache = new VectorCache(2)
    await expect(cache.embed(failing, 'broken')).rejects.toThrow(/refuses/)
    await expect(cache.embed(failing, 'broken')).rejects.toThrow(/refuses/)
    expect(failing.calls).toBe(2)
    // The least recently used goes first.
    for (const t of ['a', 'b', 'a', 'c']) await cache.embed(failing, t)
    expect(failing.calls).toBe(5)
    await cache.embed(failing, 'a')
    expect(failing.calls).toBe(5)
    await cache.embed(failing, 'b')
    expect(failing.calls).toBe(6)
  })

  itWithVectors('the near-duplicate threshold is an engine option, 0.92 by default', async () => {
    expect(DEFAULT_DEDUP_THRESHOLD).toBe(0.92)
    const table = { 'A one': atSimilarity(1), 'A two': atSimilarity(0.8), 'A three': atSimilarity(0.91), 'A four': atSimilarity(0.925) }
    {
      await using memory = await openTestMemory({ embedder: createTestEmbedder({ table }) })
      await memory.remember({ content: 'A one', category: 'fact' })
      expect((await memory.remember({ content: 'A two', category: 'fact' })).action).toBe('created')
    }
    // Just under the default: kept apart; just over: superseded.
    for (const [content, action] of [['A three', 'created'], ['A four', 'superseded']] as const) {
      await using memory = await openTestMemory({ embedder: createTestEmbedder({ table }) })
      await memory.remember({ content: 'A one', category: 'fact' })
      expect((await memory.remember({ content, category: 'fact' })).action).toBe(action)
    }
    {
      await using memory = await openTestMemory({
        embedder: createTestEmbedder({ table }),
        dedupThreshold: 0.75,
      })
      await memory.remember({ content: 'A one', category: 'fact' })
      expect((await memory.remember({ content: 'A two', category: 'fact' })).action).toBe('superseded')
    }
  })

  it('near duplicates in another scope do not supersede each other', async () => {
    const table = { 'Uses pnpm': atSimilarity(1), 'Uses pnpm 9': atSimilarity(0.99) }
    await using memory = await openTestMemory({ embedder: createTestEmbedder({ table }) })
    await memory.remember({ content: 'Uses pnpm', category: 'fact', userId: 'alice' })
    expect((await memory.remember({ content: 'Uses pnpm 9', category: 'fact', userId: 'bob' })).action).toBe(
      'created',
    )
    expect(
      (
        await memory.remember({
          content: 'Uses pnpm',
          category: 'fact',
          userId: 'alice',
          scope: 'project',
          projectId: 'p1',
        })
      ).action,
    ).toBe('created')
  })

  it("user A cannot recall user B's memories; global ones are seen by all", async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    const a = await memory.remember({
      content: 'Alice prefers dark mode',
      category: 'preference',
      userId: 'alice',
    })
    const b = await memory.remember({
      content: 'Bob prefers dark mode',
      category: 'preference',
      userId: 'bob',
    })
    const g = await memory.remember({
      content: 'Company theme supports dark mode',
      category: 'fact',
      scope: 'global',
    })
    const ids = async (userId: string) =>
      (await memory.recall('dark mode', { userId })).map((h) => h.id).sort()
    expect(await ids('alice')).toEqual([a.id, g.id].sort())
    expect(await ids('bob')).toEqual([b.id, g.id].sort())
    expect(await ids('carol')).toEqual([g.id])
  })

  it('project memories are seen only by their user, inside their project', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    const p = await memory.remember({
      content: 'Tests run with vitest',
      category: 'convention',
      scope: 'project',
      projectId: 'engram',
      userId: 'alice',
    })
    const u = await memory.remember({
      content: 'Alice writes tests first',
      category: 'pattern',
      userId: 'alice',
    })
    const q = 'tests'
    expect(
      (await memory.recall(q, { userId: 'alice', projectId: 'engram' })).map((h) => h.id).sort(),
    ).toEqual([p.id, u.id].sort())
    expect((await memory.recall(q, { userId: 'alice', projectId: 'other' })).map((h) => h.id)).toEqual([u.id])
    expect((await memory.recall(q, { userId: 'alice' })).map((h) => h.id)).toEqual([u.id])
    expect(await memory.recall(q, { userId: 'bob', projectId: 'engram' })).toEqual([])
    expect(
      (await memory.recall(q, { userId: 'alice', projectId: 'engram', scope: 'project' })).map((h) => h.id),
    ).toEqual([p.id])
    await rejects(memory.remember({ content: 'x', category: 'fact', scope: 'project' }), 'INVALID_INPUT')
  })

  it('recall filters by category, honours the limit and refuses a limit over 50', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    for (let i = 0; i < 12; i++) {
      await memory.remember({
        content: `Lint rule number ${i} is enforced`,
        category: i % 2 ? 'constraint' : 'convention',
      })
    }
    expect(await memory.recall('lint rule')).toHaveLength(10)
    expect(await memory.recall('lint rule', { limit: 3 })).toHaveLength(3)
    const constraints = await memory.recall('lint rule', { category: 'constraint', limit: 50 })
    expect(constraints).toHaveLength(6)
    expect(constraints.every((h) => h.category === 'constraint')).toBe(true)
    await rejects(memory.recall('lint rule', { limit: 51 }), 'INVALID_INPUT')
  })

  it('a context groups memories and relatedTo / derivedFrom become links', async () => {
    const events: TelemetryEvent[] = []
    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    memory.telemetry.subscribe((e) => events.push(e))
    const node = await memory.graph.putNode({ id: 'file:src/app.ts', type: 'file' })
    expect(node.action).toBe('created')
    const a = await memory.remember({
      content: 'Single quotes in TypeScript',
      category: 'convention',
      context: 'TypeScript conventions',
      relatedTo: ['file:src/app.ts'],
      derivedFrom: ['evt_missing'],
    })
    const b = await memory.remember({
      content: 'No semicolons',
      category: 'convention',
      context: 'TypeScript conventions',
    })
    expect((await memory.memories.get(a.id))?.contexts).toEqual(['TypeScript conventions'])
    const ctxA = await memory.graph.neighbors(a.id, { rel: 'BELONGS_TO_CONTEXT' })
    const ctxB = await memory.graph.neighbors(b.id, { rel: 'BELONGS_TO_CONTEXT' })
    expect(ctxA).toHaveLength(1)
    expect(ctxA[0]?.dst).toBe(ctxB[0]?.dst)
    expect(
      (await memory.graph.neighbors('file:src/app.ts', { direction: 'in' })).map((n) => [n.src, n.rel]),
    ).toEqual([[a.id, 'RELEVANT_TO']])
    expect((await memory.graph.neighbors(a.id, { rel: 'DERIVED_FROM' })).map((n) => n.dst)).toEqual([
      'evt_missing',
    ])
    const warning = events.find((e) => e.op === 'warning')
    expect(warning?.detail).toEqual({ warning: 'missing_reference', ids: ['evt_missing'] })
  })


  it("duplicates are looked for among the memories recall reads together: any agent's, or with dedupScope 'identity' the same agent's", async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder(), now: clock() })
    const ann = { userId: 'ann', category: 'preference' as const }
    const first = await memory.remember({ ...ann, agentId: 'desktop', content: 'Ann prefers dark mode' })
    // The same text from another agent of Ann's is the same memory; a correction from it supersedes.
    expect(await memory.remember({ ...ann, agentId: 'editor', content: 'Ann prefers dark mode' })).toEqual({ id: first.id, action: 'unchanged' })
    const keyed = await memory.remember({ ...ann, agentId: 'desktop', content: 'Tabs, width 2', key: 'indent' })
    const fixed = await memory.remember({ ...ann, agentId: 'editor', content: 'Spaces, width 4', key: 'indent' })
    expect(fixed).toMatchObject({ action: 'superseded', supersededId: keyed.id })
    expect((await memory.recall('width', { userId: 'ann' })).map((h) => h.content)).toEqual(['Spaces, width 4'])
    expect((await memory.memories.get(fixed.id))?.agentId).toBe('editor')
    // Kept apart per agent and run when asked.
    const own = await memory.remember({ ...ann, agentId: 'editor', content: 'Ann prefers dark mode', dedupScope: 'identity' })
    expect(own.action).toBe('created')
    expect((await memory.memories.list({ userId: 'ann' })).map((m) => [m.content, m.agentId]).sort()).toEqual([
      ['Ann prefers dark mode', 'desktop'],
      ['Ann prefers dark mode', 'editor'],
      ['Spaces, width 4', 'editor'],
    ])
    // Another user's or another project's memory is never one of them.
    expect((await memory.remember({ userId: 'bo', category: 'preference', content: 'Ann prefers dark mode' })).action).toBe('created')
    await rejects(memory.remember({ ...ann, content: 'x', dedupScope: 'agent' } as never), 'INVALID_INPUT')
  })

  it('memories relevant to an entity: listed, recalled and searched by relevantTo, and each says what it is relevant to', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder(), now: clock() })
    const ann = { userId: 'ann', category: 'constraint' as const }
    const db = await memory.remember({ ...ann, content: 'Never edit migrations in place', relatedTo: ['file:src/db.ts', 'dir:migrations'] })
    const api = await memory.remember({ ...ann, content: 'Never break the public API in place', relatedTo: ['file:src/api.ts'] })
    await memory.remember({ ...ann, content: 'Never push on Fridays' })
    expect((await memory.memories.get(db.id))?.relatedTo).toEqual(['dir:migrations', 'file:src/db.ts'])
    const ids = (hits: { id: string }[]) => hits.map((h) => h.id).sort()
    expect(ids(await memory.memories.list({ userId: 'ann', relevantTo: ['file:src/db.ts'] }))).toEqual([db.id])
    expect(ids(await memory.memories.list({ userId: 'ann', relevantTo: ['file:src/db.ts', 'file:src/api.ts'] }))).toEqual([db.id, api.id].sort())
    expect(ids(await memory.recall('never in place', { userId: 'ann', relevantTo: ['file:src/api.ts'] }))).toEqual([api.id])
    expect(ids(await memory.memories.search('never', { userId: 'ann', relevantTo: ['dir:migrations'] }))).toEqual([db.id])
    expect(await memory.memories.list({ userId: 'ann', relevantTo: ['file:nothing.ts'] })).toEqual([])
    // Through the tool, the way an agent asks what applies to the file at hand.
    const tool = (await memory.callTool('recall_memories', { query: 'never', relevant_to: ['file:src/db.ts'] }, { userId: 'ann' })) as {
      memories: { id: string; related_to?: string[] }[]
    }
    expect(tool.memories.map((m) => [m.id, m.related_to])).toEqual([[db.id, ['dir:migrations', 'file:src/db.ts']]])
    await rejects(memory.recall('never', { relevantTo: [] }), 'INVALID_INPUT')
  })

  it("a memory that supersedes another keeps its contexts and entity links unless it names its own", async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder(), now: clock() })
    const ann = { userId: 'ann', category: 'convention' as const }
    await memory.graph.putNode({ id: 'file:src/app.ts', type: 'file' })
    await memory.graph.putNode({ id: 'file:src/db.ts', type: 'file' })
    const first = await memory.remember({ ...ann, content: 'Strings use single quotes', key: 'quotes', context: 'Style', relatedTo: ['file:src/app.ts'] })
    const relevant = async (id: string) => (await memory.graph.neighbors(id, { rel: 'RELEVANT_TO' })).map((n) => n.dst)
    // A correction saying nothing of either keeps both.
    const second = await memory.remember({ ...ann, content: 'Strings use double quotes', key: 'quotes' })
    expect(second).toMatchObject({ action: 'superseded', supersededId: first.id })
    expect((await memory.memories.get(second.id))?.contexts).toEqual(['Style'])
    expect(await relevant(second.id)).toEqual(['file:src/app.ts'])
    expect((await memory.memories.contexts({ userId: 'ann' })).map((c) => [c.name, c.memories])).toEqual([['Style', 1]])
    // One naming its own context and entities takes those instead.
    const third = await memory.remember({ ...ann, content: 'Strings use backticks', key: 'quotes', context: 'Templates', relatedTo: ['file:src/db.ts'] })
    expect((await memory.memories.get(third.id))?.contexts).toEqual(['Templates'])
    expect(await relevant(third.id)).toEqual(['file:src/db.ts'])
    // The replaced memories keep their own links, for history.
    expect((await memory.memories.get(first.id))?.contexts).toEqual(['Style'])
  })

  it('a key names a memory: saving under it again replaces that memory, whatever the text', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder(), now: clock() })
    const ann = { userId: 'ann', category: 'convention' as const }
    const first = await memory.remember({ ...ann, content: 'Strings use single quotes', key: 'code-style' })
    expect(first.action).toBe('created')
    expect((await memory.memories.get(first.id))?.key).toBe('code-style')
    // The same text under the key changes nothing; other text replaces it, however different.
    expect(await memory.remember({ ...ann, content: 'Strings use single quotes', key: 'code-style' })).toEqual({ id: first.id, action: 'unchanged' })
    const second = await memory.remember({ ...ann, content: 'Every file ends with a newline', key: 'code-style' })
    expect(second).toMatchObject({ action: 'superseded', supersededId: first.id })
    expect((await memory.memories.list({ userId: 'ann', key: 'code-style' })).map((m) => m.content)).toEqual(['Every file ends with a newline'])
    expect((await memory.memories.list({ userId: 'ann', key: 'code-style', status: 'any' })).map((m) => [m.content, m.status]).sort()).toEqual([
      ['Every file ends with a newline', 'active'],
      ['Strings use single quotes', 'superseded'],
    ])
    expect((await memory.graph.neighbors(second.id, { rel: 'SUPERSEDES' })).map((n) => [n.dst, n.payload])).toEqual([[first.id, { key: 'code-style' }]])
    // Without a key, text like a keyed memory's supersedes it as any near duplicate does, and keeps the key.
    const third = await memory.remember({ ...ann, content: 'Every file ends with a newline', dedup: 'exact' })
    expect(third).toEqual({ id: second.id, action: 'unchanged' })
    const restated = await memory.remember({ ...ann, content: 'Every file ends with a newline', sensitivity: 'low' })
    expect(restated.action).toBe('superseded')
    expect((await memory.memories.get(restated.id))?.key).toBe('code-style')
    // Another user's key of the same name is another memory.
    const bo = await memory.remember({ userId: 'bo', category: 'convention', content: 'Tabs for indentation', key: 'code-style' })
    expect(bo.action).toBe('created')
    expect((await memory.memories.list({ userId: 'ann', key: 'code-style' })).map((m) => m.id)).toEqual([restated.id])
    await rejects(memory.remember({ ...ann, content: 'x', key: ' ' }), 'INVALID_INPUT')
  })

  it('memory contexts: described and weighed, listed by priority with their active memories', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder(), now: clock() })
    await memory.remember({ content: 'Single quotes in TypeScript', category: 'convention', context: 'TypeScript', userId: 'ann' })
    const semis = await memory.remember({ content: 'No semicolons', category: 'convention', context: 'TypeScript', userId: 'ann' })
    // A context saved with a memory starts at the default priority, without a description.
    const [ts] = await memory.memories.contexts({ userId: 'ann' })
    expect(ts).toMatchObject({ name: 'TypeScript', description: null, priority: 0.5, userId: 'ann', memories: 2 })
    const set = await memory.memories.defineContext({ name: 'TypeScript', description: 'How Ann writes TS', priority: 0.9, userId: 'ann' })
    expect(set).toMatchObject({ id: ts!.id, description: 'How Ann writes TS', priority: 0.9, memories: 2 })
    // What is left out keeps its value.
    expect(await memory.memories.defineContext({ name: 'TypeScript', priority: 0.8, userId: 'ann' })).toMatchObject({
      description: 'How Ann writes TS',
      priority: 0.8,
    })
    const git = await memory.memories.defineContext({ name: 'Git', userId: 'ann' })
    expect(git).toMatchObject({ priority: 0.5, memories: 0, description: null })
    await memory.memories.defineContext({ name: 'Ops', priority: 1, userId: 'bo' })
    await memory.memories.delete(semis.id)
    expect((await memory.memories.contexts({ userId: 'ann' })).map((c) => [c.name, c.priority, c.memories])).toEqual([
      ['TypeScript', 0.8, 1],
      ['Git', 0.5, 0],
    ])
    expect((await memory.memories.contexts()).map((c) => c.name)).toEqual(['Ops', 'TypeScript', 'Git'])
    await rejects(memory.memories.defineContext({ name: 'Bad', priority: 1.5 }), 'INVALID_INPUT')
    await rejects(memory.memories.defineContext({ name: ' ' }), 'INVALID_INPUT')
    expect(await memory.memories.contexts({ tenantId: 'other' })).toEqual([])
  })
  it('update changes text, hash and vector in place and logs old and new values', async () => {
    const embedder = createTestEmbedder()
    await using memory = await openTestMemory({ embedder, now: clock() })
    const { id } = await memory.remember({ content: 'Builds use webpack', category: 'fact' })
    const updated = await memory.memories.update(id, { content: 'Builds use vite', confidence: 0.8 })
    expect(updated).toMatchObject({
      id,
      content: 'Builds use vite',
      confidence: 0.8,
      hash: memoryHash('builds use vite'),
    })
    expect((await memory.recall('vite')).map((h) => h.id)).toEqual([id])
    const history = await memory.memories.history(id)
    expect(history.map((h) => [h.event, h.oldValue, h.newValue])).toEqual([
      ['ADD', null, 'Builds use webpack'],
      ['UPDATE', 'Builds use webpack', 'Builds use vite'],
    ])
    expect(history[1]?.changes).toEqual({ confidence: [0.7, 0.8] })
    await rejects(memory.memories.update('mem_nope', { content: 'x' }), 'NOT_FOUND')
    await rejects(memory.memories.update(id, {}), 'INVALID_INPUT')
  })

  it('forgetAll needs confirmation and deletes only the selected memories in one go', async () => {
    await using memory = await openTestMemory()
    await memory.remember({ content: 'one', category: 'fact', userId: 'alice' })
    await memory.remember({ content: 'two', category: 'fact', userId: 'alice' })
    const bob = await memory.remember({ content: 'three', category: 'fact', userId: 'bob' })
    await rejects(memory.memories.forgetAll({ userId: 'alice' } as never), 'INVALID_INPUT')
    expect(await memory.memories.forgetAll({ userId: 'alice', confirm: true })).toEqual({ deleted: 2 })
    expect(await memory.memories.list({ userId: 'alice' })).toEqual([])
    expect((await memory.memories.list()).map((m) => m.id)).toEqual([bob.id])
    expect(await memory.memories.list({ userId: 'alice', status: 'deleted' })).toHaveLength(2)
  })

  it('invalid input is refused before anything is written', async () => {
    await using memory = await openTestMemory()
    await rejects(memory.remember({ content: '   ', category: 'fact' }), 'INVALID_INPUT')
    await rejects(memory.remember({ content: 'x', category: 'gossip' as never }), 'INVALID_INPUT')
    await rejects(
      memory.remember({ content: 'x', category: 'fact', relatedTo: ['a'], context: '' }),
      'INVALID_INPUT',
    )
    await rejects(
      memory.remember({
        content: 'x',
        category: 'fact',
        relatedTo: ['a'],
        metadata: { a: 1 },
        scope: 'team' as never,
      }),
      'INVALID_INPUT',
    )
    expect(await memory.memories.list({ status: 'any' })).toEqual([])
  })

  it('keyword search survives hostile query text', async () => {
    await using memory = await openTestMemory()
    const { id } = await memory.remember({ content: "O'Reilly books about C:\\paths", category: 'fact' })
    for (const q of [
      "O'Reilly",
      "'; DROP TABLE memories; --",
      'C:\\paths',
      '& | ! ( ) <->',
      'the a of',
      '$1',
    ]) {
      await memory.recall(q)
    }
    expect((await memory.recall("o'reilly")).map((h) => h.id)).toEqual([id])
    expect((await memory.memories.list()).length).toBe(1)
  })

  itWithVectors('recall leaves out memories that match neither by meaning nor by words', async () => {
    const table = {
      'User likes jazz': atSimilarity(0.3),
      'music taste': atSimilarity(1),
      'User owns a bike': [0, 0, 1],
    }
    await using memory = await openTestMemory({ embedder: createTestEmbedder({ table }) })
    const jazz = await memory.remember({ content: 'User likes jazz', category: 'preference' })
    await memory.remember({ content: 'User owns a bike', category: 'fact' })
    expect((await memory.recall('music taste')).map((h) => h.id)).toEqual([jazz.id])
    expect(await memory.recall('music taste', { minSimilarity: 0.5 })).toEqual([])
  })

  itWithVectors('fuses by z-scores: a keyword match far above the rest beats what the vector list barely prefers; rrf ranks them the other way', async () => {
    const { query, strong: strongText, barely: barelyText, others, table } = standoutCase()
    await using memory = await openTestMemory({ embedder: createTestEmbedder({ dims: 8, table }) })
    const save = (content: string) => memory.remember({ content, category: 'fact', dedup: 'exact' })
    const strong = await save(strongText)
    const barely = await save(barelyText)
    for (const text of others) await save(text)

    const hits = await memory.memories.search(query, { limit: 50 })
    expect(hits).toHaveLength(9) // every memory: the vector list holds them all
    expect(hits[0]?.id).toBe(strong.id)
    // The formula, recomputed from the scores each hit reports.
    const matched = hits.filter((h) => h.scores.keyword !== null)
    expect(matched).toHaveLength(5)
    const k = standardise(matched.map((h) => h.scores.keyword!))
    const v = standardise(hits.map((h) => h.scores.vector!))
    expect(k.z(hits[0]!.scores.keyword!)).toBeGreaterThan(1.5)
    for (const h of hits) {
      const zk = h.scores.keyword === null ? k.floor : k.z(h.scores.keyword)
      expect(h.scores.fused).toBeCloseTo(Math.max(0, (zk + v.z(h.scores.vector!)) / 2 + 6) / 9, 9)
    }
    // A smaller limit gives the first hits of a larger one, in the same order.
    expect((await memory.recall(query, { limit: 3 })).map((h) => h.id)).toEqual(hits.slice(0, 3).map((h) => h.id))

    const rrf = await memory.memories.search(query, { limit: 3, fusion: 'rrf' })
    expect(rrf[0]?.id).toBe(barely.id)
    expect(rrf.findIndex((h) => h.id === strong.id)).toBeGreaterThan(0)
    await rejects(memory.recall(query, { fusion: 'borda' as never }), 'INVALID_INPUT')
  })

  it('without an embedder, memories rank by BM25 over the memories in scope, fused by its z alone', async () => {
    await using memory = await openTestMemory()
    const texts = {
      'the backup job failed on the storage server': 5, // distinct lexemes: backup job fail storag server
      'storage quota raised': 3,
      'backup restored': 2,
      'lunch at noon': 2,
    }
    for (const content of Object.keys(texts)) await memory.remember({ content, category: 'fact', userId: 'ann' })
    await memory.remember({ content: 'backup storage backup', category: 'fact', userId: 'bob' })
    const hits = await memory.memories.search('backup storage', { userId: 'ann' })
    // BM25 with k1 1.2, b 0.75 over Ann's 4 memories (Bob's is not counted): each word in 2.
    const n = 4
    const avgdl = Object.values(texts).reduce((x, y) => x + y, 0) / n
    const idf = Math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    const bm25 = (words: number, dl: number) => words * idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * dl / avgdl))
    const expected = {
      'the backup job failed on the storage server': bm25(2, 5),
      'storage quota raised': bm25(1, 3),
      'backup restored': bm25(1, 2),
    }
    expect(hits.map((h) => h.content)).toEqual(
      Object.entries(expected).sort((x, y) => y[1] - x[1]).map(([text]) => text),
    )
    for (const h of hits) expect(h.scores.keyword).toBeCloseTo(expected[h.content as keyof typeof expected], 9)
    const k = standardise(hits.map((h) => h.scores.keyword!))
    for (const h of hits) expect(h.scores.fused).toBeCloseTo(Math.max(0, k.z(h.scores.keyword!) + 6) / 9, 9)
    // With a filter expression the pool is counted row by row instead of summed from its
    // groups (memory_stats): the same scores.
    const filtered = await memory.memories.search('backup storage', { userId: 'ann', filters: { field: 'category', operator: 'eq', value: 'fact' } })
    expect(filtered.map((h) => [h.content, h.scores.keyword])).toEqual(hits.map((h) => [h.content, h.scores.keyword]))
  })

  it('the pool sizes BM25 reads stay exact through saves, supersedes, edits, moves and deletes', async () => {
    const table = { 'Deploys go out on Fridays': atSimilarity(1), 'Deploys go out on Fridays after noon': atSimilarity(0.95) }
    await using t = await openTestEngine({ embedder: createTestEmbedder({ table }) })
    const m = t.engine
    const counted = () => expectKeptMemoryCounts(t.db)
    const first = await m.remember({ content: 'Deploys go out on Fridays', category: 'convention', userId: 'ann' })
    await m.remember({ content: 'Deploys go out on Fridays after noon', category: 'convention', userId: 'ann' }) // supersedes
    const other = await m.remember({ content: 'Ann reviews every migration', category: 'fact', userId: 'ann', agentId: 'a1', runId: 'r1' })
    await m.remember({ content: 'Bob prefers dark mode', category: 'preference', userId: 'bob', sensitivity: 'high' })
    await m.remember({ content: 'The staging database is read-only', category: 'fact', scope: 'global' })
    expect(await counted()).toBe(5)
    await m.memories.update(other.id, { content: 'Ann reviews every schema migration twice', category: 'convention', sensitivity: 'low' })
    await m.recall('migration', { userId: 'ann' }) // counts uses: not a move
    await m.memories.delete(first.id)
    await counted()
    await m.memories.forgetAll({ userId: 'bob', confirm: true })
    await counted()
    await m.memories.forgetAll({ userId: 'ann', confirm: true })
    await m.memories.forgetAll({ scope: 'global', confirm: true })
    // Deleted memories are kept (status 'deleted'), so their groups stay, counted as such.
    const { rows } = await t.db.query<{ status: string }>(`SELECT DISTINCT status FROM memory_stats ORDER BY status`)
    expect(rows.map((r) => r.status)).not.toContain('active')
    await counted()
  })

  it('a memory with expiresAt leaves recall, search, listing and the context once it expires, and stays readable by id', async () => {
    const clock = testClock('2025-03-01T10:00:00.000Z')
    await using memory = await openTestMemory({ now: clock.now })
    const who = { userId: 'ann' }
    const leave = await memory.remember({ content: 'Ann is on leave until Friday', category: 'fact', expiresAt: '2025-03-07T00:00:00Z', ...who })
    const freeze = await memory.remember({ content: 'Deploys are frozen this week', category: 'constraint', context: 'Release', expiresAt: new Date('2025-03-07T00:00:00Z'), ...who })
    const inRelease = async () => (await memory.memories.contexts(who)).find((c) => c.name === 'Release')?.memories
    await memory.remember({ content: 'Deploys go out from main only', category: 'constraint', ...who })
    const recalled = async (q: string) => (await memory.recall(q, who)).map((h) => h.content)
    const searched = async (q: string) => (await memory.memories.search(q, who)).map((h) => h.content)
    const listed = async (status?: 'expired' | 'any') => (await memory.memories.list({ ...who, ...(status ? { status } : {}) })).map((m) => m.content).sort()
    const rules = async () => {
      const bundle = await memory.buildContext({ query: 'deploys', conversationId: 'c1', retrieval: false, ...who })
      return bundle.sections.find((x) => x.name === 'rules')?.items.map((item) => item.text) ?? []
    }

    expect((await memory.memories.get(leave.id))?.expiresAt?.toISOString()).toBe('2025-03-07T00:00:00.000Z')
    expect(await recalled('leave')).toEqual(['Ann is on leave until Friday'])
    expect(await searched('deploys frozen')).toContain('Deploys are frozen this week')
    expect(await rules()).toContain('- Deploys are frozen this week')
    expect(await listed('expired')).toEqual([])
    expect(await inRelease()).toBe(1)

    // One millisecond past the expiry: gone from every read but by id, and listed as expired.
    clock.set('2025-03-07T00:00:00.001Z')
    expect(await recalled('leave')).toEqual([])
    expect(await searched('deploys frozen')).toEqual(['Deploys go out from main only'])
    expect(await rules()).toEqual(['- Deploys go out from main only'])
    expect(await listed()).toEqual(['Deploys go out from main only'])
    expect(await listed('expired')).toEqual(['Ann is on leave until Friday', 'Deploys are frozen this week'])
    expect(await listed('any')).toHaveLength(3)
    expect((await memory.memories.get(leave.id))?.status).toBe('active')
    expect(await inRelease()).toBe(0)

    // Cleared, it comes back, and the change is in its history.
    await memory.memories.update(freeze.id, { expiresAt: null })
    expect(await rules()).toContain('- Deploys are frozen this week')
    expect(await inRelease()).toBe(1)
    const history = await memory.memories.history(freeze.id)
    expect(history.at(-1)?.changes).toMatchObject({ expiresAt: ['2025-03-07T00:00:00.000Z', null] })

    // Said again after it expired, it is a new memory that supersedes the expired one; said
    // again with another expiry, the same.
    const again = await memory.remember({ content: 'Ann is on leave until Friday', category: 'fact', ...who })
    expect(again).toMatchObject({ action: 'superseded', supersededId: leave.id })
    expect(await recalled('leave')).toEqual(['Ann is on leave until Friday'])
    expect((await memory.remember({ content: 'Ann is on leave until Friday', category: 'fact', ...who })).action).toBe('unchanged')
    const moved = await memory.remember({ content: 'Ann is on leave until Friday', category: 'fact', expiresAt: '2025-03-14T00:00:00Z', ...who })
    expect(moved).toMatchObject({ action: 'superseded', supersededId: again.id })

    // Filters name it too; a malformed expiry is refused.
    const expiring = await memory.memories.list({ ...who, filters: { field: 'expires_at', operator: 'gt', value: '2025-03-10T00:00:00Z' } })
    expect(expiring.map((m) => m.id)).toEqual([moved.id])
    await rejects(memory.remember({ content: 'x y', category: 'fact', expiresAt: 'next week' }), 'INVALID_INPUT')
    await rejects(memory.memories.update(freeze.id, { expiresAt: 'soon' }), 'INVALID_INPUT')

    // What has expired is cleaned up in one call; the rest stays.
    await memory.remember({ content: 'The office is closed today', category: 'fact', expiresAt: '2025-03-07T00:00:01Z', ...who })
    await rejects(memory.memories.forgetAll({ expired: true } as never), 'INVALID_INPUT')
    expect(await memory.memories.forgetAll({ ...who, expired: true, confirm: true })).toEqual({ deleted: 0 })
    clock.set('2025-03-07T00:00:02Z')
    expect(await memory.memories.forgetAll({ ...who, expired: true, confirm: true })).toEqual({ deleted: 1 })
    expect(await listed('expired')).toEqual([])
    expect((await memory.memories.get(moved.id))?.status).toBe('active')

    // An export carries it.
    await using copy = await openTestMemory({ now: clock.now })
    await copy.importFile(await memory.exportFile())
    expect((await copy.memories.get(moved.id))?.expiresAt?.toISOString()).toBe('2025-03-14T00:00:00.000Z')
    expect((await copy.memories.get(leave.id))?.expiresAt?.toISOString()).toBe('2025-03-07T00:00:00.000Z')
  })

  itWithVectors('memory operations are reported to telemetry subscribers', async () => {
    const table = { 'Old fact': atSimilarity(1), 'Old fact, revised': atSimilarity(0.95) }
    await using memory = await openTestMemory({ embedder: createTestEmbedder({ table }) })
    const events: TelemetryEvent[] = []
    const stop = memory.telemetry.subscribe((e) => events.push(e))
    const a = await memory.remember({ content: 'Old fact', category: 'fact', runId: 'run-1' })
    const b = await memory.remember({ content: 'Old fact, revised', category: 'fact', runId: 'run-1' })
    await memory.recall('revised')
    await memory.memories.delete(b.id)
    stop()
    await memory.memories.get(a.id)
    expect(events.map((e) => [e.op, e.memoryId, e.entityType, e.runId])).toEqual([
      ['write', a.id, 'memory', 'run-1'],
      ['write', b.id, 'memory', 'run-1'],
      ['overwrite', a.id, 'memory', 'run-1'],
      ['query', null, 'memory', null],
      ['read', b.id, 'memory', 'run-1'],
      ['delete', b.id, 'memory', 'run-1'],
    ])
    expect(events[0]?.scope).toBe('user')
  })
})

describe('memory names and links', () => {
  it('keys, contexts, links and ids Postgres would store altered are refused, so that two never become one', async () => {
    await using memory = await openTestMemory()
    const base = { content: 'Ann likes tea', category: 'preference' as const, userId: 'ann' }
    for (const bad of ['x\uD800', 'x\uDC00']) {
      const calls: Promise<unknown>[] = [
        memory.remember({ ...base, key: bad }),
        memory.remember({ ...base, context: bad }),
        memory.remember({ ...base, relatedTo: [bad] }),
        memory.remember({ ...base, derivedFrom: [bad] }),
        memory.memories.list({ relevantTo: [bad] }),
        memory.memories.list({ key: bad }),
        memory.memories.get(bad),
        memory.memories.defineContext({ name: bad }),
      ]
      // Each settled at once: a write waiting for its turn must not leave a read's refusal unhandled.
      expect(await Promise.all(calls.map((call) => codeOf(call))), JSON.stringify(bad)).toEqual(calls.map(() => 'INVALID_INPUT'))
    }
    expect(await memory.memories.list({ status: 'any' })).toEqual([])
  })
})

describe('memories as of a time', () => {
  it('list and get read each memory as it was: its text, fields and status then, from the history written since', async () => {
    const c = testClock('2025-04-01T09:00:00.000Z')
    await using memory = await openTestMemory({ now: c.now })
    const at = (): Date => new Date(c.now().getTime() + 500)
    const beforeAll = new Date(c.now().getTime() - 1000)
    const home = await memory.remember({ content: 'Ann lives in Bergen', category: 'fact', userId: 'ann' })
    const t1 = at()
    c.advance(60_000)
    await memory.memories.update(home.id, { content: 'Ann lives in Oslo', confidence: 0.9, metadata: { source: 'moving day' } })
    const t2 = at()
    c.advance(60_000)
    const tea = await memory.remember({ content: 'Ann prefers tea', category: 'preference', userId: 'ann', key: 'drink' })
    const t3 = at()
    c.advance(60_000)
    const coffee = await memory.remember({ content: 'Ann prefers coffee', category: 'preference', userId: 'ann', key: 'drink' })
    const t4 = at()
    c.advance(60_000)
    await memory.memories.delete(home.id)
    const view = async (asOf: Date, status: 'active' | 'any' = 'active') =>
      (await memory.memories.list({ userId: 'ann', asOf, status })).map((m) => [m.content, m.status, m.confidence]).sort()

    expect(await view(beforeAll)).toEqual([])
    expect(await view(t1)).toEqual([['Ann lives in Bergen', 'active', 0.7]])
    expect(await view(t2)).toEqual([['Ann lives in Oslo', 'active', 0.9]])
    expect(await view(t3)).toEqual([
      ['Ann lives in Oslo', 'active', 0.9],
      ['Ann prefers tea', 'active', 0.7],
    ])
    expect(await view(t4, 'any')).toEqual([
      ['Ann lives in Oslo', 'active', 0.9],
      ['Ann prefers coffee', 'active', 0.7],
      ['Ann prefers tea', 'superseded', 0.7],
    ])
    expect(await view(at(), 'any')).toEqual([
      ['Ann lives in Oslo', 'deleted', 0.9],
      ['Ann prefers coffee', 'active', 0.7],
      ['Ann prefers tea', 'superseded', 0.7],
    ])
    const then = await memory.memories.get(home.id, { asOf: t1 })
    expect(then).toMatchObject({ content: 'Ann lives in Bergen', status: 'active', metadata: {}, confidence: 0.7 })
    expect(then?.hash).toBe(memoryHash('Ann lives in Bergen'))
    expect((await memory.memories.get(tea.id, { asOf: t3 }))?.supersededBy).toBeNull()
    expect((await memory.memories.get(tea.id, { asOf: t4 }))?.supersededBy).toBe(coffee.id)
    expect(await memory.memories.get(coffee.id, { asOf: t3 })).toBeNull()
    // As of now, each memory reads as it does without asOf.
    const now = await memory.memories.list({ userId: 'ann', status: 'any' })
    const asOfNow = await memory.memories.list({ userId: 'ann', status: 'any', asOf: at() })
    expect(asOfNow).toEqual(now)
    await expect(memory.memories.list({ asOf: 'yesterday' as never })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  itWithVectors('recall and search rank each memory as it was: its text then (keywords and a vector of it), its status and expiry then', async () => {
    const c = testClock('2025-04-01T09:00:00.000Z')
    const embedder = createTestEmbedder()
    await using memory = await openTestMemory({ now: c.now, embedder })
    const at = (): Date => new Date(c.now().getTime() + 500)
    const ann = { userId: 'ann', minSimilarity: 0.05 }
    const texts = async (query: string, asOf?: Date) =>
      (await memory.recall(query, { ...ann, ...(asOf ? { asOf } : {}) })).map((h) => h.content)

    const home = await memory.remember({ content: 'Ann lives in Bergen', category: 'fact', userId: 'ann' })
    const trip = await memory.remember({
      content: 'Ann is visiting Rome',
      category: 'fact',
      userId: 'ann',
      expiresAt: new Date(c.now().getTime() + 90_000),
    })
    const t1 = at()
    c.advance(60_000)
    await memory.memories.update(home.id, { content: 'Ann lives in Oslo' })
    const tea = await memory.remember({ content: 'Ann prefers green tea', category: 'preference', userId: 'ann', key: 'drink' })
    const t2 = at()
    c.advance(60_000)
    const coffee = await memory.remember({ content: 'Ann prefers black coffee', category: 'preference', userId: 'ann', key: 'drink' })
    const t3 = at()
    c.advance(60_000)
    await memory.memories.delete(home.id)

    // The text then: its keywords and its vector, embedded now from that text.
    const [bergen] = await memory.recall('Bergen', { ...ann, asOf: t1 })
    expect(bergen).toMatchObject({ id: home.id, content: 'Ann lives in Bergen', hash: memoryHash('Ann lives in Bergen') })
    const [q, then] = await embedder.embed(['Bergen', 'Ann lives in Bergen'])
    const cosine = (q as Float32Array).reduce((sum, x, i) => sum + x * ((then as Float32Array)[i] as number), 0)
    expect(bergen?.scores.vector).toBeCloseTo(cosine, 5)
    expect(bergen?.scores.keyword).toBeGreaterThan(0)
    expect(await texts('Bergen', t2)).toEqual([])
    expect(await texts('Oslo', t2)).toEqual(['Ann lives in Oslo'])
    // Deleted since: found as of a time it was active, not as of now.
    expect(await texts('Oslo')).toEqual([])
    // Superseded by a later memory of the same key; expired by its own time.
    expect(await texts('prefers tea', t2)).toEqual(['Ann prefers green tea'])
    expect(await texts('prefers tea', t3)).toEqual(['Ann prefers black coffee'])
    expect(await texts('visiting Rome', t1)).toEqual(['Ann is visiting Rome'])
    expect(await texts('visiting Rome', t2)).toEqual(['Ann is visiting Rome'])
    expect(await texts('visiting Rome', t3)).toEqual([])
    // Nothing created later.
    expect(await texts('coffee', t2)).toEqual([])
    // `memories.search` reads the same past.
    expect((await memory.memories.search('Bergen', { ...ann, asOf: t1 })).map((h) => h.content)).toEqual(['Ann lives in Bergen'])

    // Recalling the past is no use of a memory; recalling the present is.
    const uses = async () => (await memory.memories.get(tea.id))?.useCount
    expect(await uses()).toBe(0)
    await memory.recall('prefers tea', { ...ann, asOf: t2 })
    expect(await uses()).toBe(0)
    expect((await memory.memories.get(trip.id))?.useCount).toBe(0)

    // As of now, the past is the present: the same hits, scores and order.
    for (const query of ['Ann', 'prefers coffee', 'Rome Oslo Bergen']) {
      expect(await memory.memories.search(query, { userId: 'ann', asOf: at() })).toEqual(await memory.memories.search(query, { userId: 'ann' }))
    }
    expect((await memory.memories.get(coffee.id))?.useCount).toBe(0)
  })

  itWithVectors('recall as of a time whose past text the embedder cannot embed fails as MODEL_UNAVAILABLE; the present still answers', async () => {
    const c = testClock('2025-04-01T09:00:00.000Z')
    let failing = false
    await using memory = await openTestMemory({
      now: c.now,
      embedder: createTestEmbedder({ failOn: (t) => failing && t === 'Ann lives in Bergen' }),
    })
    const m = await memory.remember({ content: 'Ann lives in Bergen', category: 'fact', userId: 'ann' })
    const before = new Date(c.now().getTime() + 500)
    c.advance(60_000)
    await memory.memories.update(m.id, { content: 'Ann lives in Oslo' })
    failing = true
    await expect(memory.recall('Bergen', { userId: 'ann', asOf: before })).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect((await memory.recall('Oslo', { userId: 'ann' })).map((h) => h.content)).toEqual(['Ann lives in Oslo'])
    // Only what the call may rank is embedded: not another user's past text, nor one its
    // channel may not show.
    expect(await memory.recall('Bergen', { userId: 'bob', asOf: before })).toEqual([])
    expect(await memory.memories.search('Bergen', { userId: 'bob', asOf: before })).toEqual([])
    await memory.memories.update(m.id, { sensitivity: 'high' })
    expect(await memory.recall('Bergen', { userId: 'ann', asOf: before, channel: 'public' })).toEqual([])
  })

  it('a memory whose sensitivity was raised since is shown as of then only where both its sensitivities may be', async () => {
    const c = testClock('2025-04-01T09:00:00.000Z')
    await using memory = await openTestMemory({ now: c.now, embedder: createTestEmbedder() })
    const m = await memory.remember({ content: 'Ann sees Dr. Hale on Tuesdays', category: 'fact', userId: 'ann', sensitivity: 'low' })
    const before = new Date(c.now().getTime() + 500)
    c.advance(60_000)
    await memory.memories.update(m.id, { sensitivity: 'high', category: 'instruction' })
    const seen = async (channel: 'agent' | 'team') => [
      (await memory.recall('Dr. Hale', { userId: 'ann', channel, asOf: before })).length,
      (await memory.memories.search('Dr. Hale', { userId: 'ann', channel, asOf: before })).length,
      (await memory.memories.list({ userId: 'ann', channel, asOf: before })).length,
      (await memory.memories.get(m.id, { channel, asOf: before })) === null ? 0 : 1,
    ]
    // `low` then, `high` now: the agent channel saw it then, and sees neither it nor its past now.
    expect(await seen('agent')).toEqual([0, 0, 0, 0])
    expect(await seen('team')).toEqual([1, 1, 1, 1])
    expect((await memory.memories.get(m.id, { channel: 'team', asOf: before }))?.sensitivity).toBe('low')
    // Selectors and filters match the memory as it was: a fact then, an instruction now.
    const ids = async (o: { category: 'fact' | 'instruction'; asOf?: Date }) => [
      (await memory.recall('Dr. Hale', { userId: 'ann', ...o })).length,
      (await memory.memories.list({ userId: 'ann', ...o })).length,
      (await memory.memories.list({ userId: 'ann', filters: { field: 'category', operator: 'eq', value: o.category }, ...(o.asOf ? { asOf: o.asOf } : {}) })).length,
    ]
    expect(await ids({ category: 'fact', asOf: before })).toEqual([1, 1, 1])
    expect(await ids({ category: 'instruction', asOf: before })).toEqual([0, 0, 0])
    expect(await ids({ category: 'instruction' })).toEqual([1, 1, 1])
  })
})

describe('a memory saved without a user', () => {
  it('belongs to no user: reads that name no user find it, a named user never does, and a global one every reader sees', async () => {
    await using memory = await openTestMemory()
    const nobody = await memory.remember({ content: 'Run the linter before every commit', category: 'instruction' })
    const everyone = await memory.remember({ content: 'Answer in British English', category: 'instruction', scope: 'global' })
    expect(await memory.memories.get(nobody.id)).toMatchObject({ scope: 'user', userId: null })
    const found = async (userId: string | undefined) => {
      const who = userId === undefined ? {} : { userId }
      const context = await memory.buildContext({ conversationId: 'c1', query: 'linter commit English', scope: who })
      return {
        recall: (await memory.recall('linter commit English', who)).map((h) => h.id).sort(),
        search: (await memory.memories.search('linter commit English', who)).map((h) => h.id).sort(),
        context: context.sections.flatMap((s) => s.items.map((i) => i.source.memoryId)).filter(Boolean).sort(),
        tool: ((await memory.callTool('recall_memories', { query: 'linter commit' }, who)) as { memories: { id: string }[] }).memories.map((m) => m.id),
      }
    }
    const both = [nobody.id, everyone.id].sort()
    expect(await found(undefined)).toEqual({ recall: both, search: both, context: both, tool: [nobody.id] })
    // memories.search filters by the owner it is given, as memories.list does: global ones are not ann's.
    expect(await found('ann')).toEqual({ recall: [everyone.id], search: [], context: [everyone.id], tool: [] })
  })
})
