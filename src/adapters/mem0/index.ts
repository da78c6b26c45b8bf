/**
 * The mem0-compatible API (`Memory`: add / search / get / getAll / update / delete / history /
 * reset) over any Engram memory: one made with `createMemory` in the browser, or with
 * `openMemory` in Node. With an OpenAI-compatible model (`openAICompatibleLLM`) it extracts
 * facts and decides what to add, update or delete; without one it stores what the user says.
 *
 * @example
 * import { createMemory } from 'engram'
 * import { Memory } from 'engram/mem0'
 * const mem = new Memory(await createMemory())
 * await mem.add('I prefer dark mode', { userId: 'alice' })
 * const { results } = await mem.search('display settings', { userId: 'alice' })
 */
export type { FilterExpression } from '../../core/db/filters.ts'
export { type LLM, openAICompatibleLLM, type OpenAICompatibleOptions } from './llm.ts'
export {
  type ChatMessage,
  FACT_EXTRACTION_PROMPT,
  GRAPH_ENTITY_TYPES,
  GRAPH_EXTRACTION_PROMPT,
  type Mem0AddOptions,
  type Mem0Event,
  type Mem0GetAllOptions,
  type Mem0History,
  type Mem0Item,
  type Mem0Relation,
  type Mem0SearchOptions,
  Memory,
  type MemoryEngine,
  type MemoryGraph,
  type MemoryOptions,
  UPDATE_DECISION_PROMPT,
} from './facade.ts'
export { ERROR_CODES, type ErrorCode, MemoryError } from '../../core/kernel/errors.ts'
