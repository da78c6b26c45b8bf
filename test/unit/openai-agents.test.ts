import { Agent, type AgentInputItem, MemorySession, type Model, type ModelRequest, type ModelResponse, run, setTracingDisabled, Usage } from '@openai/agents'
import { describe, expect, it } from 'vitest'
import { EngramSession, memoryFunctionTools } from '../../src/adapters/openai-agents/index.ts'
import { openTestMemory } from '../support/memory.ts'

// No traces leave the machine in tests.
setTracingDisabled(true)

type Output = ModelResponse['output']

/** A model that answers from a script, one response per call, and keeps what it was sent. */
function scriptedModel(responses: Output[]): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = []
  return {
    requests,
    async getResponse(request) {
      requests.push(request)
      const output = responses[requests.length - 1]
      if (!output) throw new Error('the script has no more responses')
      return { usage: new Usage(), output }
    },
    // eslint-disable-next-line require-yield
    async *getStreamedResponse() {
      throw new Error('not used')
    },
  }
}

const say = (text: string): Output => [
  { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] },
]

const items = (): AgentInputItem[] => [
  { role: 'user', content: 'Read src/parse.ts please.' },
  { type: 'function_call', callId: 'call-1', name: 'read_file', arguments: '{"path":"src/parse.ts"}', status: 'completed' },
  { type: 'function_call_result', callId: 'call-1', name: 'read_file', status: 'completed', output: { type: 'text', text: 'export const parse = mmdd' } },
  { type: 'reasoning', content: [{ type: 'input_text', text: 'The file uses mmdd.' }] },
  { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'It reads dates as MM/DD.' }] },
]

describe('the OpenAI Agents SDK session', () => {
  it('keeps a run’s items, so the next run of the agent sees the first', async () => {
    await using memory = await openTestMemory()
    const model = scriptedModel([say('Noted: STAGE must be set.'), say('You said STAGE must be set.')])
    const agent = new Agent({ name: 'helper', instructions: 'Be brief.', model })
    const session = new EngramSession(memory, { conversationId: 'chat-1', scope: { userId: 'alice' } })
    await run(agent, 'The deploy script needs the STAGE variable.', { session })
    const second = await run(agent, 'What does the deploy script need?', { session })
    expect(second.finalOutput).toBe('You said STAGE must be set.')
    const sent = JSON.stringify(model.requests[1]?.input)
    expect(sent).toContain('The deploy script needs the STAGE variable.')
    expect(sent).toContain('Noted: STAGE must be set.')
    // The items are events of the conversation, searchable like any other.
    const hits = await memory.search('deploy script variable', { mode: 'keyword', scope: { userId: 'alice' } })
    expect(hits.some((h) => h.conversationId === 'chat-1')).toBe(true)
  })

  it('answers add, get, pop and clear as the SDK’s in-memory session does', async () => {
    await using memory = await openTestMemory()
    const ours = new EngramSession(memory, { conversationId: 'chat-1' })
    const reference = new MemorySession({ sessionId: 'chat-1' })
    const both = async <T>(call: (s: EngramSession | MemorySession) => Promise<T>) => {
      const [a, b] = [await call(ours), await call(reference)]
      expect(a).toEqual(b)
      return a
    }
    await both((s) => s.getSessionId())
    await both((s) => s.addItems(items()))
    await both((s) => s.getItems())
    await both((s) => s.getItems(2))
    await both((s) => s.getItems(0))
    expect(await both((s) => s.popItem())).toMatchObject({ role: 'assistant' })
    await both((s) => s.getItems())
    await both((s) => s.clearSession())
    await both((s) => s.getItems())
    await both((s) => s.popItem())
    expect((await memory.stats()).counts.events).toBe(0)
  })
})

describe('the memory tools for the OpenAI Agents SDK', () => {
  it('lets an agent save a memory for the user given', async () => {
    await using memory = await openTestMemory()
    const model = scriptedModel([
      [
        {
          type: 'function_call',
          callId: 'call-1',
          name: 'save_memory',
          arguments: JSON.stringify({ content: 'Alice prefers tabs over spaces', category: 'preference' }),
          status: 'completed',
        },
      ],
      say('Saved.'),
    ])
    const tools = memoryFunctionTools(memory, { userId: 'alice' }, ['save_memory', 'recall_memories'])
    expect(tools.map((t) => t.name)).toEqual(['save_memory', 'recall_memories'])
    const agent = new Agent({ name: 'helper', model, tools })
    const result = await run(agent, 'Remember that I prefer tabs.')
    expect(result.finalOutput).toBe('Saved.')
    expect((await memory.memories.list({ userId: 'alice' })).map((m) => m.content)).toEqual(['Alice prefers tabs over spaces'])
    // The tool's answer went back to the model.
    expect(JSON.stringify(model.requests[1]?.input)).toContain('function_call_result')
  })
})
