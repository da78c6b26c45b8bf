import type { LanguageModelMiddleware } from 'ai'
import type { BuildContextInput } from '../../core/retrieval/context-input.ts'
import type { RecordTurnInput, TurnRecord } from '../../core/turns/turns.ts'

type Middleware = Exclude<LanguageModelMiddleware, (...args: never[]) => unknown>
type CallOptions = Parameters<NonNullable<Middleware['transformParams']>>[0]['params']
type Prompt = CallOptions['prompt']
type GenerateResult = Awaited<ReturnType<NonNullable<Middleware['wrapGenerate']>>>
type StreamResult = Awaited<ReturnType<NonNullable<Middleware['wrapStream']>>>
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never

/** What the middleware needs of a memory: one from `createMemory` or `openMemory` has it. */
export interface ContextMemory {
  buildContext(input: BuildContextInput): Promise<{ text: string }>
  recordTurn(input: RecordTurnInput): Promise<TurnRecord>
}

/** A tool call as the model made it and its result, for `documentOf`. */
export interface ToolCallSeen {
  toolName: string
  input: unknown
  /** The result as text (JSON for a structured one); undefined when there was none. */
  output: string | undefined
}

/** The file or page a tool call read or wrote, as `recordTurn` takes it. */
export interface DocumentTouched {
  path?: string
  url?: string
  /** The content after the call: what was read, or what was written. */
  content?: string
  effect: 'read' | 'write'
}

export interface MemoryMiddlewareOptions {
  /** The conversation the calls belong to, or a function that finds it in the call's options. */
  conversationId: string | ((params: CallOptions) => string)
  /** Whose memory it is (`tenantId`, `userId`, `agentId`, `projectId`). */
  scope?: RecordTurnInput['scope']
  /** Where the answer goes; the context holds only what that channel may see. Default `private`. */
  channel?: RecordTurnInput['channel']
  /** The context's budget in tokens (64 at least). Default: `buildContext`'s. */
  maxTokens?: number
  /** `false` records turns without adding context to the prompt. Default `true`. */
  context?: boolean
  /** `false` adds context without recording turns. Default `true`. */
  record?: boolean
  /**
   * Says which tool calls read or wrote a file or page. Such a call becomes a document version,
   * as in `recordTurn`; the others are stored as a tool call and its result.
   *
   * @example
   * documentOf: ({ toolName, input, output }) =>
   *   toolName === 'readFile' ? { path: (input as { path: string }).path, content: output, effect: 'read' } : undefined
   */
  documentOf?: (call: ToolCallSeen) => DocumentTouched | undefined
  /**
   * Called when the memory fails to build a context or record a turn. The model call goes on
   * either way. Default: `console.warn`.
   */
  onError?: (error: unknown) => void
}

/** How the context enters the prompt: a system message before the conversation. */
const CONTEXT_HEADER = 'What you remember that may help (from earlier conversations):'

/**
 * A language-model middleware for the AI SDK's `wrapLanguageModel`. Before a call it builds the
 * context for the last user message and adds its text to the prompt as a system message. When a
 * call ends with an answer (not with tool calls to run), it records the turn: the user's message,
 * the tool calls made since it with their results, and the answer. A stream is recorded once,
 * whole, when it ends; a stream that fails or is cancelled records nothing.
 *
 * @example
 * import { wrapLanguageModel, generateText } from 'ai'
 * import { memoryMiddleware } from 'engram/ai-sdk'
 * const model = wrapLanguageModel({
 *   model: openai('gpt-5-mini'),
 *   middleware: memoryMiddleware(memory, { conversationId: 'chat-42', scope: { userId: 'alice' } }),
 * })
 * const { text } = await generateText({ model, prompt: 'Which file holds the parser?' })
 */
export function memoryMiddleware(memory: ContextMemory, options: MemoryMiddlewareOptions): Middleware {
  const onError = options.onError ?? ((error: unknown) => console.warn('engram: memory middleware', error))
  // A tool loop calls the model once per step: the context is built once per user message.
  const contexts = new Map<string, Promise<string | undefined>>()
  const conversationOf = (params: CallOptions) =>
    typeof options.conversationId === 'function' ? options.conversationId(params) : options.conversationId

  const contextFor = (conversationId: string, question: string): Promise<string | undefined> => {
    const key = `${conversationId}\u0000${question}`
    let context = contexts.get(key)
    if (!context) {
      context = memory
        .buildContext({
          query: question,
          conversationId,
          ...(options.scope ? { scope: options.scope } : {}),
          ...(options.channel ? { channel: options.channel } : {}),
          ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
        })
        .then(
          (bundle) => (bundle.text.trim() ? bundle.text : undefined),
          (error: unknown) => {
            onError(error)
            return undefined
          },
        )
      // Only the latest question of each conversation is kept.
      for (const old of contexts.keys()) if (old.startsWith(`${conversationId}\u0000`)) contexts.delete(old)
      contexts.set(key, context)
    }
    return context
  }

  const record = async (params: CallOptions, answer: string) => {
    if (options.record === false) return
    const turn = turnOf(params.prompt, answer, options.documentOf)
    if (!turn) return
    try {
      await memory.recordTurn({
        conversationId: conversationOf(params),
        ...(options.scope ? { scope: options.scope } : {}),
        ...(options.channel ? { channel: options.channel } : {}),
        ...turn,
      })
    } catch (error) {
      onError(error)
    }
  }

  return {
    specificationVersion: 'v4',
    async transformParams({ params }) {
      if (options.context === false) return params
      const question = lastUserText(params.prompt)
      if (!question) return params
      const context = await contextFor(conversationOf(params), question)
      if (!context) return params
      return { ...params, prompt: [{ role: 'system', content: `${CONTEXT_HEADER}\n\n${context}` }, ...params.prompt] }
    },
    async wrapGenerate({ doGenerate, params }) {
      const result: GenerateResult = await doGenerate()
      if (endsTurn(result.finishReason.unified)) {
        const answer = result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('')
        await record(params, answer)
      }
      return result
    },
    async wrapStream({ doStream, params }) {
      const { stream, ...rest }: StreamResult = await doStream()
      let answer = ''
      let ends = false
      let failed = false
      const watched = stream.pipeThrough(
        new TransformStream<StreamPart, StreamPart>({
          transform(part, controller) {
            if (part.type === 'text-delta') answer += part.delta
            else if (part.type === 'finish') ends = endsTurn(part.finishReason.unified)
            else if (part.type === 'error') failed = true
            controller.enqueue(part)
          },
          // Runs only when the model's stream ended by itself, not when it was cancelled.
          async flush() {
            if (ends && !failed) await record(params, answer)
          },
        }),
      )
      return { stream: watched, ...rest }
    },
  }
}

/** A call that ends this way finishes the user's turn; `tool-calls` goes on in a next step. */
function endsTurn(reason: string): boolean {
  return reason === 'stop' || reason === 'length' || reason === 'content-filter' || reason === 'other'
}

type UserMessage = Extract<Prompt[number], { role: 'user' }>

function lastUserIndex(prompt: Prompt): number {
  for (let i = prompt.length - 1; i >= 0; i--) if (prompt[i]?.role === 'user') return i
  return -1
}

function lastUserText(prompt: Prompt): string | undefined {
  const message = prompt[lastUserIndex(prompt)] as UserMessage | undefined
  const text = message?.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n')
  return text?.trim() ? text : undefined
}

/**
 * The turn the prompt and the answer make: the last user message, the tool calls after it with
 * their results (from earlier steps of the same turn), and the answer.
 */
function turnOf(
  prompt: Prompt,
  answer: string,
  documentOf: MemoryMiddlewareOptions['documentOf'],
): Pick<RecordTurnInput, 'user' | 'agent' | 'procedures'> | undefined {
  const user = lastUserText(prompt)
  if (!user || !answer.trim()) return undefined
  const after = prompt.slice(lastUserIndex(prompt) + 1)
  const outputs = new Map<string, string | undefined>()
  for (const message of after) {
    if (message.role !== 'tool' && message.role !== 'assistant') continue
    for (const part of message.content) if (part.type === 'tool-result') outputs.set(part.toolCallId, outputText(part.output))
  }
  const procedures: Procedure[] = []
  for (const message of after) {
    if (message.role !== 'assistant') continue
    for (const part of message.content) {
      if (part.type !== 'tool-call') continue
      const output = outputs.get(part.toolCallId)
      const args = isObject(part.input) ? part.input : { input: part.input ?? null }
      const document = documentOf?.({ toolName: part.toolName, input: part.input, output })
      procedures.push({
        tool: part.toolName,
        args: args as Procedure['args'],
        ...(document ? { document } : output === undefined ? {} : { output }),
      })
    }
  }
  return { user, agent: answer, procedures }
}

type Procedure = NonNullable<RecordTurnInput['procedures']>[number]

type ToolOutput = Extract<Extract<Prompt[number], { role: 'tool' }>['content'][number], { type: 'tool-result' }>['output']

function outputText(output: ToolOutput): string | undefined {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value)
    case 'content':
      return output.value.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n')
    default:
      return undefined
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
