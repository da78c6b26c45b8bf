/**
 * Every failure Engram reports is a `MemoryError` with a stable `code`: match on the code,
 * show the message to a person. The class, code, details and cause survive the worker boundary.
 */
export const ERROR_CODES = [
  'INVALID_INPUT',
  'INVALID_FILTER',
  'SCOPE_REQUIRED',
  'NOT_FOUND',
  'CONFLICT',
  'APPEND_ONLY',
  'PATH_OUTSIDE_ROOT',
  'UNKNOWN_RELATION',
  'IMPORT_CORRUPT',
  'IMPORT_UNSUPPORTED_VERSION',
  'SCHEMA_TOO_NEW',
  'WRONG_PASSPHRASE',
  'VAULT_LOCKED',
  'STORAGE_UNAVAILABLE',
  'QUOTA_EXCEEDED',
  'BOOT_TIMEOUT',
  'WORKER_TERMINATED',
  'LOCKED_BY_OTHER_TAB',
  'LOCKED_BY_OTHER_PROCESS',
  'UNAUTHORIZED',
  'MODEL_LOADING',
  'MODEL_UNAVAILABLE',
  'LLM_UNAVAILABLE',
  'NOT_SUPPORTED',
  'CLOSED',
  'ABORTED',
  'TIMEOUT',
  'CORRUPT',
  'INTERNAL',
] as const

export type ErrorCode = (typeof ERROR_CODES)[number]

export interface MemoryErrorOptions {
  cause?: unknown
  /** Machine-readable context, e.g. the offending field path. Must be structured-cloneable. */
  details?: Record<string, unknown>
}

export class MemoryError extends Error {
  override readonly name = 'MemoryError'
  readonly code: ErrorCode
  readonly details: Record<string, unknown> | undefined

  constructor(code: ErrorCode, message: string, options: MemoryErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.details = options.details
  }

  static is(value: unknown, code?: ErrorCode): value is MemoryError {
    return value instanceof MemoryError && (code === undefined || value.code === code)
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value)
}
