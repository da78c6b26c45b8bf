export {
  type ClientOf,
  type CreateMemoryOptions,
  connectMemory,
  createMemory,
  type Memory,
  type StorageKind,
} from './client/create-memory.ts'
export { ERROR_CODES, type ErrorCode, MemoryError } from './core/errors.ts'
export { deleteMemory, listMemories, type MemoryRecord } from './client/registry.ts'
export type { BootInfo, Role, StorageInfo } from './worker/host.ts'
export type { SearchExplain, SearchHit, SearchMode, SearchOptions } from './core/search.ts'
export type { Scoring, ScoringInput } from './core/scoring.ts'
export type {
  BuildContextInput,
  ContextBundle,
  ContextItem,
  ContextOmission,
  ContextSection,
  SectionName,
} from './core/context.ts'
