/**
 * Engram for the Vercel AI SDK (`ai`): `memoryMiddleware` gives a model the context of what it
 * learned before and records each turn; `memoryTools` lets it save and recall memories itself.
 * Works with a memory from `createMemory` (browser) or `openMemory` (Node).
 *
 * @example
 * import { wrapLanguageModel } from 'ai'
 * import { memoryMiddleware } from 'engram/ai-sdk'
 * const model = wrapLanguageModel({ model: base, middleware: memoryMiddleware(memory, { conversationId: 'c1' }) })
 */
export {
  type ContextMemory,
  type DocumentTouched,
  memoryMiddleware,
  type MemoryMiddlewareOptions,
  type ToolCallSeen,
} from './middleware.ts'
export { memoryTools, type ToolMemory } from './tools.ts'
export { ERROR_CODES, type ErrorCode, MemoryError } from '../../core/kernel/errors.ts'
