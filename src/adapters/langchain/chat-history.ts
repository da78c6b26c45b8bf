import { BaseListChatMessageHistory } from '@langchain/core/chat_history'
import {
  type BaseMessage,
  mapChatMessagesToStoredMessages,
  mapStoredMessagesToChatMessages,
  type StoredMessage,
} from '@langchain/core/messages'
import type { Channel } from '../../core/kernel/scope.ts'
import type { MemoryEvent, RecordInput } from '../../core/log/events.ts'

/** What the history needs of a memory: one from `createMemory` or `openMemory` has it. */
export interface HistoryMemory {
  record(input: RecordInput): Promise<unknown>
  events: {
    list(input: { conversationId: string; tenantId?: string; channel?: Channel; kinds?: ['message']; limit?: number }): Promise<MemoryEvent[]>
  }
  forget(target: { conversationId: string; tenantId?: string }): Promise<unknown>
}

export interface EngramChatHistoryOptions {
  conversationId: string
  /** Whose conversation it is (`tenantId`, `userId`, `agentId`). */
  scope?: { tenantId?: string; userId?: string; agentId?: string }
  /** Default `private`. */
  channel?: Channel
}

/** Messages read back at most: the event list's own limit. */
const MAX_MESSAGES = 10_000

/**
 * A LangChain chat message history kept in one conversation of the memory's event log. Each
 * message is an event, searchable like any other, and comes back as the message it was (tool
 * calls included). `clear` forgets the conversation for good.
 *
 * @example
 * import { EngramChatHistory } from 'engram/langchain'
 * const history = new EngramChatHistory(memory, { conversationId: 'chat-42', scope: { userId: 'alice' } })
 * await history.addMessages([new HumanMessage('hi'), new AIMessage('hello')])
 */
export class EngramChatHistory extends BaseListChatMessageHistory {
  lc_namespace = ['engram', 'chat_history']
  readonly #memory: HistoryMemory
  readonly #options: EngramChatHistoryOptions

  constructor(memory: HistoryMemory, options: EngramChatHistoryOptions) {
    super()
    this.#memory = memory
    this.#options = options
  }

  async getMessages(): Promise<BaseMessage[]> {
    const events = await this.#memory.events.list({
      conversationId: this.#options.conversationId,
      ...(this.#options.scope?.tenantId ? { tenantId: this.#options.scope.tenantId } : {}),
      ...(this.#options.channel ? { channel: this.#options.channel } : {}),
      kinds: ['message'],
      limit: MAX_MESSAGES,
    })
    const stored = events.flatMap((e) => (isStored(e.content.langchain) ? [e.content.langchain] : []))
    return mapStoredMessagesToChatMessages(stored)
  }

  async addMessage(message: BaseMessage): Promise<void> {
    await this.addMessages([message])
  }

  override async addMessages(messages: BaseMessage[]): Promise<void> {
    const stored = mapChatMessagesToStoredMessages(messages)
    for (const [i, message] of messages.entries()) {
      const type = message.getType()
      await this.#memory.record({
        kind: 'message',
        scope: { ...this.#options.scope, conversationId: this.#options.conversationId },
        ...(this.#options.channel ? { channel: this.#options.channel } : {}),
        actor: { type: type === 'human' ? 'human' : type === 'tool' ? 'tool' : 'agent', id: type },
        content: { text: message.text, langchain: JSON.parse(JSON.stringify(stored[i])) as RecordInput['content'] },
      })
    }
  }

  override async clear(): Promise<void> {
    await this.#memory.forget({
      conversationId: this.#options.conversationId,
      ...(this.#options.scope?.tenantId ? { tenantId: this.#options.scope.tenantId } : {}),
    })
  }
}

function isStored(value: unknown): value is StoredMessage {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
}
