import type { ContextBundle } from '../../src/core/retrieval/context.ts'
import { describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { anthropicTools, MEMORY_GUIDELINES, openAITools, TOOL_NAMES, TOOL_SCHEMAS } from '../../src/core/tools/agent-tools.ts'
import { callTool, FORGET_BATCH } from '../../src/core/tools/tool-calls.ts'
import { z } from '../../src/core/kernel/validate.ts'
import { testClock } from '../support/clock.ts'
import { createTestEmbedder } from '../support/embedder.ts'
import { openTestMemory } from '../support/memory.ts'

async function errorOf(p: Promise<unknown>): Promise<MemoryError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!MemoryError.is(err)) throw new Error(`expected a MemoryError, got ${String(err)}`)
  return err
}

describe('agent tools', () => {
  it('are published for OpenAI and Anthropic from the same zod schemas', () => {
    const openai = openAITools()
    const anthropic = anthropicTools()
    expect(openai.map((t) => t.function.name)).toEqual([
      'save_memory',
      'recall_memories',
      'manage_memory',
      'record_event',
      'record_turn',
      'build_context',
      'get_artifact',
      'query_decisions',
    ])
    expect(anthropic.map((t) => t.name)).toEqual(TOOL_NAMES)
    for (const [i, name] of TOOL_NAMES.entries()) {
      const { $schema: _, ...expected } = z.toJSONSchema(TOOL_SCHEMAS[name].schema, {
        io: 'input',
      }) as Record<string, unknown>
      expect(openai[i]).toEqual({
        type: 'function',
        function: { name, description: TOOL_SCHEMAS[name].description, parameters: expected },
      })
      expect(anthropic[i]).toEqual({
        name,
        description: TOOL_SCHEMAS[name].description,
        input_schema: expected,
      })
      expect(expected.type).toBe('object')
      expect(JSON.parse(JSON.stringify(expected))).toEqual(expected)
    }
    const save = openai[0]?.function.parameters as { required: string[]; properties: Record<string, unknown> }
    expect(save.required.sort()).toEqual(['category', 'content'])
    expect(Object.keys(save.properties).sort()).toEqual([
      'category',
      'content',
      'context',
      'expires_at',
      'key',
      'related_to',
      'scope',
      'source',
    ])
    const recall = openai[1]?.function.parameters as { properties: { limit: { maximum: number } } }
    expect(recall.properties.limit.maximum).toBe(50)
    expect(openAITools(['recall_memories']).map((t) => t.function.name)).toEqual(['recall_memories'])
  })

  it("the advertised schemas carry the engine's bounds, and what they let through at a bound the tool takes", async () => {
    const params = Object.fromEntries(openAITools().map((t) => [t.function.name, t.function.parameters])) as Record<
      string,
      { properties: Record<string, { maxLength?: number; minimum?: number; pattern?: string; items?: { maxLength?: number; pattern?: string } }> }
    >
    const field = (tool: string, name: string) => params[tool]?.properties[name] ?? {}
    const ids: [string, string][] = [
      ['record_event', 'conversation_id'],
      ['record_event', 'actor_id'],
      ['record_turn', 'conversation_id'],
      ['build_context', 'conversation_id'],
      ['query_decisions', 'conversation_id'],
    ]
    for (const [tool, name] of ids) {
      const f = field(tool, name)
      expect(f.maxLength, `${tool}.${name}`).toBe(256)
      const id = new RegExp(f.pattern as string)
      expect([id.test('c1'), id.test('a b'), id.test('c1 '), id.test(' c1'), id.test(' ')]).toEqual([true, true, false, false, false])
    }
    expect(field('record_event', 'refs').items?.maxLength).toBe(256)
    expect(field('record_event', 'tags').items?.maxLength).toBe(200)
    expect(field('save_memory', 'related_to').items?.maxLength).toBe(1000)
    expect(field('manage_memory', 'memory_id').maxLength).toBe(200)
    for (const [tool, name] of [['save_memory', 'content'], ['save_memory', 'key'], ['recall_memories', 'query'], ['build_context', 'query'], ['query_decisions', 'query']]) {
      const text = new RegExp(field(tool as string, name as string).pattern as string)
      expect([text.test('   '), text.test(' x ')], `${tool}.${name}`).toEqual([false, true])
    }
    expect(field('build_context', 'query').maxLength).toBe(20_000)
    // The tool's budget has the floor buildContext has.
    expect(field('build_context', 'max_tokens').minimum).toBe(64)

    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    const who = { tenantId: 't1', userId: 'u' }
    const longest = 'c'.repeat(256)
    await memory.callTool('record_event', { kind: 'message', conversation_id: longest, text: 'hi', actor_id: longest, refs: [longest], tags: ['t'.repeat(200)] }, who)
    await memory.callTool('record_turn', { conversation_id: longest, user: 'q', reply: 'a' }, who)
    await memory.callTool('save_memory', { content: ' padded ', category: 'fact', key: ' k ', related_to: ['r'.repeat(1000)] }, who)
    await memory.callTool('build_context', { query: 'q'.repeat(20_000), conversation_id: longest }, who)
    await memory.callTool('build_context', { query: 'q', max_tokens: 64 }, who)
    expect((await errorOf(memory.callTool('build_context', { query: 'q', max_tokens: 63 }, who))).code).toBe('INVALID_INPUT')
    await memory.callTool('query_decisions', { query: ' x ', conversation_id: longest }, who)
    // A file touched needs its content: the schema says so, and the tool says which field.
    const touched = await errorOf(
      memory.callTool('record_turn', { conversation_id: 'c1', user: 'q', reply: 'a', procedures: [{ tool: 'read', path: '/src/a.ts', effect: 'read' }] }, who),
    )
    expect([touched.code, touched.message]).toEqual(['INVALID_INPUT', expect.stringContaining('content')])
    // A tool's name is an id too, and not one of the links Engram writes itself.
    for (const tool of [' read', 'MESSAGE']) {
      const refused = await errorOf(memory.callTool('record_turn', { conversation_id: 'c1', user: 'q', reply: 'a', procedures: [{ tool, output: 'x' }] }, who))
      expect([refused.code, refused.message]).toEqual(['INVALID_INPUT', expect.stringContaining('tool')])
    }
  })

  it('save, recall and manage memories through tool calls on behalf of a user', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    const alice = { userId: 'alice', projectId: 'engram' }
    const saved = (await memory.callTool(
      'save_memory',
      {
        content: 'User wants explicit return types',
        category: 'preference',
        source: 'explicit',
        context: 'TypeScript',
      },
      alice,
    )) as { id: string; action: string }
    expect(saved.action).toBe('created')
    await memory.callTool(
      'save_memory',
      { content: 'Engram tests use vitest', category: 'convention', scope: 'project' },
      alice,
    )
    await memory.callTool(
      'save_memory',
      { content: 'Bob wants implicit return types', category: 'preference' },
      { userId: 'bob' },
    )
    const temporary = (await memory.callTool(
      'save_memory',
      { content: 'Alice is away until June', category: 'fact', expires_at: '2099-06-01T00:00:00Z' },
      alice,
    )) as { id: string }
    expect((await memory.memories.get(temporary.id))?.expiresAt?.toISOString()).toBe('2099-06-01T00:00:00.000Z')
    const own = (await memory.callTool('manage_memory', { action: 'list' }, alice)) as { memories: { id: string; expires_at?: string }[] }
    expect(own.memories.find((m) => m.id === temporary.id)?.expires_at).toBe('2099-06-01T00:00:00.000Z')
    const cleared = (await memory.callTool(
      'manage_memory',
      { action: 'update', memory_id: temporary.id, updates: { expires_at: null } },
      alice,
    )) as Record<string, unknown>
    expect(cleared).not.toHaveProperty('expires_at')
    expect((await memory.memories.get(temporary.id))?.expiresAt).toBeNull()
    await memory.memories.delete(temporary.id)

    const recalled = (await memory.callTool('recall_memories', { query: 'return types' }, alice)) as {
      memories: { id: string; content: string; contexts: string[]; score: number }[]
    }
    expect(recalled.memories.map((m) => m.content)).toEqual(['User wants explicit return types'])
    expect(recalled.memories[0]?.contexts).toEqual(['TypeScript'])

    const listed = (await memory.callTool('manage_memory', { action: 'list' }, alice)) as {
      memories: { content: string }[]
    }
    expect(listed.memories.map((m) => m.content).sort()).toEqual([
      'Engram tests use vitest',
      'User wants explicit return types',
    ])
    const elsewhere = (await memory.callTool('manage_memory', { action: 'list' }, { userId: 'alice' })) as {
      memories: unknown[]
    }
    expect(elsewhere.memories).toHaveLength(1)

    const updated = (await memory.callTool(
      'manage_memory',
      {
        action: 'update',
        memory_id: saved.id,
        updates: { content: 'User wants explicit return types on exports' },
      },
      alice,
    )) as { content: string }
    expect(updated.content).toBe('User wants explicit return types on exports')

    expect(
      (
        await errorOf(
          memory.callTool('manage_memory', { action: 'delete', memory_id: saved.id }, { userId: 'bob' }),
        )
      ).code,
    ).toBe('NOT_FOUND')
    expect(await memory.callTool('manage_memory', { action: 'delete', memory_id: saved.id }, alice)).toEqual({
      id: saved.id,
      deleted: true,
    })
    // Erased for good, its earlier text too: nothing to read back, no history to show it.
    expect(await memory.memories.get(saved.id)).toBeNull()
    expect(await memory.memories.history(saved.id)).toEqual([])
    expect((await errorOf(memory.callTool('manage_memory', { action: 'forget_all' }, alice))).code).toBe(
      'INVALID_INPUT',
    )
    // The project memory, and the one an update replaced: every version of the caller's own.
    expect(await memory.callTool('manage_memory', { action: 'forget_all', confirm: true }, alice)).toEqual({
      deleted: 2,
    })
    expect(await memory.memories.list({ userId: 'alice', status: 'any' })).toEqual([])
    expect((await memory.memories.list({ userId: 'bob' })).map((m) => m.content)).toEqual([
      'Bob wants implicit return types',
    ])
    // Two at once: each lists the same memories, one erases them, and neither fails.
    for (const content of ['Carol likes tabs', 'Carol deploys on Mondays']) {
      await memory.callTool('save_memory', { content, category: 'preference' }, { userId: 'carol' })
    }
    const both = await Promise.all([
      memory.callTool('manage_memory', { action: 'forget_all', confirm: true }, { userId: 'carol' }),
      memory.callTool('manage_memory', { action: 'forget_all', confirm: true }, { userId: 'carol' }),
    ])
    expect(both.map((r) => (r as { deleted: number }).deleted).sort()).toEqual([0, 2])
    expect(await memory.memories.list({ userId: 'carol', status: 'any' })).toEqual([])
  })

  it('forget_all erases every one of the caller\'s memories, batch after batch, however many there are', async () => {
    let left = Array.from({ length: 2 * FORGET_BATCH + 500 }, (_, n) => `mem_${n}`)
    const batches: number[] = []
    const host = {
      remember: () => Promise.reject(new Error('unused')),
      recall: () => Promise.reject(new Error('unused')),
      memories: {
        get: () => Promise.resolve(null),
        list: (o?: { limit?: number | undefined; status?: string | undefined }) => {
          expect(o?.status).toBe('any')
          return Promise.resolve(left.slice(0, o?.limit).map((id) => ({ id })) as never)
        },
        update: () => Promise.reject(new Error('unused')),
        delete: () => Promise.reject(new Error('unused')),
        forgetAll: () => Promise.reject(new Error('a host that can forget erases')),
      },
      forget: (target: { memoryIds: string[] }) => {
        batches.push(target.memoryIds.length)
        const gone = new Set(target.memoryIds)
        left = left.filter((id) => !gone.has(id))
        return Promise.resolve({ counts: { memories: target.memoryIds.length } })
      },
    }
    expect(await callTool(host, 'manage_memory', { action: 'forget_all', confirm: true }, { userId: 'ann' })).toEqual({ deleted: 2 * FORGET_BATCH + 500 })
    expect(batches).toEqual([FORGET_BATCH, FORGET_BATCH, 500])
  })

  it('manage_memory lists the most recalled memories first, then the newest', async () => {
    const clock = testClock('2025-03-01T00:00:00Z')
    await using memory = await openTestMemory({ now: clock.now, embedder: createTestEmbedder() })
    const bob = { userId: 'bob' }
    const save = async (content: string) => {
      clock.advance(60_000)
      return ((await memory.callTool('save_memory', { content, category: 'preference' }, bob)) as { id: string }).id
    }
    const tabs = await save('Bob indents with tabs')
    const quotes = await save('Bob writes single quotes in TypeScript')
    const semis = await save('Bob leaves out semicolons')
    const tests = await save('Bob runs the tests before every commit')
    // Each recall counts a use of every memory it returns.
    for (const query of ['single quotes', 'single quotes', 'tabs']) {
      clock.advance(60_000)
      const recalled = (await memory.callTool('recall_memories', { query, limit: 1 }, bob)) as { memories: { id: string }[] }
      expect(recalled.memories).toHaveLength(1)
    }
    const listed = (await memory.callTool('manage_memory', { action: 'list' }, bob)) as { memories: { id: string }[] }
    // Quotes twice, tabs once, then the unused ones newest first.
    expect(listed.memories.map((m) => m.id)).toEqual([quotes, tabs, tests, semis])
    // A memory saved under a key is replaced by the next one saved under it.
    const style = (content: string) => memory.callTool('save_memory', { content, category: 'convention', key: 'style' }, bob) as Promise<{ id: string; action: string }>
    const v1 = await style('Bob wraps lines at 100 columns')
    const v2 = await style('Bob wraps lines at 120 columns')
    expect(v2).toMatchObject({ action: 'superseded', supersededId: v1.id })
    const keyed = (await memory.callTool('manage_memory', { action: 'list' }, bob)) as { memories: { id: string; key?: string }[] }
    expect(keyed.memories.filter((m) => m.key === 'style').map((m) => m.id)).toEqual([v2.id])
  })

  it('refuses unknown tools and invalid arguments with INVALID_INPUT before doing anything', async () => {
    await using memory = await openTestMemory()
    expect((await errorOf(memory.callTool('drop_everything', {}))).code).toBe('INVALID_INPUT')
    expect((await errorOf(memory.callTool('save_memory', { content: 'x', category: 'gossip' }))).code).toBe(
      'INVALID_INPUT',
    )
    expect(
      (await errorOf(memory.callTool('save_memory', { content: 'x', category: 'fact', extra: 1 }))).code,
    ).toBe('INVALID_INPUT')
    expect((await errorOf(memory.callTool('recall_memories', { query: 'x', limit: 500 }))).code).toBe(
      'INVALID_INPUT',
    )
    expect((await errorOf(memory.callTool('manage_memory', { action: 'delete' }))).code).toBe('INVALID_INPUT')
    expect((await errorOf(memory.callTool('__proto__', {}))).code).toBe('INVALID_INPUT')
    expect(await memory.memories.list({ status: 'any' })).toEqual([])
  })

  it('record_event and build_context go to the engine when it has them, else say NOT_SUPPORTED', async () => {
    await using memory = await openTestMemory()
    const recorded: unknown[] = []
    const host = {
      ...memory,
      async record(input: unknown) {
        recorded.push(input)
        return { eventId: 'evt_1' }
      },
    }
    const hasRecord = typeof (memory as unknown as Record<string, unknown>).record === 'function'
    if (!hasRecord) {
      expect(
        (
          await errorOf(
            memory.callTool('record_event', { kind: 'message', conversation_id: 'c1', text: 'hi' }),
          )
        ).code,
      ).toBe('NOT_SUPPORTED')
    }
    expect(
      await callTool(
        host,
        'record_event',
        { kind: 'decision', conversation_id: 'c1', text: 'use PGlite', tags: ['db'] },
        {
          userId: 'alice',
          agentId: 'coder',
        },
      ),
    ).toEqual({ eventId: 'evt_1' })
    expect(recorded).toEqual([
      {
        kind: 'decision',
        scope: { conversationId: 'c1', userId: 'alice', agentId: 'coder' },
        actor: { type: 'agent', id: 'coder' },
        content: { text: 'use PGlite' },
        tags: ['db'],
      },
    ])
    const hasBuild = typeof (memory as unknown as Record<string, unknown>).buildContext === 'function'
    if (!hasBuild) {
      const err = await errorOf(callTool(host, 'build_context', { query: 'what next?' }))
      expect(err.code).toBe('NOT_SUPPORTED')
    }
    expect((await errorOf(callTool(host, 'build_context', { query: '' }))).code).toBe('INVALID_INPUT')
  })

  it("build_context loads the caller's project memories and no other project's", async () => {
    await using memory = await openTestMemory()
    const ann = (projectId: string) => ({ userId: 'ann', projectId })
    await memory.callTool('save_memory', { content: 'invoicer releases need a changelog entry', category: 'instruction', scope: 'project' }, ann('invoicer'))
    await memory.callTool('save_memory', { content: 'ledger releases are tagged by hand', category: 'instruction', scope: 'project' }, ann('ledger'))
    const rules = async (projectId: string) => {
      const b = (await memory.callTool('build_context', { query: 'how do releases work?' }, ann(projectId))) as ContextBundle
      return b.sections.find((x) => x.name === 'rules')?.items.map((i) => i.text)
    }
    expect(await rules('invoicer')).toEqual(['- invoicer releases need a changelog entry'])
    expect(await rules('ledger')).toEqual(['- ledger releases are tagged by hand'])
  })

  it('get_artifact reads a cut tool output in full, and query_decisions searches the decision ledger', async () => {
    const clock = testClock('2025-03-01T00:00:00Z')
    await using memory = await openTestMemory({ now: clock.now, embedder: createTestEmbedder() })
    const alice = { tenantId: 't1', userId: 'alice', agentId: 'coder' }
    const output = `${Array.from({ length: 4000 }, (_, n) => `line ${n} of the build log`).join('\n')}\n`
    const big = await memory.record({
      kind: 'tool_result',
      scope: { ...alice, conversationId: 'c1' },
      actor: { type: 'tool', id: 'build' },
      content: { tool: 'build', output },
      sensitivity: 'high',
    })
    const artifact = (await memory.callTool('get_artifact', { artifact_id: big.artifactId }, alice)) as Record<string, unknown>
    expect(artifact).toMatchObject({ id: big.artifactId, event_id: big.eventId, bytes: output.length, content: output })
    // Another tenant's id is not found, and a channel that may not show it is refused.
    expect((await errorOf(memory.callTool('get_artifact', { artifact_id: big.artifactId }, { tenantId: 't2' }))).code).toBe('NOT_FOUND')
    expect((await errorOf(memory.callTool('get_artifact', { artifact_id: big.artifactId, channel: 'public' }, alice))).code).toBe('NOT_FOUND')
    // Another user of the tenant does not read Alice's outputs, even with the id.
    expect((await errorOf(memory.callTool('get_artifact', { artifact_id: big.artifactId }, { tenantId: 't1', userId: 'bob' }))).code).toBe('NOT_FOUND')

    for (const [conversationId, text] of [
      ['c1', 'Use PGlite for storage because it runs in the browser'],
      ['c2', 'Ship the release on Mondays'],
      ['c2', 'Storage stays on the device: no server'],
    ] as const) {
      clock.advance(60_000)
      await memory.callTool('record_event', { kind: 'decision', conversation_id: conversationId, text }, alice)
    }
    await memory.callTool('record_event', { kind: 'message', conversation_id: 'c1', text: 'storage storage storage' }, alice)
    const found = (await memory.callTool('query_decisions', { query: 'storage' }, alice)) as {
      decisions: { id: string; text: string; conversation_id: string }[]
    }
    // Decisions only, the two about storage first.
    expect(found.decisions.slice(0, 2).map((d) => d.text).sort()).toEqual([
      'Storage stays on the device: no server',
      'Use PGlite for storage because it runs in the browser',
    ])
    expect(found.decisions.map((d) => d.text)).not.toContain('storage storage storage')
    const inC2 = (await memory.callTool('query_decisions', { query: 'storage', conversation_id: 'c2', limit: 5 }, alice)) as {
      decisions: { conversation_id: string }[]
    }
    expect(inC2.decisions.map((d) => d.conversation_id)).toEqual(['c2', 'c2'])
    expect(found.decisions.every((d) => (d as unknown as { status: string }).status === 'active')).toBe(true)
    // A decision that replaces another: the replaced one is left out, or marked when asked for.
    const replaced = found.decisions.find((d) => d.text.startsWith('Use PGlite')) as { id: string }
    const { eventId: by } = (await memory.callTool(
      'record_event',
      { kind: 'decision', conversation_id: 'c3', text: 'Use PGlite storage in a worker', supersedes: [replaced.id] },
      alice,
    )) as { eventId: string }
    const now = (await memory.callTool('query_decisions', { query: 'PGlite storage' }, alice)) as { decisions: { id: string; status: string }[] }
    expect(now.decisions.map((d) => d.id)).toContain(by)
    expect(now.decisions.map((d) => d.id)).not.toContain(replaced.id)
    const all = (await memory.callTool('query_decisions', { query: 'PGlite storage', include_superseded: true }, alice)) as {
      decisions: { id: string; status: string; superseded_by?: string }[]
    }
    expect(all.decisions.find((d) => d.id === replaced.id)).toMatchObject({ status: 'superseded', superseded_by: by })
    expect(await memory.events.supersededBy([replaced.id, by], { tenantId: 't1' })).toEqual({ [replaced.id]: by })
    // Another tenant's decisions supersede nothing here, nor one the channel may not show.
    expect(await memory.events.supersededBy([replaced.id])).toEqual({})
    const { eventId: secret } = (await memory.callTool(
      'record_event',
      { kind: 'decision', conversation_id: 'c3', text: 'Move storage to the vault', supersedes: [by], sensitivity: 'high' },
      alice,
    )) as { eventId: string }
    expect(await memory.events.supersededBy([by], { tenantId: 't1' })).toEqual({ [by]: secret })
    expect(await memory.events.supersededBy([by], { tenantId: 't1', channel: 'public' })).toEqual({})
    // Another user's decision replaces nothing of Alice's: her ledger keeps it.
    const bob = { tenantId: 't1', userId: 'bob' }
    const mine = (await memory.callTool('record_event', { kind: 'decision', conversation_id: 'c4', text: 'We deploy on Tuesdays' }, alice)) as { eventId: string }
    await memory.callTool('record_event', { kind: 'decision', conversation_id: 'c5', text: 'Deploy on Fridays instead', supersedes: [mine.eventId] }, bob)
    const tuesdays = (await memory.callTool('query_decisions', { query: 'deploy Tuesdays' }, alice)) as { decisions: { id: string; status: string }[] }
    expect(tuesdays.decisions.find((d) => d.id === mine.eventId)).toMatchObject({ status: 'active' })
    expect(await memory.events.supersededBy([mine.eventId], { tenantId: 't1', userId: 'alice' })).toEqual({})
    expect(await memory.callTool('query_decisions', { query: 'storage' }, { tenantId: 't2' })).toEqual({ decisions: [] })
    expect((await errorOf(memory.callTool('query_decisions', { query: '' }, alice))).code).toBe('INVALID_INPUT')
    // A host without search or artifacts cannot run them.
    const host = { remember: memory.remember, recall: memory.recall, memories: memory.memories }
    expect((await errorOf(callTool(host, 'query_decisions', { query: 'x' }))).code).toBe('NOT_SUPPORTED')
    expect((await errorOf(callTool(host, 'get_artifact', { artifact_id: 'art_x' }))).code).toBe('NOT_SUPPORTED')
  })

  it('the memory guidelines name every memory tool and every category', () => {
    for (const tool of ['save_memory', 'recall_memories', 'manage_memory', 'record_turn'])
      expect(MEMORY_GUIDELINES).toContain(tool)
    for (const c of [
      'preference',
      'pattern',
      'correction',
      'fact',
      'instruction',
      'convention',
      'decision',
      'constraint',
      'procedure',
    ]) {
      expect(MEMORY_GUIDELINES).toContain(c)
    }
    expect(MEMORY_GUIDELINES).toMatch(/Never save/)
  })

  it('record_event writes a real event in the caller\'s scope', async () => {
    await using memory = await openTestMemory()
    const result = (await memory.callTool(
      'record_event',
      { kind: 'decision', conversation_id: 'c9', text: 'Use PGlite for storage', tags: ['db'] },
      { userId: 'alice', agentId: 'coder' },
    )) as { eventId: string }
    const event = await memory.events.get(result.eventId)
    expect(event).toMatchObject({
      kind: 'decision',
      scope: { conversationId: 'c9', userId: 'alice', agentId: 'coder', tenantId: 'default' },
      actor: { type: 'agent', id: 'coder' },
      content: { text: 'Use PGlite for storage' },
      tags: ['db'],
    })
  })

  it('record_turn records a whole exchange in the caller\'s scope: the files read or written become versions, a tool\'s output its events', async () => {
    await using memory = await openTestMemory({ workspace: { mode: 'local', root: '/repo' } })
    const alice = { userId: 'alice', agentId: 'coder' }
    type Turn = { turn_index: number; user_event_id: string; reply_event_id: string; procedures: Record<string, unknown>[] }
    const first = (await memory.callTool(
      'record_turn',
      {
        conversation_id: 'c1',
        user: 'why does the parser fail on dates?',
        agent: 'It reads dates as MM/DD; I switched it to ISO.',
        procedures: [
          {
            tool: 'read_file',
            args: { path: 'src/parse.ts' },
            document: { path: '/repo/src/parse.ts', content: 'parse(mmdd)', effect: 'read' },
          },
          { tool: 'run_tests', args: { filter: 'parse' }, output: '3 passed' },
          { tool: 'edit_file', document: { path: '/repo/src/parse.ts', content: 'parse(iso)', effect: 'write' } },
        ],
        tags: ['topic:dates'],
      },
      alice,
    )) as Turn
    expect(first).toMatchObject({
      turn_index: 0,
      procedures: [
        { tool: 'read_file', document: 'src/parse.ts', version: 1, version_created: true },
        { tool: 'run_tests', tool_call_event_id: expect.any(String), tool_result_event_id: expect.any(String) },
        { tool: 'edit_file', document: 'src/parse.ts', version: 2, version_created: true },
      ],
    })
    expect(await memory.events.get(first.user_event_id)).toMatchObject({
      kind: 'message',
      scope: { conversationId: 'c1', userId: 'alice', agentId: 'coder' },
      actor: { type: 'human' },
      content: { text: 'why does the parser fail on dates?' },
      tags: ['topic:dates'],
    })
    expect(await memory.events.get(first.reply_event_id)).toMatchObject({ actor: { type: 'agent', id: 'coder' } })
    const output = first.procedures[1]?.tool_result_event_id as string
    expect((await memory.events.get(output)).content).toMatchObject({ tool: 'run_tests', excerptText: '3 passed', truncated: false })

    // The names record_turn took before (reply, a procedure's flat path and content) still work,
    // but not beside the new ones.
    await expect(
      memory.callTool('record_turn', { conversation_id: 'c1', user: 'u', agent: 'a', reply: 'a' }, alice),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    // The next turn reads the file again, as it is now: the first turn's read is two versions behind.
    const second = (await memory.callTool(
      'record_turn',
      {
        conversation_id: 'c1',
        user: 'and now?',
        reply: 'ISO everywhere.',
        procedures: [{ tool: 'read_file', path: '/repo/src/parse.ts', content: 'parse(iso)', effect: 'read' }],
      },
      alice,
    )) as Turn
    expect(second).toMatchObject({ turn_index: 1, procedures: [{ document: 'src/parse.ts', version: 2, version_created: false }] })
    const [view] = await memory.turns([first.user_event_id])
    expect(view?.procedures.map((p) => [p.tool, p.version, p.latestVersion])).toEqual([
      ['read_file', 1, 2],
      ['run_tests', null, null],
      ['edit_file', 2, 2],
    ])

    const before = (await memory.stats()).counts
    for (const bad of [
      { conversation_id: 'c1', user: 'x' },
      { conversation_id: 'c1', user: 'x', reply: 'y', procedures: [{ tool: 'read', path: 'a', url: 'https://x.dev', effect: 'read' }] },
      { conversation_id: 'c1', user: 'x', reply: 'y', procedures: [{ tool: 'read', path: 'a' }] },
      { conversation_id: 'c1', user: 'x', reply: 'y', procedures: [{ tool: 'read', path: 'a', effect: 'read', output: 'z' }] },
      { conversation_id: 'c1', user: 'x', reply: 'y', procedures: [{ tool: 'read', content: 'z' }] },
      { conversation_id: 'c1', user: 'x', reply: 'y', procedures: [{ tool: 'MESSAGE', output: 'z' }] },
      { conversation_id: 'c1', user: 'x', reply: 'y', procedures: Array.from({ length: 1000 }, () => ({ tool: 't' })) },
      { conversation_id: 'c1', user: 'x', reply: 'y', extra: 1 },
    ]) {
      expect((await errorOf(memory.callTool('record_turn', bad, alice))).code, JSON.stringify(bad).slice(0, 80)).toBe('INVALID_INPUT')
    }
    // A refused turn leaves nothing, even when its first procedures were fine.
    expect((await memory.stats()).counts).toEqual(before)
    // A host without recordTurn cannot run it.
    const host = { remember: memory.remember, recall: memory.recall, memories: memory.memories }
    expect((await errorOf(callTool(host, 'record_turn', { conversation_id: 'c', user: 'x', reply: 'y' }))).code).toBe('NOT_SUPPORTED')
  })

  it('record_event records tool calls and results, task updates and superseding decisions in the shapes the engine reads', async () => {
    await using memory = await openTestMemory()
    const alice = { userId: 'alice', agentId: 'coder' }
    const rec = async (args: Record<string, unknown>) =>
      ((await memory.callTool('record_event', { conversation_id: 'c1', ...args }, alice)) as { eventId: string; artifactId?: string })

    const call = await rec({ kind: 'tool_call', tool: 'grep', tool_args: { pattern: 'invoice', path: 'src' } })
    expect((await memory.events.get(call.eventId))?.content).toEqual({ tool: 'grep', args: { pattern: 'invoice', path: 'src' } })
    const log = `${Array.from({ length: 3000 }, (_, n) => `src/file${n}.ts: invoice`).join('\n')}\n`
    const result = await rec({ kind: 'tool_result', tool: 'grep', text: log, refs: [call.eventId] })
    expect(result.artifactId).toBeDefined()
    expect(await memory.callTool('get_artifact', { artifact_id: result.artifactId }, alice)).toMatchObject({ content: log })
    const hits = await memory.search('grep invoice', { kinds: ['tool_call', 'tool_result'] })
    expect(hits.map((h) => h.eventId).sort()).toEqual([call.eventId, result.eventId].sort())

    await rec({ kind: 'task_update', task_id: 'T-1', status: 'in_progress', text: 'port the invoice parser' })
    await rec({ kind: 'task_update', task_id: 'T-2', text: 'write the changelog' })
    const old = await rec({ kind: 'decision', text: 'parse invoices with a regex' })
    await rec({
      kind: 'decision',
      text: 'parse invoices with the csv library',
      supersedes: [old.eventId],
      rationale: 'quoted fields broke the regex',
      alternatives: ['a hand-written parser', 'keep the regex'],
    })
    const sectionText = async (name: string) => {
      const b = (await memory.callTool('build_context', { query: 'invoice parser', conversation_id: 'c1' }, alice)) as ContextBundle
      return b.sections.find((x) => x.name === name)?.items.map((i) => i.text)
    }
    expect(await sectionText('task_state')).toEqual(['- [open] T-2: write the changelog', '- [in_progress] T-1: port the invoice parser'])
    expect((await sectionText('decision_ledger'))?.map((t) => t.replace(/ \(\d{4}.*$/, ''))).toEqual([
      '- parse invoices with the csv library — because quoted fields broke the regex; not: a hand-written parser, keep the regex',
    ])
    await rec({ kind: 'task_update', task_id: 'T-1', status: 'done', text: 'parser ported' })
    expect(await sectionText('task_state')).toEqual(['- [open] T-2: write the changelog'])

    // A decision's limits, consequences and evidence: in the ledger, and in query_decisions.
    const why = await rec({ kind: 'decision', text: 'cache parsed invoices per supplier', refs: [result.eventId, call.eventId],
      constraints: ['no network access'], consequences: ['a cold start parses again', 'the cache is per tab'], rationale: 'parsing dominates' })
    const ledger = (await memory.callTool('build_context', { query: 'cache parsed invoices', conversation_id: 'c1' }, alice)) as ContextBundle
    const item = ledger.sections.find((x) => x.name === 'decision_ledger')?.items.find((i) => i.id === why.eventId)
    expect(item?.text.replace(/ \(\d{4}.*$/, '')).toBe(
      '- cache parsed invoices per supplier — because parsing dominates; within: no network access; so: a cold start parses again; the cache is per tab',
    )
    expect(item?.source).toMatchObject({ eventId: why.eventId, refs: [result.eventId, call.eventId] })
    const asked = (await memory.callTool('query_decisions', { query: 'cache parsed invoices' }, alice)) as { decisions: Record<string, unknown>[] }
    expect(asked.decisions.find((d) => d.id === why.eventId)).toMatchObject({
      rationale: 'parsing dominates',
      constraints: ['no network access'],
      consequences: ['a cold start parses again', 'the cache is per tab'],
      refs: [result.eventId, call.eventId],
      status: 'active',
    })
    expect(asked.decisions.find((d) => d.text === 'parse invoices with the csv library')).toMatchObject({
      rationale: 'quoted fields broke the regex',
      alternatives: ['a hand-written parser', 'keep the regex'],
    })

    for (const bad of [
      { kind: 'tool_call' },
      { kind: 'tool_result', text: 'no tool named' },
      { kind: 'message' },
      { kind: 'message', text: 'hi', tool: 'grep' },
      { kind: 'decision', text: 'x', status: 'done' },
      { kind: 'task_update', text: 'x', supersedes: ['evt_1'] },
      { kind: 'message', text: 'x', rationale: 'because' },
      { kind: 'task_update', text: 'x', status: 'finished' },
      { kind: 'tool_result', tool: 'grep', text: 'x', tool_args: {} },
      { kind: 'task_update', text: 'no id' },
      { kind: 'message', text: 'x', to: 'reviewer' },
      { kind: 'decision', text: 'x', to: 'reviewer', tags: ['handoff'] },
      { kind: 'message', text: 'x', path: 'a.ts' },
      { kind: 'tool_result', tool: 'read_file', text: 'x', line_range: [5, 2] },
      { kind: 'message', text: 'x', constraints: ['y'] },
    ]) {
      expect((await errorOf(rec(bad))).code, JSON.stringify(bad)).toBe('INVALID_INPUT')
    }
  })

  it('record_event keeps a file read\'s path and lines, and hands a note to one agent; build_context records the intent', async () => {
    await using memory = await openTestMemory()
    const coder = { userId: 'alice', agentId: 'coder' }
    const read = (await memory.callTool(
      'record_event',
      { kind: 'tool_result', conversation_id: 'c1', tool: 'read_file', text: 'line a\nline b\nline c\n', path: '/repo/src/parse.ts', line_range: [120, 122] },
      coder,
    )) as { eventId: string }
    expect((await memory.events.get(read.eventId)).content).toMatchObject({ tool: 'read_file', path: '/repo/src/parse.ts', lineRange: [120, 122] })

    const note = (await memory.callTool(
      'record_event',
      { kind: 'message', conversation_id: 'c1', text: 'Parser half done; dates left.', tags: ['handoff'], to: 'reviewer' },
      coder,
    )) as { eventId: string }
    const handoffs = async (agentId: string) => {
      const bundle = (await memory.callTool('build_context', { query: 'what next', intent: 'pick up the parser work' }, { userId: 'alice', agentId })) as ContextBundle
      return { ids: bundle.sections.find((x) => x.name === 'handoff_packet')?.items.map((i) => i.id), intent: bundle.provenance.intent }
    }
    expect(await handoffs('reviewer')).toEqual({ ids: [note.eventId], intent: 'pick up the parser work' })
    expect((await handoffs('tester')).ids).toEqual([])
  })
})
