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
