import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { type LLM, openAICompatibleLLM, parseModelJson } from '../../src/adapters/mem0/llm.ts'
import { FACT_EXTRACTION_PROMPT, GRAPH_EXTRACTION_PROMPT, Memory, UPDATE_DECISION_PROMPT } from '../../src/adapters/mem0/facade.ts'
import { memoryHash } from '../../src/core/memories/memories.ts'
import { steppingClock } from '../support/clock.ts'
import { atSimilarity, createTestEmbedder, type TestEmbedderOptions } from '../support/embedder.ts'
import { openTestMemory } from '../support/memory.ts'

/**
 * A model that follows a script: `facts` maps a conversation (by substring) to the facts it
 * yields; `decide` answers an update decision from the new fact and the listed memories.
 */
function scriptedLLM(script: {
  facts: Record<string, string[]>
  decide?: (fact: string, existing: { id: string; text: string }[]) => unknown[]
}): LLM & { calls: { system: string; user: string }[] } {
  const calls: { system: string; user: string }[] = []
  return {
    calls,
    async generate(system, user) {
      calls.push({ system, user })
      if (user.startsWith('New fact: ')) {
        const fact = (/^New fact: (.*)$/m.exec(user)?.[1] ?? '').trim()
        const existing = [...user.matchAll(/^- ID: (\S+), Text: (.*)$/gm)].map((m) => ({
          id: m[1] as string,
          text: m[2] as string,
        }))
        const ops = script.decide ? script.decide(fact, existing) : [{ event: 'ADD', data: fact }]
        return `Here you go:\n\`\`\`json\n${JSON.stringify({ operations: ops })}\n\`\`\`\nDone.`
      }
      const hit = Object.entries(script.facts).find(([key]) => user.includes(key))
      return JSON.stringify({ facts: hit ? hit[1] : [] })
    },
  }
}

async function open(options: { llm?: LLM; embedder?: TestEmbedderOptions } = {}) {
  const memory = await openTestMemory({
    embedder: createTestEmbedder(options.embedder),
    now: steppingClock(),
  })
  const mem = new Memory(memory, options.llm ? { llm: options.llm } : {})
  return Object.assign(mem, { engine: memory, [Symbol.asyncDispose]: () => memory.close() })
}

async function errorOf(p: Promise<unknown>): Promise<MemoryError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!MemoryError.is(err)) throw new Error(`expected a MemoryError, got ${String(err)}`)
  return err
}

describe('mem0-compatible Memory: CRUD', () => {
  it('adding a single fact extracts it and returns one ADD event', async () => {
    const llm = scriptedLLM({ facts: { 'My name is Bob': ["User's name is Bob"] } })
    await using mem = await open({ llm })
    const { results } = await mem.add('My name is Bob', { userId: 'bob' })
    expect(results).toEqual([
      {
        id: expect.stringMatching(/^mem_/),
        event: 'ADD',
        memory: "User's name is Bob",
        new_memory: "User's name is Bob",
      },
    ])
    expect(llm.calls[0]?.system).toBe(FACT_EXTRACTION_PROMPT)
    expect(llm.calls[0]?.user).toBe('user: My name is Bob')
  })

  it('adding a conversation extracts several facts, one ADD each', async () => {
    const llm = scriptedLLM({
      facts: { 'Acme Corp': ["User's name is Alice", 'User works at Acme Corp', 'User prefers PyTorch'] },
    })
    await using mem = await open({ llm })
    const { results } = await mem.add(
      [
        { role: 'user', content: "Hi, I'm Alice. I work at Acme Corp." },
        { role: 'assistant', content: 'Nice to meet you!' },
        { role: 'user', content: 'I prefer PyTorch over TensorFlow.' },
      ],
      { userId: 'alice' },
    )
    expect(results.map((r) => [r.event, r.memory])).toEqual([
      ['ADD', "User's name is Alice"],
      ['ADD', 'User works at Acme Corp'],
      ['ADD', 'User prefers PyTorch'],
    ])
    expect(llm.calls[0]?.user).toBe(
      "user: Hi, I'm Alice. I work at Acme Corp.\nassistant: Nice to meet you!\nuser: I prefer PyTorch over TensorFlow.",
    )
    expect((await mem.getAll({ userId: 'alice' })).results).toHaveLength(3)
  })

  it('a message with nothing worth remembering adds nothing', async () => {
    await using mem = await open({ llm: scriptedLLM({ facts: {} }) })
    expect(await mem.add('hello', { userId: 'x' })).toEqual({ results: [] })
    expect((await mem.getAll({ userId: 'x' })).results).toEqual([])
  })

  it('search finds a memory by meaning and carries its score', async () => {
    await using mem = await open({
      embedder: {
        table: { 'User likes Python': atSimilarity(0.8), 'programming languages': atSimilarity(1) },
      },
    })
    await mem.add('User likes Python', { userId: 'alice' })
    await mem.add('User owns a red bicycle', { userId: 'alice' })
    const { results } = await mem.search('programming languages', { userId: 'alice' })
    expect(results[0]?.memory).toBe('User likes Python')
    expect(results[0]?.score).toBeGreaterThan(0)
    const hits = await mem.engine.memories.search('programming languages', { userId: 'alice' })
    expect(hits[0]?.scores.vector).toBeGreaterThan(0.5)
  })

  it('search returns at most `limit` results', async () => {
    await using mem = await open()
    for (const t of ['tea one', 'tea two', 'tea three', 'tea four', 'tea five'])
      await mem.add(t, { userId: 'u' })
    expect((await mem.search('tea', { userId: 'u', limit: 3 })).results).toHaveLength(3)
    expect((await mem.search('tea', { userId: 'u' })).results).toHaveLength(5)
  })

  it('search leaves out results scored below `threshold`', async () => {
    await using mem = await open({
      embedder: {
        table: {
          'User likes Python': atSimilarity(0.9),
          'User likes Rust': atSimilarity(0.6),
          'User owns a red bicycle': atSimilarity(0.1),
          'programming languages': atSimilarity(1),
        },
      },
    })
    for (const text of ['User likes Python', 'User likes Rust', 'User owns a red bicycle']) await mem.add(text, { userId: 'alice' })
    const all = (await mem.search('programming languages', { userId: 'alice' })).results
    expect(all).toHaveLength(3)
    const scores = all.map((r) => r.score as number)
    // Between the first and the second score: only the first is left.
    const cut = ((scores[0] as number) + (scores[1] as number)) / 2
    expect(scores[0]).toBeGreaterThan(scores[1] as number)
    const kept = (await mem.search('programming languages', { userId: 'alice', threshold: cut })).results
    expect(kept.map((r) => r.memory)).toEqual(['User likes Python'])
    expect((await mem.search('programming languages', { userId: 'alice', threshold: 0 })).results).toEqual(all)
    for (const threshold of [-0.1, 1.5, Number.NaN]) {
      await expect(mem.search('programming languages', { userId: 'alice', threshold })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
  })

  it('get returns the stored item in mem0 shape, and null for an unknown id', async () => {
    await using mem = await open()
    const { results } = await mem.add('I prefer dark mode', { userId: 'alice', metadata: { tag: 'ui' } })
    const id = results[0]?.id as string
    const item = await mem.get(id)
    expect(item).toEqual({
      id,
      memory: 'I prefer dark mode',
      hash: memoryHash('I prefer dark mode'),
      metadata: { tag: 'ui' },
      created_at: '2025-03-01T10:00:01.000Z',
      updated_at: '2025-03-01T10:00:01.000Z',
      user_id: 'alice',
    })
    expect(await mem.get('fake-id')).toBeNull()
  })

  it('getAll returns every memory of the scope', async () => {
    await using mem = await open()
    for (const t of ['likes tea', 'lives in Oslo', 'plays chess']) await mem.add(t, { userId: 'alice' })
    await mem.add('likes coffee', { userId: 'bob' })
    const all = (await mem.getAll({ userId: 'alice' })).results
    expect(all.map((m) => m.memory).sort()).toEqual(['likes tea', 'lives in Oslo', 'plays chess'])
  })

  it('update overwrites the text and the hash', async () => {
    await using mem = await open()
    const id = (await mem.add('old text', { userId: 'u' })).results[0]?.id as string
    await mem.update(id, 'new text')
    const item = await mem.get(id)
    expect(item?.memory).toBe('new text')
    expect(item?.hash).toBe(memoryHash('new text'))
    expect(item?.updated_at).not.toBe(item?.created_at)
  })

  it('delete removes a memory and deleteAll empties a scope', async () => {
    await using mem = await open()
    const id = (await mem.add('to delete', { userId: 'alice' })).results[0]?.id as string
    await mem.add('keep one', { userId: 'alice' })
    await mem.add('keep bob', { userId: 'bob' })
    await mem.delete(id)
    expect(await mem.get(id)).toBeNull()
    expect((await errorOf(mem.delete(id))).code).toBe('NOT_FOUND')
    await mem.deleteAll({ userId: 'alice' })
    expect((await mem.getAll({ userId: 'alice' })).results).toEqual([])
    expect((await mem.getAll({ userId: 'bob' })).results).toHaveLength(1)
  })

  it('reset clears every memory and all history', async () => {
    await using mem = await open()
    const id = (await mem.add('something', { userId: 'alice' })).results[0]?.id as string
    await mem.add('else', { agentId: 'helper' })
    await mem.reset()
    expect((await mem.getAll({ userId: 'alice' })).results).toEqual([])
    expect((await mem.getAll({ agentId: 'helper' })).results).toEqual([])
    expect(await mem.history(id)).toEqual([])
    expect(await mem.engine.memories.list({ status: 'any' })).toEqual([])
  })
})

describe('mem0-compatible Memory: without a model', () => {
  it('an ADD or UPDATE event tells the memory as stored: a secret said is replaced there too', async () => {
    await using mem = await open()
    const key = 'sk-proj-Xk3f9QzL7mB2vN8pR4tY6wE1aS5dF0gHq7Jc'
    const { results } = await mem.add(`My OpenAI key is ${key} and I like jazz`, { userId: 'w', metadata: { note: `key ${key}` } })
    const [stored] = (await mem.getAll({ userId: 'w' })).results
    expect(stored?.memory).toContain('[REDACTED:')
    expect(results).toEqual([{ id: stored?.id, event: 'ADD', memory: stored?.memory, new_memory: stored?.memory, metadata: stored?.metadata }])
    expect(JSON.stringify(results)).not.toContain(key)
  })

  it('stores each user message, skips assistant and system messages, and dedups', async () => {
    await using mem = await open()
    const { results } = await mem.add(
      [
        { role: 'system', content: 'be nice' },
        { role: 'user', content: 'I use Neovim' },
        { role: 'assistant', content: 'Noted.' },
        { role: 'user', content: 'My shell is fish' },
      ],
      { userId: 'u' },
    )
    expect(results.map((r) => [r.event, r.memory])).toEqual([
      ['ADD', 'I use Neovim'],
      ['ADD', 'My shell is fish'],
    ])
    const again = await mem.add('i use   neovim', { userId: 'u' })
    expect(again.results).toEqual([{ id: results[0]?.id, event: 'NONE', memory: 'I use Neovim' }])
    // Each agent and run of the user is a scope of its own, with its own copy.
    const agent = await mem.add('I use Neovim', { userId: 'u', agentId: 'helper' })
    expect(agent.results[0]?.event).toBe('ADD')
    expect((await mem.add('I use Neovim', { userId: 'u', runId: 'r1' })).results[0]?.event).toBe('ADD')
    expect((await mem.getAll({ userId: 'u', agentId: 'helper' })).results.map((r) => r.id)).toEqual([agent.results[0]?.id])
  })

  it('a near duplicate replaces the old memory and says so', async () => {
    await using mem = await open({
      embedder: {
        table: { 'I live in NYC': atSimilarity(1), 'I live in NYC, Brooklyn': atSimilarity(0.95) },
      },
    })
    const first = (await mem.add('I live in NYC', { userId: 'u' })).results[0]
    const { results } = await mem.add('I live in NYC, Brooklyn', { userId: 'u' })
    expect(results).toEqual([
      {
        id: expect.stringMatching(/^mem_/),
        event: 'UPDATE',
        memory: 'I live in NYC, Brooklyn',
        new_memory: 'I live in NYC, Brooklyn',
        old_memory: 'I live in NYC',
        previous_id: first?.id,
      },
    ])
    expect((await mem.getAll({ userId: 'u' })).results.map((m) => m.memory)).toEqual([
      'I live in NYC, Brooklyn',
    ])
    // The replaced memory is no longer one to read; its history says what replaced it.
    expect(await mem.get(first?.id as string)).toBeNull()
    expect((await mem.get(results[0]?.id as string))?.memory).toBe('I live in NYC, Brooklyn')
    expect((await mem.history(first?.id as string)).map((h) => h.event)).toEqual(['ADD', 'UPDATE'])
    // Nor one to change: update and delete find it no more than get does, and write nothing.
    expect((await errorOf(mem.update(first?.id as string, 'I live in Boston'))).code).toBe('NOT_FOUND')
    expect((await errorOf(mem.delete(first?.id as string))).code).toBe('NOT_FOUND')
    expect((await mem.history(first?.id as string)).map((h) => h.event)).toEqual(['ADD', 'UPDATE'])
  })
})

describe('mem0-compatible Memory: update decisions by the model', () => {
  const decideByText =
    (rules: Record<string, (existing: { id: string; text: string }[]) => unknown[]>) =>
    (fact: string, existing: { id: string; text: string }[]) =>
      rules[fact]?.(existing) ?? [{ event: 'ADD', data: fact }]

  it('adding the same fact twice yields NONE the second time', async () => {
    const llm = scriptedLLM({
      facts: { Python: ['User likes Python'] },
      decide: (fact, existing) =>
        existing.some((e) => e.text === fact) ? [{ event: 'NONE' }] : [{ event: 'ADD', data: fact }],
    })
    await using mem = await open({ llm })
    const first = await mem.add('I like Python', { userId: 'u' })
    const second = await mem.add('I really like Python', { userId: 'u' })
    expect(first.results.map((r) => r.event)).toEqual(['ADD'])
    expect(second.results).toEqual([{ id: first.results[0]?.id, event: 'NONE', memory: 'User likes Python' }])
    expect((await mem.getAll({ userId: 'u' })).results).toHaveLength(1)
  })

  it('a contradicting fact updates the memory in place (NYC → San Francisco)', async () => {
    const llm = scriptedLLM({
      facts: { NYC: ['User lives in NYC'], 'San Francisco': ['User moved to San Francisco'] },
      decide: decideByText({
        'User moved to San Francisco': (ex) => [
          {
            event: 'UPDATE',
            id: ex.find((e) => e.text.includes('NYC'))?.id,
            data: 'User lives in San Francisco',
          },
        ],
      }),
    })
    await using mem = await open({ llm })
    const id = (await mem.add('I live in NYC', { userId: 'u' })).results[0]?.id as string
    const { results } = await mem.add('I just moved to San Francisco', { userId: 'u' })
    expect(results).toEqual([
      {
        id,
        event: 'UPDATE',
        memory: 'User lives in San Francisco',
        old_memory: 'User lives in NYC',
        new_memory: 'User lives in San Francisco',
      },
    ])
    expect((await mem.get(id))?.memory).toBe('User lives in San Francisco')
    expect((await mem.history(id)).map((h) => h.event)).toEqual(['ADD', 'UPDATE'])
  })

  it('a refinement merges into the existing memory', async () => {
    const llm = scriptedLLM({
      facts: { tech: ['User works in tech'], Google: ['User works at Google as a senior engineer'] },
      decide: decideByText({
        'User works at Google as a senior engineer': (ex) => [
          { event: 'UPDATE', id: ex[0]?.id, data: 'User works in tech, at Google as a senior engineer' },
        ],
      }),
    })
    await using mem = await open({ llm })
    const id = (await mem.add('I work in tech', { userId: 'u' })).results[0]?.id as string
    await mem.add('I am a senior engineer at Google', { userId: 'u' })
    expect((await mem.getAll({ userId: 'u' })).results.map((m) => [m.id, m.memory])).toEqual([
      [id, 'User works in tech, at Google as a senior engineer'],
    ])
  })

  it('filters on add narrow the existing memories the model decides against', async () => {
    const llm = scriptedLLM({ facts: { Python: ['User likes Python'] } })
    await using mem = await open({ llm })
    await mem.add('I like Python', { userId: 'u', metadata: { tag: 'work' }, infer: false })
    const listed = (user: string) => [...user.matchAll(/^- ID: \S+, Text: (.*)$/gm)].map((m) => m[1])
    // Every memory of the scope may be listed to the model without filters …
    await mem.add('Python again', { userId: 'u' })
    expect(listed(llm.calls.at(-1)!.user)).toContain('I like Python')
    // … and only the selected ones with them.
    await mem.add('More Python', { userId: 'u', filters: { field: 'tag', operator: 'eq', value: 'personal' } })
    expect(listed(llm.calls.at(-1)!.user)).not.toContain('I like Python')
    expect(llm.calls.at(-1)!.user).toContain('No existing memories found.')
    const invalid = await errorOf(mem.add('Python', { userId: 'u', filters: { field: 'tag', operator: 'nope', value: 1 } }))
    expect(invalid.code).toBe('INVALID_FILTER')
  })

  it('a negation deletes the memory it invalidates', async () => {
    const llm = scriptedLLM({
      facts: { vegetarian: ['User is vegetarian'], meat: ['User eats meat again'] },
      decide: decideByText({ 'User eats meat again': (ex) => [{ event: 'DELETE', id: ex[0]?.id }] }),
    })
    await using mem = await open({ llm })
    const id = (await mem.add('I am vegetarian', { userId: 'u' })).results[0]?.id as string
    const { results } = await mem.add('I started eating meat again', { userId: 'u' })
    expect(results).toEqual([
      { id, event: 'DELETE', memory: 'User is vegetarian', old_memory: 'User is vegetarian' },
    ])
    expect(await mem.get(id)).toBeNull()
    const history = await mem.history(id)
    expect(history.at(-1)).toMatchObject({
      event: 'DELETE',
      is_deleted: true,
      old_value: 'User is vegetarian',
    })
  })

  it('one conversation can produce an ADD and an UPDATE together', async () => {
    const llm = scriptedLLM({
      facts: { Oslo: ['User lives in Oslo'], Bergen: ['User moved to Bergen', 'User has a dog'] },
      decide: decideByText({
        'User moved to Bergen': (ex) => [{ event: 'UPDATE', id: ex[0]?.id, data: 'User lives in Bergen' }],
      }),
    })
    await using mem = await open({ llm })
    await mem.add('I live in Oslo', { userId: 'u' })
    const { results } = await mem.add('I moved to Bergen with my dog', { userId: 'u' })
    expect(results.map((r) => [r.event, r.memory])).toEqual([
      ['UPDATE', 'User lives in Bergen'],
      ['ADD', 'User has a dog'],
    ])
  })

  it('ids the model makes up are ignored', async () => {
    const llm = scriptedLLM({
      facts: { x: ['User likes x'] },
      decide: () => [
        { event: 'DELETE', id: 'mem_not_listed' },
        { event: 'UPDATE', id: '7', data: 'nope' },
      ],
    })
    await using mem = await open({ llm })
    await mem.engine.remember({ content: 'User likes y', category: 'fact', userId: 'u' })
    expect((await mem.add('x', { userId: 'u' })).results).toEqual([])
    expect((await mem.getAll({ userId: 'u' })).results.map((m) => m.memory)).toEqual(['User likes y'])
  })

  it('a custom extraction prompt replaces the default one', async () => {
    const llm = scriptedLLM({ facts: { cat: ['User has a cat'] } })
    await using mem = await open({ llm })
    await mem.add('I have a cat', { userId: 'u', prompt: 'Extract only facts about pets.' })
    expect(llm.calls[0]?.system).toBe('Extract only facts about pets.')
  })

  it('custom prompts given to the constructor replace the extraction and the update-decision prompts', async () => {
    const llm = scriptedLLM({ facts: { dog: ['User has a dog'] } })
    await using memory = await openTestMemory({ embedder: createTestEmbedder(), now: steppingClock() })
    const prompts = { factExtraction: 'Extract only facts about pets.', updateDecision: 'Decide, keeping every pet.' }
    const custom = new Memory(memory, { llm, prompts })
    const added = await custom.add('I have a dog', { userId: 'u' })
    expect(added.results.map((r) => r.memory)).toEqual(['User has a dog'])
    expect(llm.calls.map((c) => c.system)).toEqual([prompts.factExtraction, prompts.updateDecision])
    // A per-call prompt still wins over the constructor's for extraction; the defaults apply without either.
    await custom.add('I have a dog', { userId: 'v', prompt: 'Only dogs.' })
    expect(llm.calls[2]?.system).toBe('Only dogs.')
    const plain = new Memory(memory, { llm })
    await plain.add('I have a dog', { userId: 'w' })
    expect(llm.calls.slice(-2).map((c) => c.system)).toEqual([FACT_EXTRACTION_PROMPT, UPDATE_DECISION_PROMPT])
  })

  it('infer: false stores the message as it is even with a model', async () => {
    const llm = scriptedLLM({ facts: {} })
    await using mem = await open({ llm })
    const { results } = await mem.add('Raw note', { userId: 'u', infer: false })
    expect(results.map((r) => [r.event, r.memory])).toEqual([['ADD', 'Raw note']])
    expect(llm.calls).toEqual([])
  })

  it('a message too long to store leaves none of the call stored', async () => {
    await using mem = await open()
    const messages = [
      { role: 'user' as const, content: 'I live in Lisbon' },
      { role: 'user' as const, content: 'x'.repeat(20_001) },
    ]
    const error = await errorOf(mem.add(messages, { userId: 'u' }))
    expect(error.code).toBe('INVALID_INPUT')
    expect(error.message).toContain('message 1')
    expect((await mem.getAll({ userId: 'u' })).results).toEqual([])
  })
})

describe('mem0-compatible Memory: expiration', () => {
  it('expirationDate marks what add stores; past it, a memory leaves search and getAll but get still reads it', async () => {
    const llm = scriptedLLM({ facts: { 'on call': ['User is on call this week'] } })
    await using mem = await open({ llm })
    const lasting = await mem.add('I am on call this week', { userId: 'u', expirationDate: '2030-01-01T00:00:00Z' })
    const item = await mem.get(lasting.results[0]?.id as string)
    expect(item?.expiration_date).toBe('2030-01-01T00:00:00.000Z')
    // Already past (the test clock is in 2025): stored, but expired at once.
    const stale = await mem.add('Raw note about the old sprint', { userId: 'u', infer: false, expirationDate: new Date('2025-01-01T00:00:00Z') })
    const staleId = stale.results[0]?.id as string
    expect((await mem.getAll({ userId: 'u' })).results.map((r) => r.memory)).toEqual(['User is on call this week'])
    expect((await mem.search('old sprint', { userId: 'u' })).results.map((r) => r.id)).not.toContain(staleId)
    expect((await mem.get(staleId))?.expiration_date).toBe('2025-01-01T00:00:00.000Z')
    expect((await errorOf(mem.add('x', { userId: 'u', expirationDate: 'tomorrow' }))).code).toBe('INVALID_INPUT')
  })
})

describe('mem0-compatible Memory: scoping', () => {
  it("alice's memories are not found when searching as bob", async () => {
    await using mem = await open()
    await mem.add('Alice likes jazz', { userId: 'alice' })
    expect((await mem.search('jazz', { userId: 'bob' })).results).toEqual([])
    expect((await mem.search('jazz', { userId: 'alice' })).results).toHaveLength(1)
  })

  it('several scope fields must all match', async () => {
    await using mem = await open()
    await mem.add('helper memory', { userId: 'alice', agentId: 'helper' })
    await mem.add('plain memory', { userId: 'alice' })
    const both = await mem.getAll({ userId: 'alice', agentId: 'helper' })
    expect(both.results.map((m) => m.memory)).toEqual(['helper memory'])
    expect((await mem.getAll({ userId: 'alice', agentId: 'other' })).results).toEqual([])
    expect((await mem.getAll({ agentId: 'helper' })).results.map((m) => m.memory)).toEqual(['helper memory'])
    expect(both.results[0]).toMatchObject({ user_id: 'alice', agent_id: 'helper' })
  })

  it('every call without userId, agentId or runId fails with SCOPE_REQUIRED', async () => {
    await using mem = await open()
    const message = 'At least one of user_id, agent_id, or run_id must be provided'
    for (const call of [
      () => mem.add('x', {}),
      () => mem.search('x', {}),
      () => mem.getAll({}),
      () => mem.deleteAll({}),
    ]) {
      const err = await errorOf(call())
      expect(err.code).toBe('SCOPE_REQUIRED')
      expect(err.message).toBe(message)
    }
    expect(await mem.engine.memories.list({ status: 'any' })).toEqual([])
  })

  it('runs are isolated from each other', async () => {
    await using mem = await open()
    await mem.add('session fact', { runId: 'session-1' })
    const again = await mem.add('session fact', { runId: 'session-2' })
    expect(again.results[0]?.event).toBe('ADD')
    expect((await mem.getAll({ runId: 'session-1' })).results).toHaveLength(1)
    expect((await mem.getAll({ runId: 'session-2' })).results).toHaveLength(1)
    expect((await mem.search('session', { runId: 'session-3' })).results).toEqual([])
  })
})

describe('mem0-compatible Memory: history', () => {
  it('ADD, UPDATE and DELETE are recorded in order with old and new values', async () => {
    await using mem = await open()
    const id = (await mem.add('v1', { userId: 'alice' })).results[0]?.id as string
    expect((await mem.history(id)).map((h) => h.event)).toEqual(['ADD'])
    await mem.update(id, 'v2')
    await mem.update(id, 'v3')
    await mem.delete(id)
    const history = await mem.history(id)
    expect(history.map((h) => [h.event, h.old_value, h.new_value, h.is_deleted])).toEqual([
      ['ADD', null, 'v1', false],
      ['UPDATE', 'v1', 'v2', false],
      ['UPDATE', 'v2', 'v3', false],
      ['DELETE', 'v3', null, true],
    ])
    const times = history.map((h) => h.timestamp)
    expect([...times].sort()).toEqual(times)
    expect(new Set(times).size).toBe(4)
    expect(history[0]).toMatchObject({ memory_id: id, user_id: 'alice' })
  })
})

describe('mem0-compatible Memory: filters', () => {
  async function seeded() {
    const mem = await open()
    const add = (text: string, metadata: Record<string, unknown>) => mem.add(text, { userId: 'u', metadata })
    await add('User likes Python for ML', { tag: 'work', priority: 1 })
    await add('User likes hiking', { tag: 'personal', priority: 5 })
    await add('User reads about Python history', { tag: 'hobby', priority: 3 })
    return mem
  }
  const texts = async (mem: Memory, filters: unknown) =>
    (await mem.getAll({ userId: 'u', filters })).results.map((m) => m.memory).sort()

  it('eq, in, AND, OR, NOT and contains select the right memories', async () => {
    await using mem = await seeded()
    expect(await texts(mem, { field: 'tag', operator: 'eq', value: 'work' })).toEqual([
      'User likes Python for ML',
    ])
    expect(await texts(mem, { field: 'tag', operator: 'in', value: ['work', 'hobby'] })).toEqual([
      'User likes Python for ML',
      'User reads about Python history',
    ])
    expect(
      await texts(mem, {
        AND: [
          { field: 'memory', operator: 'contains', value: 'Python' },
          { field: 'priority', operator: 'gt', value: 2 },
        ],
      }),
    ).toEqual(['User reads about Python history'])
    expect(
      await texts(mem, {
        OR: [
          { field: 'tag', operator: 'eq', value: 'personal' },
          { field: 'priority', operator: 'lte', value: 1 },
        ],
      }),
    ).toEqual(['User likes Python for ML', 'User likes hiking'])
    expect(await texts(mem, { NOT: { field: 'tag', operator: 'eq', value: 'work' } })).toEqual([
      'User likes hiking',
      'User reads about Python history',
    ])
    expect(await texts(mem, { field: 'memory', operator: 'contains', value: 'Python' })).toHaveLength(2)
    expect(await texts(mem, { field: 'memory', operator: 'contains', value: 'python' })).toEqual([])
    expect(await texts(mem, { field: 'memory', operator: 'icontains', value: 'python' })).toHaveLength(2)
    const found = await mem.search('Python', {
      userId: 'u',
      filters: { field: 'tag', operator: 'eq', value: 'work' },
    })
    expect(found.results.map((m) => m.memory)).toEqual(['User likes Python for ML'])
  })

  it("fields that are not mem0's own are metadata keys, even where the engine has a column of that name", async () => {
    await using mem = await open()
    await mem.add('User likes Python for ML', { userId: 'u', metadata: { category: 'work', source: 'chat' } })
    await mem.add('User likes hiking', { userId: 'u', metadata: { category: 'personal', nested: { level: 2 } } })
    expect(await texts(mem, { field: 'category', operator: 'eq', value: 'work' })).toEqual(['User likes Python for ML'])
    expect(await texts(mem, { field: 'source', operator: 'eq', value: 'chat' })).toEqual(['User likes Python for ML'])
    expect(await texts(mem, { field: 'nested.level', operator: 'eq', value: 2 })).toEqual(['User likes hiking'])
    const found = await mem.search('Python hiking', { userId: 'u', filters: { field: 'category', operator: 'eq', value: 'personal' } })
    expect(found.results.map((m) => m.memory)).toEqual(['User likes hiking'])
    // mem0's own fields are the memory's: its text, its scope and its times.
    expect(await texts(mem, { field: 'memory', operator: 'contains', value: 'hiking' })).toEqual(['User likes hiking'])
    expect(await texts(mem, { field: 'user_id', operator: 'eq', value: 'u' })).toHaveLength(2)
    expect(await texts(mem, { field: 'created_at', operator: 'lt', value: '2000-01-01T00:00:00Z' })).toEqual([])
    expect(await texts(mem, { field: 'expiration_date', operator: 'eq', value: null })).toHaveLength(2)
  })

  it('metadata that is not plain JSON is refused up front, on the model\'s path too', async () => {
    const llm = scriptedLLM({ facts: { moved: ['User moved to Oslo'] } })
    await using mem = await open({ llm })
    for (const metadata of [{ at: new Date() }, { n: 10n }, { s: 'half \uD800' }]) {
      expect((await errorOf(mem.add('I moved to Oslo', { userId: 'a', metadata: metadata }))).code).toBe('INVALID_INPUT')
    }
    expect(llm.calls).toEqual([])
    expect((await mem.add('I moved to Oslo', { userId: 'a', metadata: { at: '2025-01-01' } })).results).toHaveLength(1)
  })

  it('an unknown operator is INVALID_FILTER', async () => {
    await using mem = await seeded()
    const err = await errorOf(
      mem.search('x', { userId: 'u', filters: { field: 'tag', operator: 'like', value: 'w' } }),
    )
    expect(err.code).toBe('INVALID_FILTER')
  })
})

describe('mem0-compatible Memory: failures', () => {
  it('when the model is down, add returns no results and does not throw', async () => {
    const llm: LLM = {
      async generate() {
        throw new MemoryError('LLM_UNAVAILABLE', 'down')
      },
    }
    await using mem = await open({ llm })
    expect(await mem.add('I like tea', { userId: 'u' })).toEqual({ results: [] })
  })

  it('a fact whose embedding fails is skipped and the others are processed', async () => {
    const llm = scriptedLLM({ facts: { three: ['Fact one', 'Fact two breaks', 'Fact three'] } })
    await using mem = await open({ llm, embedder: { failOn: (t) => t.includes('breaks') } })
    const { results } = await mem.add('three facts', { userId: 'u' })
    expect(results.map((r) => r.memory)).toEqual(['Fact one', 'Fact three'])
  })

  it('an answer the decision step cannot read skips only that fact', async () => {
    const llm = scriptedLLM({ facts: { two: ['Good fact', 'Bad fact'] } })
    const generate = llm.generate.bind(llm)
    llm.generate = async (system, user, o) =>
      user.includes('Bad fact') ? 'I refuse' : generate(system, user, o)
    await using mem = await open({ llm })
    expect((await mem.add('two facts', { userId: 'u' })).results.map((r) => r.memory)).toEqual(['Good fact'])
  })
})

describe('mem0-compatible Memory: graph memory', () => {
  const ALICE = 'Alice works at Google as a software engineer'
  const GOOGLE = 'Google is headquartered in Mountain View'
  /** The scripted model, which also answers the graph extraction from `graph` (by substring of the conversation). */
  function graphLLM(graph: Record<string, unknown>): LLM & { calls: { system: string; user: string }[] } {
    const inner = scriptedLLM({ facts: { [ALICE]: [ALICE], [GOOGLE]: [GOOGLE], 'I like tea': ['User likes tea'] } })
    return {
      calls: inner.calls,
      async generate(system, user, options) {
        if (system !== GRAPH_EXTRACTION_PROMPT) return inner.generate(system, user, options)
        inner.calls.push({ system, user })
        const hit = Object.entries(graph).find(([key]) => user.includes(key))
        return typeof hit?.[1] === 'string' ? hit[1] : JSON.stringify(hit?.[1] ?? { entities: [], relations: [] })
      },
    }
  }
  const script = {
    [ALICE]: {
      entities: [
        { name: 'Alice', type: 'person', description: 'a software engineer' },
        { name: 'google', type: 'Organization' },
        { name: 'Software Engineering', type: 'craft' },
      ],
      relations: [
        { source: 'Alice', relation: 'works at', target: 'Google' },
        { source: 'Alice', relation: 'knows', target: 'Bob' },
      ],
    },
    [GOOGLE]: {
      entities: [
        { name: 'Google', type: 'organization' },
        { name: 'Mountain View', type: 'location' },
      ],
      relations: [{ source: 'Google', relation: 'located_in', target: 'Mountain View' }],
    },
    'I like tea': 'not json at all',
  }
  async function openGraph() {
    const memory = await openTestMemory({ embedder: createTestEmbedder(), now: steppingClock() })
    const llm = graphLLM(script)
    const mem = new Memory(memory, { llm, graph: true })
    return Object.assign(mem, { engine: memory, llm, [Symbol.asyncDispose]: () => memory.close() })
  }
  const entities = async (mem: Awaited<ReturnType<typeof openGraph>>, scope?: string) =>
    (await mem.engine.graph.nodes({ type: 'mem0.entity', ...(scope === undefined ? {} : { scope }) })).map((n) => [
      n.payload.name,
      n.payload.entityType,
    ])

  it('entity extraction: after a conversation about Alice at Google the graph holds Alice (person) and Google (organization)', async () => {
    await using mem = await openGraph()
    const added = await mem.add(ALICE, { userId: 'u1' })
    expect(added.results.map((r) => r.event)).toEqual(['ADD'])
    expect(mem.llm.calls.map((c) => c.system)).toContain(GRAPH_EXTRACTION_PROMPT)
    // Names as the model wrote them; a type outside the list is a concept.
    expect(await entities(mem, 'mem0 user=u1')).toEqual([
      ['Alice', 'person'],
      ['google', 'organization'],
      ['Software Engineering', 'concept'],
    ])
    // The same entity said again is the same node.
    await mem.add(GOOGLE, { userId: 'u1' })
    expect((await entities(mem, 'mem0 user=u1')).map(([name]) => name)).toEqual(['Alice', 'Google', 'Mountain View', 'Software Engineering'])
  })

  it('relationship extraction: the graph holds Alice —works_at→ Google', async () => {
    await using mem = await openGraph()
    const added = await mem.add(ALICE, { userId: 'u1' })
    // "works at" as a relation name; Bob was never listed as an entity, so that link is left out.
    expect(added.relations).toEqual([{ source: 'Alice', relationship: 'works_at', destination: 'google' }])
    const links = await mem.engine.graph.neighbors('mem0 user=u1/alice')
    expect(links.map((l) => [l.rel, l.neighbor, l.neighborType])).toEqual([['mem0.works_at', 'mem0 user=u1/google', 'mem0.entity']])
    // getAll lists the scope's links beside its memories, each once; another scope has none.
    await mem.add(GOOGLE, { userId: 'u1' })
    const all = await mem.getAll({ userId: 'u1' })
    expect(all.results).toHaveLength(2)
    expect(all.relations).toEqual(
      expect.arrayContaining([
        { source: 'Alice', relationship: 'works_at', destination: 'Google' },
        { source: 'Google', relationship: 'located_in', destination: 'Mountain View' },
      ]),
    )
    expect(all.relations).toHaveLength(2)
    expect((await mem.getAll({ userId: 'u2' })).relations).toEqual([])
    expect((await new Memory(mem.engine).getAll({ userId: 'u1' })).relations).toBeUndefined()
  })

  it('graph-enhanced search: a query naming an entity also returns its links and the memories of the entities it links to', async () => {
    await using mem = await openGraph()
    await mem.add(ALICE, { userId: 'u1' })
    await mem.add(GOOGLE, { userId: 'u1' })
    await mem.add('I like tea', { userId: 'u1' })
    // Stored without the model, so with no entities of its own.
    await mem.engine.remember({ content: 'Alice does pottery on weekends', category: 'fact', userId: 'u1', dedupScope: 'identity' })
    const direct = (await new Memory(mem.engine).search('What does Alice do?', { userId: 'u1' })).results.map((r) => r.memory)
    expect([...direct].sort()).toEqual(['Alice does pottery on weekends', ALICE].sort())
    const [first, second] = direct
    const found = await mem.search('What does Alice do?', { userId: 'u1', limit: 2 })
    // The memory of the entity Alice links to is interleaved with the direct hits by rank, and limit holds.
    expect(found.results.map((r) => r.memory)).toEqual([first, GOOGLE])
    expect(found.relations).toEqual([{ source: 'Alice', relationship: 'works_at', destination: 'Google' }])
    expect((await mem.search('What does Alice do?', { userId: 'u1', limit: 1 })).results.map((r) => r.memory)).toEqual([first])
    expect((await mem.search('What does Alice do?', { userId: 'u1' })).results.map((r) => r.memory)).toEqual([first, GOOGLE, second])
    // Names are matched as words, whatever the case or the punctuation around them.
    expect((await mem.search("Where is ALICE's office?", { userId: 'u1', limit: 1 })).relations).toEqual(found.relations)
    expect((await mem.search('Where is Malice?', { userId: 'u1', limit: 1 })).relations).toEqual([])
    // Naming Google: both its links.
    const google = await mem.search('where is google based', { userId: 'u1', limit: 5 })
    expect(google.relations).toEqual(
      expect.arrayContaining([
        { source: 'Alice', relationship: 'works_at', destination: 'Google' },
        { source: 'Google', relationship: 'located_in', destination: 'Mountain View' },
      ]),
    )
    expect(google.relations).toHaveLength(2)
    // Another scope has a graph of its own; without graph memory, search is the plain one.
    expect((await mem.search('What does Alice do?', { userId: 'u2', limit: 1 })).relations).toEqual([])
    const plain = new Memory(mem.engine, { llm: mem.llm })
    const without = await plain.search('What does Alice do?', { userId: 'u1', limit: 1 })
    expect(without.results.map((r) => r.memory)).toEqual([first])
    expect(without.relations).toBeUndefined()
  })

  it('a model answer the graph step cannot read leaves the graph as it was and still stores the memories', async () => {
    await using mem = await openGraph()
    const added = await mem.add('I like tea', { userId: 'u1' })
    expect(added.results.map((r) => r.memory)).toEqual(['User likes tea'])
    expect(added.relations).toEqual([])
    expect(await entities(mem)).toEqual([])
  })

  it('scopes whose ids hold the separators stay apart, and a long query is looked up without failing', async () => {
    const memory = await openTestMemory({ embedder: createTestEmbedder(), now: steppingClock() })
    await using _ = memory
    const llm = graphLLM({ ...script, 'pipeline notes': { entities: [{ name: 'CI/Alice', type: 'concept' }], relations: [] } })
    const mem = new Memory(memory, { llm, graph: true })
    // "acme" naming "CI/Alice" and "acme/ci" naming "Alice": one id each, not one for both.
    await mem.add('pipeline notes', { userId: 'acme' })
    await mem.add(ALICE, { userId: 'acme/ci' })
    const names = async (scope: string) =>
      (await memory.graph.nodes({ type: 'mem0.entity', scope })).map((n) => n.payload.name)
    expect(await names('mem0 user=acme')).toEqual(['CI/Alice'])
    expect(await names('mem0 user=acme%2Fci')).toEqual(['Alice', 'google', 'Software Engineering'])
    // A scope too long for the graph's scope field is its hash, and stays its own.
    const long = { userId: 'u'.repeat(150), agentId: 'a'.repeat(100) }
    await mem.add(ALICE, long)
    const scopes = new Set((await memory.graph.nodes({ type: 'mem0.entity' })).map((n) => n.scope))
    expect([...scopes].filter((sc) => sc?.startsWith('mem0 sha256='))).toHaveLength(1)
    expect((await mem.search('Alice', long)).relations).toEqual([{ source: 'Alice', relationship: 'works_at', destination: 'google' }])
    // Thousands of words (tens of thousands of runs to look up) and one very long token.
    const query = `${Array.from({ length: 2000 }, (_, i) => `w${i}`).join(' ')} Alice ${'x'.repeat(5000)}`
    const found = await mem.search(query, { userId: 'acme/ci' })
    expect(found.relations).toEqual([{ source: 'Alice', relationship: 'works_at', destination: 'google' }])
    // An entity linked to more entities than one look-up takes: its ends are read in batches.
    const key = 'mem0 user=hub'
    const ends = Array.from({ length: 10_050 }, (_, i) => ({ id: `${key}/e${i}`, type: 'mem0.entity', scope: key, payload: { name: `e${i}`, entityType: 'concept' } }))
    await memory.graph.putGraph({
      relations: [{ name: 'mem0.knows' }],
      nodes: [{ id: `${key}/hub`, type: 'mem0.entity', scope: key, payload: { name: 'Hub', entityType: 'concept' } }, ...ends],
      edges: ends.map((e) => ({ src: `${key}/hub`, rel: 'mem0.knows', dst: e.id })),
    })
    const hub = await mem.search('Hub', { userId: 'hub' })
    expect(hub.relations).toHaveLength(10_050)
    expect(hub.relations?.[0]).toEqual({ source: 'Hub', relationship: 'knows', destination: 'e0' })
  })

  it("deleteAll removes the scope's entities and links, reset every scope's; graph memory needs an engine with a graph", async () => {
    await using mem = await openGraph()
    await mem.add(ALICE, { userId: 'u1' })
    await mem.add(ALICE, { userId: 'u1', agentId: 'helper' })
    await mem.add(GOOGLE, { userId: 'u2' })
    await mem.add(GOOGLE, { userId: 'u2', agentId: 'u1' })
    expect((await entities(mem, 'mem0 user=u1 agent=helper')).length).toBeGreaterThan(0)
    // The user's scopes with an agent go too, as their memories do; another user's scope with
    // an agent named like the user stays.
    await mem.deleteAll({ userId: 'u1' })
    expect(await entities(mem, 'mem0 user=u1')).toEqual([])
    expect(await entities(mem, 'mem0 user=u1 agent=helper')).toEqual([])
    expect((await mem.getAll({ userId: 'u1', agentId: 'helper' })).relations).toEqual([])
    expect((await entities(mem, 'mem0 user=u2 agent=u1')).map(([name]) => name)).toEqual(['Google', 'Mountain View'])
    expect((await entities(mem, 'mem0 user=u2')).map(([name]) => name)).toEqual(['Google', 'Mountain View'])
    expect(await mem.engine.graph.neighbors('mem0 user=u1/alice')).toEqual([])
    await mem.reset()
    expect(await entities(mem)).toEqual([])
    const { graph: _, ...withoutGraph } = mem.engine
    expect(() => new Memory(withoutGraph as never, { llm: mem.llm, graph: true })).toThrow(/entity graph/)
  })
})

describe('OpenAI-compatible model client', () => {
  async function serve(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void) {
    const requests: { headers: IncomingMessage['headers']; body: unknown; url: string | undefined }[] = []
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (c) => {
        body += c
      })
      req.on('end', () => {
        requests.push({ headers: req.headers, body: JSON.parse(body), url: req.url })
        handler(req, body, res)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    return {
      requests,
      baseUrl: `http://127.0.0.1:${port}/v1/`,
      [Symbol.asyncDispose]: () => new Promise<void>((resolve) => server.close(() => resolve())),
    }
  }
  const answer = (res: ServerResponse, content: string) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }))
  }

  it('retries after a 429 with backoff, then returns the answer', async () => {
    let n = 0
    await using server = await serve((_req, _body, res) => {
      if (n++ === 0) {
        res.writeHead(429, { 'content-type': 'application/json' })
        res.end('{"error":"slow down"}')
      } else answer(res, '{"facts":["User likes tea"]}')
    })
    const delays: number[] = []
    const llm = openAICompatibleLLM({
      baseUrl: server.baseUrl,
      apiKey: 'sk-test',
      model: 'tiny',
      baseDelayMs: 50,
      sleep: async (ms) => {
        delays.push(ms)
      },
    })
    expect(await llm.generate('system text', 'user text', { json: true })).toBe(
      '{"facts":["User likes tea"]}',
    )
    expect(delays).toEqual([50])
    expect(server.requests).toHaveLength(2)
    expect(server.requests[1]?.url).toBe('/v1/chat/completions')
    expect(server.requests[1]?.headers.authorization).toBe('Bearer sk-test')
    expect(server.requests[1]?.body).toEqual({
      model: 'tiny',
      temperature: 0,
      response_format: { type: 'json_object' },
      messages: [
        { role: 'system', content: 'system text' },
        { role: 'user', content: 'user text' },
      ],
    })
  })

  it('gives up after the last retry and does not retry other errors', async () => {
    await using limited = await serve((_req, _body, res) => {
      res.writeHead(429)
      res.end()
    })
    const delays: number[] = []
    const sleep = async (ms: number) => {
      delays.push(ms)
    }
    const llm = openAICompatibleLLM({
      baseUrl: limited.baseUrl,
      model: 'm',
      maxRetries: 2,
      baseDelayMs: 10,
      sleep,
    })
    const err = await errorOf(llm.generate('s', 'u', { json: false }))
    expect(err.code).toBe('LLM_UNAVAILABLE')
    expect(err.details?.status).toBe(429)
    expect(delays).toEqual([10, 20])
    expect(limited.requests).toHaveLength(3)
    expect(limited.requests[0]?.body).not.toHaveProperty('response_format')

    await using broken = await serve((_req, _body, res) => {
      res.writeHead(500)
      res.end('boom')
    })
    const once = openAICompatibleLLM({ baseUrl: broken.baseUrl, model: 'm', sleep })
    expect((await errorOf(once.generate('s', 'u', { json: true }))).details?.status).toBe(500)
    expect(broken.requests).toHaveLength(1)
  })

  it('drives the whole add pipeline against a local endpoint', async () => {
    await using server = await serve((_req, body, res) => {
      const user = (JSON.parse(body) as { messages: { content: string }[] }).messages[1]?.content ?? ''
      answer(
        res,
        user.startsWith('New fact:')
          ? '{"operations":[{"event":"ADD","data":"User likes tea"}]}'
          : '```json\n{"facts":["User likes tea"]}\n```',
      )
    })
    await using mem = await open({ llm: openAICompatibleLLM({ baseUrl: server.baseUrl, model: 'm' }) })
    const { results } = await mem.add('I like tea', { userId: 'u' })
    expect(results.map((r) => [r.event, r.memory])).toEqual([['ADD', 'User likes tea']])
  })

  it('reads JSON from fenced, wrapped or trailing-prose answers', () => {
    expect(parseModelJson('["a","b"]')).toEqual(['a', 'b'])
    expect(parseModelJson('```json\n{"facts":["a"]}\n```')).toEqual({ facts: ['a'] })
    expect(parseModelJson('Sure! {"facts": ["x ] y"]} Hope that helps.')).toEqual({ facts: ['x ] y'] })
    expect(parseModelJson('Facts: ["a"] and more text [broken')).toEqual(['a'])
    expect(parseModelJson('no json here')).toBeUndefined()
  })
})
