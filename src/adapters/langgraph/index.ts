/**
 * Engram for LangGraph: `EngramStore` is its long-term memory store (`BaseStore`) over the
 * memory's kv store, searched by meaning with the memory's own model.
 */
export { EngramStore, type EngramStoreOptions, type StoreMemory } from './store.ts'
export { ERROR_CODES, type ErrorCode, MemoryError } from '../../core/kernel/errors.ts'
