/**
 * The history users already have: `importChatHistory` records the conversations of a ChatGPT or
 * Claude.ai data export (`conversations.json`) as turns with their original times.
 */
export type { ChatConversation, ChatProcedure, ChatSource, ChatTurn } from './formats.ts'
export {
  type ChatHistoryMemory,
  type ChatHistoryProgress,
  importChatHistory,
  type ImportChatHistoryOptions,
  type ImportChatHistoryResult,
  type ImportedConversation,
} from './import.ts'
