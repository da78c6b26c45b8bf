import { MemoryError } from '../../core/kernel/errors.ts'
import { textProblem } from '../../core/kernel/input-walk.ts'
import { MAX_ARTIFACT_BYTES, MAX_EVENT_CONTENT_BYTES, MAX_ID_LENGTH, MAX_PROCEDURES_PER_TURN } from '../../core/kernel/limits.ts'
import type { Channel } from '../../core/kernel/scope.ts'
import type { MemoryEvent } from '../../core/log/events.ts'
import type { RecordTurnInput, TurnRecord } from '../../core/turns/turns.ts'
import { type ChatConversation, type ChatProcedure, type ChatSource, type ChatTurn, parseChatExport } from './formats.ts'

/** What `importChatHistory` needs of a memory: one from `createMemory` or `openMemory` has it. */
export interface ChatHistoryMemory {
  recordTurn(input: RecordTurnInput): Promise<TurnRecord>
  events: {
    list(input: { conversationId: string; tenantId?: string; channel?: Channel; kinds?: ['message']; limit?: number }): Promise<MemoryEvent[]>
  }
}

export interface ChatHistoryProgress {
  /** Conversations gone through, of `total`. */
  conversations: number
  total: number
  /** Turns recorded so far. */
  turns: number
}

export interface ImportChatHistoryOptions {
  /**
   * The export's format: a ChatGPT data export or a Claude.ai export (`conversations.json`).
   * Found from the file when left out.
   */
  source?: ChatSource
  /** Whose memory it is: `{ tenantId, userId, agentId, projectId }`, as `recordTurn` takes it. */
  scope?: RecordTurnInput['scope']
  /** Default `private`. */
  channel?: Channel
  onProgress?: (progress: ChatHistoryProgress) => void
  /** Stops the import between two turns with a MemoryError `ABORTED`; what was recorded stays. */
  signal?: AbortSignal
}

export interface ImportedConversation {
  /** `chatgpt-<id>` or `claude-<id>`. */
  conversationId: string
  title: string
  /** When its first turn was asked; null for a conversation without turns. */
  startedAt: string | null
  /** Turns in the file. */
  turns: number
  /** Turns this import recorded (the others were there already). */
  recorded: number
}

export interface ImportChatHistoryResult {
  source: ChatSource
  /** Every conversation of the file, in its order. */
  conversations: ImportedConversation[]
  /** Turns recorded by this import. */
  turns: number
  /** Turns already in the memory from an earlier import of the same conversations. */
  skipped: number
}

/**
 * Records the conversations of a ChatGPT or Claude.ai export as turns, each with its original
 * time. A conversation becomes `chatgpt-<id>` or `claude-<id>`. Importing the same file again
 * adds nothing; a later export adds only the turns that are new. A file that is not such an
 * export, or holds a message the memory would refuse, is refused with INVALID_INPUT naming the
 * place, before anything is written.
 *
 * @example
 * const file = await (await fetch('/conversations.json')).blob() // or an <input type=file>'s File
 * const { turns } = await importChatHistory(memory, file, { source: 'chatgpt', scope: { userId: 'alice' } })
 */
export async function importChatHistory(
  memory: ChatHistoryMemory,
  file: Blob | string | unknown[],
  options: ImportChatHistoryOptions = {},
): Promise<ImportChatHistoryResult> {
  if (options.source !== undefined && options.source !== 'chatgpt' && options.source !== 'claude') {
    throw new MemoryError('INVALID_INPUT', `source must be 'chatgpt' or 'claude', got ${JSON.stringify(options.source)}`)
  }
  const data = await readJson(file)
  const source = options.source ?? sourceOf(data)
  const conversations = parseChatExport(data, source)
  conversations.forEach((c, i) => check(c, `conversations[${i}]`, source))
  const result: ImportChatHistoryResult = { source, conversations: [], turns: 0, skipped: 0 }
  for (const [i, conversation] of conversations.entries()) {
    const conversationId = `${source}-${conversation.id}`
    const already = await turnsRecorded(memory, conversationId, options)
    result.skipped += Math.min(already, conversation.turns.length)
    const done: ImportedConversation = {
      conversationId,
      title: conversation.title,
      startedAt: conversation.turns[0]?.createdAt ?? null,
      turns: conversation.turns.length,
      recorded: 0,
    }
    result.conversations.push(done)
    for (const turn of conversation.turns.slice(already)) {
      if (options.signal?.aborted) throw new MemoryError('ABORTED', 'The chat history import was aborted; the turns recorded so far stay')
      await memory.recordTurn({
        conversationId,
        ...(options.scope ? { scope: options.scope } : {}),
        ...(options.channel ? { channel: options.channel } : {}),
        tags: [`source:${source}`],
        user: turn.user,
        agent: turn.agent,
        procedures: turn.procedures.map(storable),
        createdAt: turn.createdAt,
      })
      done.recorded++
      result.turns++
    }
    options.onProgress?.({ conversations: i + 1, total: conversations.length, turns: result.turns })
  }
  return result
}

/** The format, from the first conversation: ChatGPT's has a message tree, Claude's a list. */
function sourceOf(data: unknown): ChatSource {
  // An empty export holds nothing to tell its format by, nor anything to import.
  if (Array.isArray(data) && data.length === 0) return 'chatgpt'
  const first: unknown = Array.isArray(data) ? data[0] : undefined
  if (typeof first === 'object' && first !== null) {
    if ('mapping' in first) return 'chatgpt'
    if ('chat_messages' in first) return 'claude'
  }
  throw new MemoryError(
    'INVALID_INPUT',
    "The file is neither a ChatGPT nor a Claude.ai export's conversations.json (pass source to say which it is)",
  )
}

async function readJson(file: Blob | string | unknown[]): Promise<unknown> {
  if (Array.isArray(file)) return file
  const text = typeof file === 'string' ? file : await file.text()
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new MemoryError('INVALID_INPUT', `The chat export is not JSON: ${error instanceof Error ? error.message : String(error)}`)
  }
}

/** Turns of the conversation already in the memory: one user message each. */
async function turnsRecorded(memory: ChatHistoryMemory, conversationId: string, options: ImportChatHistoryOptions): Promise<number> {
  const events = await memory.events.list({
    conversationId,
    ...(options.scope?.tenantId ? { tenantId: options.scope.tenantId } : {}),
    ...(options.channel ? { channel: options.channel } : {}),
    kinds: ['message'],
    limit: 10_000,
  })
  return events.filter((e) => e.actor.type === 'human').length
}

const bytes = new TextEncoder()

/** Refuses, before anything is written, what `recordTurn` would refuse halfway through. */
function check(conversation: ChatConversation, at: string, source: ChatSource): void {
  const id = `${source}-${conversation.id}`
  if (id.length > MAX_ID_LENGTH || id.trim() !== id || textProblem(id)) refuse(`${at}.id`, `is not a usable conversation id`)
  conversation.turns.forEach((turn: ChatTurn, t) => {
    const where = `${at}, turn ${t + 1}`
    for (const [name, said] of [['user message', turn.user], ['reply', turn.agent]] as const) {
      const problem = textProblem(said)
      if (problem) refuse(where, `its ${name}'s text ${problem}`)
      if (bytes.encode(said).length > MAX_EVENT_CONTENT_BYTES) refuse(where, `its ${name} is over ${MAX_EVENT_CONTENT_BYTES} bytes`)
    }
    if (turn.procedures.length > MAX_PROCEDURES_PER_TURN) refuse(where, `has over ${MAX_PROCEDURES_PER_TURN} tool calls`)
    for (const p of turn.procedures) {
      if (!p.tool || p.tool.length > 128 || p.tool.trim() !== p.tool || textProblem(p.tool)) refuse(where, `names a tool ${JSON.stringify(p.tool)} that cannot be stored`)
      const output = p.output ?? ''
      if (textProblem(output) || bytes.encode(output).length > MAX_ARTIFACT_BYTES) refuse(where, `has a tool output that cannot be stored`)
    }
  })
}

/** A call's arguments as the memory takes them: nested too deep, or not text, they are kept as one string. */
function storable(procedure: ChatProcedure): ChatProcedure {
  const args = JSON.stringify(procedure.args ?? {})
  return textProblem(args) || depth(procedure.args) > 16 ? { ...procedure, args: { input: args } } : procedure
}

function refuse(where: string, why: string): never {
  throw new MemoryError('INVALID_INPUT', `The chat export cannot be imported: ${where} ${why}. Nothing was written.`)
}

function depth(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  let deepest = 0
  for (const child of Object.values(value)) deepest = Math.max(deepest, depth(child))
  return deepest + 1
}
