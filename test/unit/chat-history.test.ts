import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { importChatHistory } from '../../src/node/index.ts'
import { codeOf } from '../support/errors.ts'
import { openTestMemory } from '../support/memory.ts'

const fixtures = join(import.meta.dirname, '../fixtures/chat')
const chatgpt = () => readFile(join(fixtures, 'chatgpt-conversations.json'), 'utf8')
const claude = () => readFile(join(fixtures, 'claude-conversations.json'), 'utf8')

type TestMemory = Awaited<ReturnType<typeof openTestMemory>>

async function turnsOf(memory: TestMemory, conversationId: string) {
  const events = await memory.events.list({ conversationId, kinds: ['message'] })
  const users = events.filter((e) => e.actor.type === 'human')
  const views = await memory.turns(users.map((e) => e.id))
  return views.map((v, i) => ({ ...v, createdAt: users[i]?.createdAt }))
}

describe('importing a ChatGPT export', () => {
  it('records the current branch of each conversation as turns with their own times, hidden messages left out', async () => {
    await using memory = await openTestMemory()
    const result = await importChatHistory(memory, await chatgpt(), { source: 'chatgpt', scope: { userId: 'alice' } })
    expect(result).toMatchObject({ source: 'chatgpt', turns: 3, skipped: 0 })
    expect(result.conversations).toEqual([
      {
        conversationId: 'chatgpt-6630f2a0-1111-4a5b-9c3d-000000000001',
        title: 'Parser date bug',
        startedAt: '2024-05-01T10:00:10.000Z',
        turns: 2,
        recorded: 2,
      },
      { conversationId: 'chatgpt-6630f2a0-2222-4a5b-9c3d-000000000002', title: 'Trip', startedAt: '2024-06-01T10:00:10.000Z', turns: 1, recorded: 1 },
    ])

    const turns = await turnsOf(memory, 'chatgpt-6630f2a0-1111-4a5b-9c3d-000000000001')
    expect(turns.map((t) => [t.userText, t.replyText])).toEqual([
      ['Why does parseDate fail on 03/04/2024?', 'parseDate reads dates as MM/DD, so 03/04 is March 4th.'],
      ['Make it read DD/MM instead.', "Pass { order: 'DMY' } to parseDate."],
    ])
    expect(turns[0]?.createdAt).toBe('2024-05-01T10:00:10.000Z')
    expect(turns[0]?.procedures.map((p) => [p.tool, p.args])).toEqual([['python', { input: "parseDate('03/04/2024')" }]])
    // The regenerated answer, the system message and the custom instructions are not turns.
    const all = JSON.stringify(await memory.events.list({ conversationId: 'chatgpt-6630f2a0-1111-4a5b-9c3d-000000000001' }))
    expect(all).not.toContain('A first answer the user regenerated')
    expect(all).not.toContain('I write TypeScript')
    expect(all).toContain('2024-03-04 (read as MM/DD)')
    expect(all).not.toContain('never answered')
    const events = await memory.events.list({ conversationId: 'chatgpt-6630f2a0-2222-4a5b-9c3d-000000000002' })
    expect(events[0]).toMatchObject({ scope: { userId: 'alice' }, tags: ['source:chatgpt'] })
  })

  it('adds nothing when the same file is imported again, and only the new turns of a later export', async () => {
    await using memory = await openTestMemory()
    await importChatHistory(memory, await chatgpt(), { source: 'chatgpt' })
    const before = (await memory.stats()).counts.events
    expect(await importChatHistory(memory, await chatgpt(), { source: 'chatgpt' })).toMatchObject({ turns: 0, skipped: 3 })
    expect((await memory.stats()).counts.events).toBe(before)

    const later = JSON.parse(await chatgpt()) as { mapping: Record<string, unknown>; current_node: string }[]
    const trip = later[1] as { mapping: Record<string, { children?: string[] }>; current_node: string }
    trip.mapping.ans = { ...trip.mapping.ans, children: ['q2'] }
    trip.mapping.q2 = message('q2', 'user', 'Book me a hotel near the old town.', 1717300000, 'ans', ['a2'])
    trip.mapping.a2 = message('a2', 'assistant', 'Here are three hotels in Alfama.', 1717300010, 'q2', [])
    trip.current_node = 'a2'
    // The format is found from the file when no source is given.
    const again = await importChatHistory(memory, later)
    expect(again).toMatchObject({ source: 'chatgpt', turns: 1, skipped: 3 })
    expect(again.conversations.map((c) => c.recorded)).toEqual([0, 1])
    const turns = await turnsOf(memory, 'chatgpt-6630f2a0-2222-4a5b-9c3d-000000000002')
    expect(turns.map((t) => t.userText)).toEqual(['I am flying to Lisbon on June 20th.', 'Book me a hotel near the old town.'])
  })

  it('refuses a file that is not an export, naming what is wrong, and writes nothing', async () => {
    await using memory = await openTestMemory()
    const good = JSON.parse(await chatgpt()) as Record<string, unknown>[]
    const broken = structuredClone(good)
    delete broken[1]?.mapping
    const surrogate = structuredClone(good) as { mapping: Record<string, { message: { content: { parts: string[] } } }> }[]
    const q = surrogate[1]?.mapping.q
    if (q) q.message.content.parts = ['half an emoji \uD83D']
    const cases: [unknown, string][] = [
      ['{"not": "a list"}', 'conversations.json should be a list of conversations'],
      ['not json at all', 'not JSON'],
      [broken, 'conversations[1].mapping should be an object'],
      [surrogate, 'conversations[1], turn 1'],
    ]
    for (const [file, message] of cases) {
      const error = await importChatHistory(memory, file as string, { source: 'chatgpt' }).catch((e: unknown) => e)
      expect(error).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining(message) })
    }
    expect((await memory.stats()).counts.events).toBe(0)
    expect(await codeOf(importChatHistory(memory, [], { source: 'gemini' as 'claude' }))).toBe('INVALID_INPUT')
    expect(await codeOf(importChatHistory(memory, [{ messages: [] }]))).toBe('INVALID_INPUT')
    expect(await importChatHistory(memory, [])).toMatchObject({ conversations: [], turns: 0 })
  })

  it('reports progress per conversation, and stops at a signal; importing again finishes the rest', async () => {
    await using memory = await openTestMemory()
    const abort = new AbortController()
    const progress: unknown[] = []
    const error = await importChatHistory(memory, await chatgpt(), {
      source: 'chatgpt',
      signal: abort.signal,
      onProgress: (p) => {
        progress.push(p)
        abort.abort()
      },
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'ABORTED' })
    expect(progress).toEqual([{ conversations: 1, total: 2, turns: 2 }])
    expect(await importChatHistory(memory, await chatgpt(), { source: 'chatgpt' })).toMatchObject({ turns: 1, skipped: 2 })
  })
})

describe('importing a Claude export', () => {
  it('records each conversation in order, with the tools the reply used and their results', async () => {
    await using memory = await openTestMemory()
    const result = await importChatHistory(memory, new Blob([await claude()]))
    expect(result).toMatchObject({ source: 'claude', turns: 2, skipped: 0 })
    expect(result.conversations.map((c) => [c.conversationId, c.title])).toEqual([['claude-0b7c1f6e-3c1a-4a51-9a11-7d2d6f0c0001', 'Deploy script']])
    const turns = await turnsOf(memory, 'claude-0b7c1f6e-3c1a-4a51-9a11-7d2d6f0c0001')
    expect(turns.map((t) => [t.userText, t.replyText, t.createdAt])).toEqual([
      ['Where is our deploy script and what does it need?', 'It is scripts/ship.sh, and it needs the STAGE variable.', '2024-05-02T09:00:10.000Z'],
      ['Thanks, and which branch deploys?', 'The release branch deploys.', '2024-05-02T09:01:00.000Z'],
    ])
    expect(turns[0]?.procedures.map((p) => [p.tool, p.args])).toEqual([['read_file', { path: 'scripts/ship.sh' }]])
    // What was imported answers a question asked in other words.
    const bundle = await memory.buildContext({ query: 'which env var does shipping need?' })
    expect(bundle.text).toContain('STAGE')
    // A sender the format does not have is named.
    const odd = JSON.parse(await claude()) as { chat_messages: { sender: string }[] }[]
    if (odd[0]?.chat_messages[2]) odd[0].chat_messages[2].sender = 'system'
    const error = await importChatHistory(memory, odd, { source: 'claude' }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('conversations[0].chat_messages[2].sender') })
  })
})

function message(id: string, role: string, text: string, time: number, parent: string, children: string[]) {
  return {
    id,
    message: {
      id,
      author: { role, name: null, metadata: {} },
      create_time: time,
      content: { content_type: 'text', parts: [text] },
      status: 'finished_successfully',
      weight: 1,
      metadata: {},
      recipient: 'all',
    },
    parent,
    children,
  }
}
