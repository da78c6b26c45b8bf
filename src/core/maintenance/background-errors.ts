import { toMemoryError as fromDatabaseError } from '../db/errors.ts'
import { type ErrorCode, MemoryError } from '../kernel/errors.ts'

/** A database failure in background work, with the code a call would have thrown and what was being done. */
export function backgroundError(cause: unknown, what: string): MemoryError {
  const error = fromDatabaseError(cause)
  return new MemoryError(error.code, `${what}: ${error.message}`, {
    cause,
    ...(error.details ? { details: error.details } : {}),
  })
}

/** `error` as a `MemoryError`: kept when it is one, else with `code` and what was being done. */
export function withCode(error: unknown, code: ErrorCode, what: string): MemoryError {
  if (error instanceof MemoryError) return error
  const message = error instanceof Error ? error.message : String(error)
  return new MemoryError(code, `${what}: ${message}`, { cause: error })
}
