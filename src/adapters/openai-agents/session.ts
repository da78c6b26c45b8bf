import type { AgentInputItem, Session } from '@openai/agents'
import type { Channel } from '../../core/kernel/scope.ts'
import type { MemoryEvent, RecordInput } from '../../core/log/events.ts'

/** What the session needs of a memory: one from `createMemory` or `openMemory` has it. */
export interface SessionMemory {
  record(input: RecordInput): Promise<unknown>
  events: {
    list(input: { conversationId: string; tenantId?: string; channel?: Channel; limit?: number }): Promise<MemoryEvent[]>
  }
  forget(target: { conversationId: string; tenantId?: string } | { eventId: string; tenantId?: string }): Promise<unknown>
}

export interface EngramSessionOptions {
  /** The conversation that holds the session; it is also the session's id. */
  conversationId: string
  /** Whose conversation it is (`tenantId`, `userId`, `agentId`). */
  scope?: { tenantId?: string; userId?: string; agentId?: string }
  /** Default `private`. */
  channel?: Channel
}

/** Items read back at most: the event list's own limit. */
const MAX_ITEMS = 10_000

/**
 * A session of the OpenAI Agents SDK kept in one conversation of the memory's event log. A
 * message is a message event, a function call a tool_call event and its result a tool_result
 * event, searchable like any other; other items (reasoning, hosted tools) are kept as artifact
 * events. Each comes back as the item it was. `popItem` and `clearSession` forget for good.
 *
 * @example
 * import { run } from '@openai/agents'
 * import { EngramSession } from 'engram/openai-agents'
 * const session = new EngramSession(memory, { conversationId: 'chat-42', scope: { userId: 'alice' } })
 * await run(agent, 'What did I ask yesterday?', { session })
 */
export class EngramSession implements Session {
  readonly #memory: SessionMemory
  readonly #options: EngramSessionOptions

  constructor(memory: SessionMemory, options: EngramSessionOptions) {
    this.#memory = memory
    this.#options = options
  }

  async getSessionId(): Promise<string> {
    return this.#options.conversationId
  }

  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const items = (await this.#events()).map((e) => e.content.item as AgentInputItem)
    return limit === undefined ? items : limit <= 0 ? [] : items.slice(-limit)
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    for (const item of items) {
      await this.#memory.record({
        ...eventOf(item),
        scope: { ...this.#options.scope, conversationId: this.#options.conversationId },
        ...(this.#options.channel ? { channel: this.#options.channel } : {}),
      })
    }
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    const last = (await this.#events()).at(-1)
    if (!last) return undefined
    await this.#memory.forget({ eventId: last.id, ...this.#tenant() })
    return last.content.item as AgentInputItem
  }

  async clearSession(): Promise<void> {
    await this.#memory.forget({ conversationId: this.#options.conversationId, ...this.#tenant() })
  }

  async #events(): Promise<MemoryEvent[]> {
    const events = await this.#memory.events.list({
      conversationId: this.#options.conversationId,
      ...this.#tenant(),
      ...(this.#options.channel ? { channel: this.#options.channel } : {}),
      limit: MAX_ITEMS,
    })
    return events.filter((e) => typeof e.content.item === 'object' && e.content.item !== null)
  }

  #tenant(): { tenantId?: string } {
    return this.#options.scope?.tenantId ? { tenantId: this.#options.scope.tenantId } : {}
  }
}

type EventPart = Pick<RecordInput, 'kind' | 'actor' | 'content'>

/** The event an item is kept as: its kind, who acted, and its text beside the item itself. */
function eventOf(item: AgentInputItem): EventPart {
  const stored = JSON.parse(JSON.stringify(item)) as RecordInput['content']
  if (item.type === 'function_call') {
    return { kind: 'tool_call', actor: { type: 'agent', id: 'assistant' }, content: { tool: item.name, item: stored } }
  }
  if (item.type === 'function_call_result') {
    return { kind: 'tool_result', actor: { type: 'tool', id: item.name }, content: { tool: item.name, output: textOf(item.output), item: stored } }
  }
  if ('role' in item && (item.type === undefined || item.type === 'message')) {
    const actor = item.role === 'user' ? { type: 'human' as const, id: 'user' } : { type: 'agent' as const, id: item.role }
    return { kind: 'message', actor, content: { text: textOf(item.content), item: stored } }
  }
  return { kind: 'artifact', actor: { type: 'agent', id: 'assistant' }, content: { item: stored } }
}

/** The text of a message's content or a tool's output: a string, or the text of its parts. */
function textOf(value: unknown): string {
  if (typeof value === 'string') return value
  const parts = Array.isArray(value) ? value : [value]
  return parts
    .flatMap((p: unknown) => (typeof p === 'object' && p !== null && typeof (p as { text?: unknown }).text === 'string' ? [(p as { text: string }).text] : []))
    .join('\n')
}
