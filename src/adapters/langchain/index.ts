/**
 * Engram for LangChain.js: `EngramRetriever` searches the memory as a retriever, and
 * `EngramChatHistory` keeps a chat's messages in one of its conversations.
 */
export { EngramRetriever, type EngramRetrieverInput, type SearchMemory } from './retriever.ts'
export { EngramChatHistory, type EngramChatHistoryOptions, type HistoryMemory } from './chat-history.ts'
export { ERROR_CODES, type ErrorCode, MemoryError } from '../../core/kernel/errors.ts'
