import { generateText, simulateReadableStream, stepCountIs, streamText, tool, wrapLanguageModel, jsonSchema } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import type { LanguageModelV4GenerateResult, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { describe, expect, it } from 'vitest'
import { memoryMiddleware, memoryTools } from '../../src/adapters/ai-sdk/index.ts'
import { openTestMemory } from '../support/memory.ts'

type GenerateResult = LanguageModelV4GenerateResult
type StreamChunks = LanguageModelV4StreamPart[]

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}

function answer(text: string): GenerateResult {
  return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] }
}

function toolCall(toolName: string, input: object, toolCallId = 'call-1'): GenerateResult {
  return {
    content: [{ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  }
}

/** A stream that answers `text` in two deltas and finishes. */
function streamedAnswer(text: string): StreamChunks {
  const half = Math.floor(text.length / 2)
  return [
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: text.slice(0, half) },
    { type: 'text-delta', id: 't', delta: text.slice(half) },
    { type: 'text-end', id: 't' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
  ]
}

function systemTexts(prompt: { role: string; content: unknown }[]): string {
  return prompt.flatMap((m) => (m.role === 'system' ? [String(m.content)] : [])).join('\n')
}

async function turnsOf(memory: Awaited<ReturnType<typeof openTestMemory>>, conversationId: string) {
  const { events } = await memory.graph.conversation(conversationId)
  const users = events.filter((e) => e.kind === 'message' && e.actor.type === 'human').map((e) => e.id)
  return memory.turns(users)
}

describe('the AI SDK middleware', () => {
  it('records a turn, and a later conversation gets what it learned in its prompt', async () => {
    await using memory = await openTestMemory()
    const model = new MockLanguageModelV4({ doGenerate: [answer('Noted: the deploy script is scripts/ship.sh.'), answer('It is scripts/ship.sh.')] })
    const scope = { userId: 'alice' }
    const first = wrapLanguageModel({ model, middleware: memoryMiddleware(memory, { conversationId: 'c1', scope }) })
    await generateText({ model: first, prompt: 'Our deploy script lives in scripts/ship.sh and needs the STAGE variable.' })
    const [turn] = await turnsOf(memory, 'c1')
    expect(turn).toMatchObject({
      userText: 'Our deploy script lives in scripts/ship.sh and needs the STAGE variable.',
      replyText: 'Noted: the deploy script is scripts/ship.sh.',
    })

    const second = wrapLanguageModel({ model, middleware: memoryMiddleware(memory, { conversationId: 'c2', scope }) })
    const { text } = await generateText({ model: second, prompt: 'Which variable does the deploy script need?' })
    expect(text).toBe('It is scripts/ship.sh.')
    const prompt = model.doGenerateCalls[1]?.prompt ?? []
    expect(prompt[0]?.role).toBe('system')
    expect(systemTexts(prompt)).toContain('STAGE')
    // Another user's conversation gets none of it.
    const bobs = new MockLanguageModelV4({ doGenerate: answer('I do not know.') })
    const other = wrapLanguageModel({ model: bobs, middleware: memoryMiddleware(memory, { conversationId: 'c3', scope: { userId: 'bob' } }) })
    await generateText({ model: other, prompt: 'Which variable does the deploy script need?' })
    expect(bobs.doGenerateCalls).toHaveLength(1)
    expect(systemTexts(bobs.doGenerateCalls[0]?.prompt ?? [])).not.toContain('STAGE')
  })

  it('records a streamed turn once, whole, with its tool calls; a file the tool read becomes a document', async () => {
    await using memory = await openTestMemory({ workspace: { mode: 'local', root: '/repo' } })
    const model = new MockLanguageModelV4({
      doStream: [
        {
          stream: simulateReadableStream({
            chunks: [
              { type: 'tool-call', toolCallId: 'read-1', toolName: 'readFile', input: JSON.stringify({ path: '/repo/src/parse.ts' }) },
              { type: 'tool-call', toolCallId: 'test-1', toolName: 'runTests', input: JSON.stringify({}) },
              { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
            ],
          }),
        },
        { stream: simulateReadableStream({ chunks: streamedAnswer('The parser reads dates as MM/DD; one test fails.') }) },
      ],
    })
    const wrapped = wrapLanguageModel({
      model,
      middleware: memoryMiddleware(memory, {
        conversationId: 'c1',
        documentOf: ({ toolName, input, output }) =>
          toolName === 'readFile' ? { path: (input as { path: string }).path, content: output ?? '', effect: 'read' } : undefined,
      }),
    })
    const tools = {
      readFile: tool({ inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } } }), execute: async () => 'export function parse(d) { return mmdd(d) }' }),
      runTests: tool({ inputSchema: jsonSchema<object>({ type: 'object' }), execute: async () => ({ failed: 1 }) }),
    }
    const result = streamText({ model: wrapped, tools, stopWhen: stepCountIs(3), prompt: 'Why does the parser fail on dates?' })
    expect(await result.text).toBe('The parser reads dates as MM/DD; one test fails.')
    const turns = await turnsOf(memory, 'c1')
    expect(turns).toHaveLength(1)
    expect(turns[0]).toMatchObject({ userText: 'Why does the parser fail on dates?', replyText: 'The parser reads dates as MM/DD; one test fails.' })
    expect(turns[0]?.procedures.map((p) => [p.tool, p.document])).toEqual([
      ['readFile', 'src/parse.ts'],
      ['runTests', null],
    ])
  })

  it('records nothing of a stream that is cancelled, that fails, or of a model call that fails', async () => {
    await using memory = await openTestMemory()
    const endless = new MockLanguageModelV4({
      doStream: async () => ({
        stream: new ReadableStream<LanguageModelV4StreamPart>({
          start(controller) {
            controller.enqueue({ type: 'text-start', id: 't' })
            controller.enqueue({ type: 'text-delta', id: 't', delta: 'Half an ans' })
          },
        }),
      }),
    })
    const abort = new AbortController()
    const cut = streamText({
      model: wrapLanguageModel({ model: endless, middleware: memoryMiddleware(memory, { conversationId: 'cut' }) }),
      prompt: 'Tell me everything about the parser.',
      abortSignal: abort.signal,
    })
    for await (const delta of cut.textStream) {
      expect(delta).toBe('Half an ans')
      abort.abort()
    }

    const broken = new MockLanguageModelV4({
      doStream: [
        {
          stream: simulateReadableStream({
            chunks: [
              { type: 'text-start', id: 't' },
              { type: 'text-delta', id: 't', delta: 'Partly' },
              { type: 'error', error: new Error('overloaded') },
              { type: 'finish', finishReason: { unified: 'error', raw: 'error' }, usage },
            ],
          }),
        },
      ],
    })
    const failed = streamText({
      model: wrapLanguageModel({ model: broken, middleware: memoryMiddleware(memory, { conversationId: 'failed' }) }),
      prompt: 'Tell me about the parser.',
      onError: () => {},
    })
    await failed.consumeStream()

    const refusing = new MockLanguageModelV4({
      doGenerate: async () => {
        throw new Error('model unavailable')
      },
    })
    await expect(
      generateText({
        model: wrapLanguageModel({ model: refusing, middleware: memoryMiddleware(memory, { conversationId: 'refused' }) }),
        prompt: 'Tell me about the parser.',
        maxRetries: 0,
      }),
    ).rejects.toThrow('model unavailable')

    for (const conversationId of ['cut', 'failed', 'refused']) expect(await turnsOf(memory, conversationId)).toEqual([])
    expect((await memory.stats()).counts.events).toBe(0)
  })

  it('a memory that fails leaves the model call working and reports the error', async () => {
    await using memory = await openTestMemory()
    const errors: unknown[] = []
    const model = new MockLanguageModelV4({ doGenerate: answer('Fine.') })
    const wrapped = wrapLanguageModel({
      model,
      middleware: memoryMiddleware(memory, { conversationId: 'bad id with\u0000nul', onError: (e) => errors.push(e) }),
    })
    const { text } = await generateText({ model: wrapped, prompt: 'Hello there' })
    expect(text).toBe('Fine.')
    expect(errors.length).toBeGreaterThan(0)
    expect(errors[0]).toMatchObject({ code: 'INVALID_INPUT' })
  })
})

describe('the memory tools for the AI SDK', () => {
  it('lets the model save a memory and recall it, for the user given only', async () => {
    await using memory = await openTestMemory()
    const model = new MockLanguageModelV4({
      doGenerate: [
        toolCall('save_memory', { content: 'Alice prefers tabs over spaces', category: 'preference', source: 'explicit' }),
        answer('Saved.'),
        toolCall('recall_memories', { query: 'indentation preference' }, 'call-2'),
        answer('You prefer tabs.'),
      ],
    })
    const tools = memoryTools(memory, { userId: 'alice' }, ['save_memory', 'recall_memories'])
    expect(Object.keys(tools)).toEqual(['save_memory', 'recall_memories'])
    await generateText({ model, tools, stopWhen: stepCountIs(2), prompt: 'Remember that I prefer tabs.' })
    const saved = await memory.memories.list({ userId: 'alice' })
    expect(saved.map((m) => m.content)).toEqual(['Alice prefers tabs over spaces'])
    expect(await memory.memories.list({ userId: 'bob' })).toEqual([])
    const recalled = await generateText({ model, tools, stopWhen: stepCountIs(2), prompt: 'How do I indent?' })
    const output = recalled.steps[0]?.toolResults[0]?.output
    expect(JSON.stringify(output)).toContain('Alice prefers tabs over spaces')
  })
})
