import type { ErrorCode, MemoryError } from '../kernel/errors.ts'

/** Where the background indexer stands. */
export interface IndexStatus {
  /** Chunks and active memories without a vector of the current model (all of them when there is no model). */
  pending: number
  /** Chunks and active memories whose vector is of the current model. */
  done: number
  /** The current embedder's id; vectors of any other model are ignored and re-embedded. */
  model: string | null
  /**
   * `loading`: the embedder is still starting; `ready`: it can embed; `unavailable`: it
   * failed to load (keyword search only); `none`: the memory has no embedder.
   */
  embedder: 'loading' | 'ready' | 'unavailable' | 'none'
  /** A batch is being embedded or written right now. */
  running: boolean
  /** The last failure, cleared by the next batch that succeeds. */
  lastError?: { code: ErrorCode; message: string }
}

/**
 * Something went wrong away from any call that could throw it: the embedding model failed
 * to load (`MODEL_UNAVAILABLE`) or a background batch failed. The memory keeps working.
 */
export interface EngineErrorEvent {
  code: ErrorCode
  message: string
  details?: Record<string, unknown>
  /** ISO time of the failure. */
  at: string
}

export type IndexProgressListener = (status: IndexStatus) => void
export type EngineErrorListener = (error: EngineErrorEvent) => void

/** A status of these counts, with the model, the embedder's state and the last error now. */
export function statusOf(
  counts: { pending: number; done: number },
  running: boolean,
  model: string | null,
  embedder: IndexStatus['embedder'],
  lastError: MemoryError | undefined,
): IndexStatus {
  return {
    ...counts,
    model,
    embedder,
    running,
    ...(lastError ? { lastError: { code: lastError.code, message: lastError.message } } : {}),
  }
}

/** The event the error listeners get for `error`, failed at `at`. */
export function errorEvent(error: MemoryError, at: Date): EngineErrorEvent {
  return {
    code: error.code,
    message: error.message,
    ...(error.details ? { details: error.details } : {}),
    at: at.toISOString(),
  }
}

/** Calls each listener with `value`; one that throws or rejects stops neither the others nor the indexer. */
export function tellListeners<T>(listeners: Iterable<(value: T) => void>, value: T): void {
  for (const listener of listeners) callListener(listener, value)
}

function callListener<T>(listener: (value: T) => void, value: T): void {
  try {
    // Across a worker boundary a listener is a proxy returning a promise; a closed page rejects it.
    const result: unknown = listener(value)
    if (result instanceof Promise) result.catch(() => {})
  } catch {
    // A broken observer must not stop the indexer.
  }
}
