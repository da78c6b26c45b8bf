/**
 * Engram for the OpenAI Agents SDK (`@openai/agents`): `EngramSession` keeps an agent's session in
 * one conversation of the memory, and `memoryFunctionTools` gives the agent the memory tools.
 */
export { EngramSession, type EngramSessionOptions, type SessionMemory } from './session.ts'
export { memoryFunctionTools, type ToolMemory } from './tools.ts'
export { ERROR_CODES, type ErrorCode, MemoryError } from '../../core/kernel/errors.ts'
