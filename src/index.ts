export {
  type ClientOf,
  type CreateMemoryOptions,
  connectMemory,
  createMemory,
  type Memory,
  type StorageKind,
} from './client/create-memory.ts'
export { ERROR_CODES, type ErrorCode, MemoryError } from './core/errors.ts'
