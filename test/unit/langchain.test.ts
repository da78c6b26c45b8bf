import { InMemoryChatMessageHistory } from '@langchain/core/chat_history'
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages'
import { describe, expect, it } from 'vitest'
import { EngramChatHistory, EngramRetriever } from '../../src/adapters/langchain/index.ts'
import { openTestMemory } from '../support/memory.ts'

describe('the LangChain retriever', () => {
  it('returns the hits of search as documents, with where each comes from and why it was found', async () => {
    await using memory = await openTestMemory()
    await memory.recordTurn({
      conversationId: 'c1',
      scope: { tenantId: 'default', userId: 'alice' },
      user: 'Where does the parser read dates?',
      agent: 'In src/parse.ts, which reads them as MM/DD.',
    })
    await memory.recordTurn({ conversationId: 'c2', scope: { tenantId: 'default', userId: 'bob' }, user: 'The parser of bob', agent: 'Bob parses dates too.' })
    const retriever = new EngramRetriever(memory, { search: { limit: 3, scope: { userId: 'alice' }, mode: 'keyword' } })
    const docs = await retriever.invoke('parser dates')
    expect(docs.length).toBeGreaterThan(0)
    expect(docs.every((d) => d.metadata.conversationId === 'c1')).toBe(true)
    expect(docs.map((d) => d.pageContent).join(' ')).toContain('MM/DD')
    expect(docs[0]?.metadata).toMatchObject({ kind: 'message', score: expect.any(Number), explain: expect.any(Object) })
  })
})

describe('the LangChain chat message history', () => {
  const messages = () => [
    new SystemMessage('You are a careful assistant.'),
    new HumanMessage('Read src/parse.ts please.'),
    new AIMessage({ content: '', tool_calls: [{ id: 'call-1', name: 'read_file', args: { path: 'src/parse.ts' } }] }),
    new ToolMessage({ content: 'export const parse = mmdd', tool_call_id: 'call-1' }),
    new AIMessage('It reads dates as MM/DD.'),
  ]

  it('gives back the messages it was given, as the in-memory history does, tool calls included', async () => {
    await using memory = await openTestMemory()
    const history = new EngramChatHistory(memory, { conversationId: 'chat-1', scope: { userId: 'alice' } })
    const reference = new InMemoryChatMessageHistory()
    for (const h of [history, reference]) {
      await h.addMessages(messages())
      await h.addUserMessage('Thanks!')
      await h.addAIMessage('You are welcome.')
    }
    const ours = await history.getMessages()
    const theirs = await reference.getMessages()
    expect(ours.map((m) => [m.getType(), m.content])).toEqual(theirs.map((m) => [m.getType(), m.content]))
    expect((ours[2] as AIMessage).tool_calls).toEqual((theirs[2] as AIMessage).tool_calls)
    expect((ours[3] as ToolMessage).tool_call_id).toBe('call-1')
    // A history over the same conversation, opened later, reads the same.
    const again = await new EngramChatHistory(memory, { conversationId: 'chat-1', scope: { userId: 'alice' } }).getMessages()
    expect(again.map((m) => m.content)).toEqual(ours.map((m) => m.content))
  })

  it('keeps secrets out, and clear forgets the conversation alone', async () => {
    await using memory = await openTestMemory()
    const history = new EngramChatHistory(memory, { conversationId: 'chat-1' })
    const other = new EngramChatHistory(memory, { conversationId: 'chat-2' })
    await history.addUserMessage('My key is AKIAQ3EGRT7XKJ4ZP2MB, keep it.')
    await other.addUserMessage('Another chat')
    const [stored] = await history.getMessages()
    expect(stored?.content).not.toContain('AKIAQ3EGRT7XKJ4ZP2MB')
    await history.clear()
    expect(await history.getMessages()).toEqual([])
    expect((await other.getMessages()).map((m) => m.content)).toEqual(['Another chat'])
  })
})
