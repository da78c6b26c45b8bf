import { MemoryError } from '../../core/kernel/errors.ts'
import type { JsonObject } from '../../core/kernel/json.ts'

/** One tool call of an imported turn, as `recordTurn` takes it. */
export interface ChatProcedure {
  tool: string
  args?: JsonObject
  output?: string
}

/** One exchange of an exported chat: the user's words, the reply, and when it was asked. */
export interface ChatTurn {
  user: string
  agent: string
  /** When the user's message was sent (ISO 8601). */
  createdAt: string
  procedures: ChatProcedure[]
}

export interface ChatConversation {
  /** The conversation's id in the export. */
  id: string
  title: string
  turns: ChatTurn[]
}

export type ChatSource = 'chatgpt' | 'claude'

type Json = Record<string, unknown>

/** The file's conversations, read in full before anything is written. */
export function parseChatExport(data: unknown, source: ChatSource): ChatConversation[] {
  const name = source === 'chatgpt' ? 'ChatGPT' : 'Claude'
  if (!Array.isArray(data)) throw malformed(name, 'conversations.json', 'a list of conversations')
  return data.map((conversation: unknown, i) => {
    const at = `conversations[${i}]`
    if (!isObject(conversation)) throw malformed(name, at, 'an object')
    return source === 'chatgpt' ? chatgptConversation(conversation, at) : claudeConversation(conversation, at)
  })
}

/** Collects messages into turns: a user message opens one, the replies after it fill it. */
class TurnBuilder {
  readonly turns: ChatTurn[] = []
  #open: ChatTurn | undefined

  user(text: string, createdAt: string): void {
    if (this.#open && !this.#open.agent && this.#open.procedures.length === 0) {
      this.#open.user += `\n\n${text}`
      return
    }
    this.#open = { user: text, agent: '', createdAt, procedures: [] }
    this.turns.push(this.#open)
  }

  reply(text: string): void {
    if (this.#open) this.#open.agent = this.#open.agent ? `${this.#open.agent}\n\n${text}` : text
  }

  procedure(procedure: ChatProcedure): void {
    this.#open?.procedures.push(procedure)
  }

  /** The output of the last call to `tool` still waiting for one, or a call of its own. */
  output(tool: string, output: string): void {
    const waiting = this.#open?.procedures.findLast((p) => p.tool === tool && p.output === undefined)
    if (waiting) waiting.output = output
    else this.procedure({ tool, output })
  }

  /** Turns with a user message and a reply; a question left unanswered is not a turn. */
  done(): ChatTurn[] {
    return this.turns.filter((t) => t.agent.trim() !== '')
  }
}

// ChatGPT: `mapping` is a tree of message nodes; `current_node` is the branch the user last saw.

function chatgptConversation(conversation: Json, at: string): ChatConversation {
  const id = text(conversation.conversation_id) ?? text(conversation.id)
  if (!id) throw malformed('ChatGPT', `${at}.id`, 'a string')
  const mapping = conversation.mapping
  if (!isObject(mapping)) throw malformed('ChatGPT', `${at}.mapping`, 'an object of message nodes')
  const started = seconds(conversation.create_time)
  const turns = new TurnBuilder()
  for (const [key, node] of currentBranch(mapping, text(conversation.current_node), at)) {
    const message = node.message
    if (message === null || message === undefined) continue
    if (!isObject(message)) throw malformed('ChatGPT', `${at}.mapping.${key}.message`, 'an object or null')
    const author = isObject(message.author) ? text(message.author.role) : undefined
    if (!author) throw malformed('ChatGPT', `${at}.mapping.${key}.message.author.role`, 'a string')
    const metadata = isObject(message.metadata) ? message.metadata : {}
    if (author === 'system' || metadata.is_visually_hidden_from_conversation === true) continue
    const said = chatgptText(message.content)
    if (said === undefined || !said.trim()) continue
    const when = seconds(message.create_time) ?? started
    if (author === 'user') {
      if (when === undefined) throw malformed('ChatGPT', `${at}.mapping.${key}.message.create_time`, 'a time')
      turns.user(said, when)
    } else if (author === 'assistant') {
      const recipient = text(message.recipient) ?? 'all'
      if (recipient === 'all') turns.reply(said)
      else turns.procedure({ tool: recipient, args: { input: said } })
    } else if (author === 'tool') {
      const tool = isObject(message.author) ? text(message.author.name) : undefined
      turns.output(tool ?? 'tool', said)
    }
  }
  return { id, title: text(conversation.title) ?? '', turns: turns.done() }
}

/** The nodes from the root to `current` (or to the newest leaf when it is missing), in order. */
function currentBranch(mapping: Json, current: string | undefined, at: string): [string, Json][] {
  const leaf = current ?? newestLeaf(mapping)
  const branch: [string, Json][] = []
  const seen = new Set<string>()
  for (let key = leaf; key !== undefined; ) {
    if (seen.has(key)) throw malformed('ChatGPT', `${at}.mapping.${key}.parent`, 'a tree, without cycles')
    seen.add(key)
    const node = mapping[key]
    if (!isObject(node)) throw malformed('ChatGPT', `${at}.mapping.${key}`, 'a message node')
    branch.push([key, node])
    key = node.parent === null || node.parent === undefined ? undefined : text(node.parent)
  }
  return branch.reverse()
}

function newestLeaf(mapping: Json): string | undefined {
  const leaves = Object.entries(mapping).filter(([, node]) => isObject(node) && (!Array.isArray(node.children) || node.children.length === 0))
  return leaves.at(-1)?.[0]
}

function chatgptText(content: unknown): string | undefined {
  if (!isObject(content)) return undefined
  switch (content.content_type) {
    case 'text':
    case 'multimodal_text':
      return Array.isArray(content.parts) ? content.parts.filter((p): p is string => typeof p === 'string').join('\n') : undefined
    case 'code':
    case 'execution_output':
      return text(content.text)
    default:
      // Browsing displays, reasoning, custom instructions: not part of the exchange.
      return undefined
  }
}

// Claude.ai: `chat_messages` in order, each with `sender`, `text` and typed `content` blocks.

function claudeConversation(conversation: Json, at: string): ChatConversation {
  const id = text(conversation.uuid)
  if (!id) throw malformed('Claude', `${at}.uuid`, 'a string')
  const messages = conversation.chat_messages
  if (!Array.isArray(messages)) throw malformed('Claude', `${at}.chat_messages`, 'a list of messages')
  const started = isoTime(conversation.created_at)
  const turns = new TurnBuilder()
  messages.forEach((message: unknown, i) => {
    const where = `${at}.chat_messages[${i}]`
    if (!isObject(message)) throw malformed('Claude', where, 'an object')
    const sender = text(message.sender)
    if (sender !== 'human' && sender !== 'assistant') throw malformed('Claude', `${where}.sender`, '"human" or "assistant"')
    const blocks = Array.isArray(message.content) ? message.content.filter(isObject) : []
    const said = text(message.text) || blocks.flatMap((b) => (b.type === 'text' && typeof b.text === 'string' ? [b.text] : [])).join('\n')
    if (sender === 'human') {
      const when = isoTime(message.created_at) ?? started
      if (when === undefined) throw malformed('Claude', `${where}.created_at`, 'a time')
      if (said.trim()) turns.user(said, when)
      return
    }
    for (const block of blocks) {
      if (block.type === 'tool_use' && text(block.name)) turns.procedure({ tool: text(block.name) as string, args: isObject(block.input) ? (block.input as JsonObject) : {} })
      if (block.type === 'tool_result') turns.output(text(block.name) ?? 'tool', blockText(block.content))
    }
    if (said.trim()) turns.reply(said)
  })
  return { id, title: text(conversation.name) ?? '', turns: turns.done() }
}

function blockText(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.flatMap((b: unknown) => (isObject(b) && typeof b.text === 'string' ? [b.text] : [])).join('\n')
}

function malformed(name: string, at: string, expected: string): MemoryError {
  return new MemoryError('INVALID_INPUT', `Not a ${name} export: ${at} should be ${expected}.`, { details: { at } })
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/** A ChatGPT time: seconds since 1970, with a fraction. */
function seconds(value: unknown): string | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? new Date(value * 1000).toISOString() : undefined
}

function isoTime(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  const time = Date.parse(value)
  return Number.isNaN(time) ? undefined : new Date(time).toISOString()
}
