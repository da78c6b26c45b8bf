import { MemoryError } from '../kernel/errors.ts'
import { checkArgumentDepth } from '../kernel/input-walk.ts'

interface PgError {
  code: string
  message: string
}

function isPgError(value: unknown): value is PgError {
  return (
    value instanceof Error && typeof (value as Partial<PgError>).code === 'string' && !MemoryError.is(value)
  )
}

/**
 * Turns anything thrown below the API into a MemoryError with a stable code: the
 * append-only guard (SQLSTATE EG001) becomes APPEND_ONLY, a unique violation CONFLICT, a
 * program limit (a value too large to store) INVALID_INPUT, an out-of-memory in the database
 * or the browser's QuotaExceededError QUOTA_EXCEEDED; the
 * rest INTERNAL, with the original as `cause`.
 */
export function toMemoryError(error: unknown): MemoryError {
  if (MemoryError.is(error)) return error
  if (isPgError(error)) {
    const details = { sqlstate: error.code }
    if (error.code === 'EG001') return new MemoryError('APPEND_ONLY', error.message, { cause: error, details })
    if (error.code === '23505') return new MemoryError('CONFLICT', error.message, { cause: error, details })
    if (error.code === '53200') return new MemoryError('QUOTA_EXCEEDED', error.message, { cause: error, details })
    // A program limit: a value too large for where it goes (an id past what its index holds,
    // a text past what jsonb holds). The statement failed whole; it is the input that is wrong.
    if (error.code === '54000') {
      return new MemoryError('INVALID_INPUT', `A value is too large to store: ${error.message}`, { cause: error, details })
    }
    return new MemoryError('INTERNAL', `Database error: ${error.message}`, { cause: error, details })
  }
  const message = error instanceof Error ? error.message : String(error)
  // The browser's storage running out under a write (the flush after a commit, for one).
  if ((error as { name?: unknown } | null)?.name === 'QuotaExceededError') {
    return new MemoryError('QUOTA_EXCEEDED', `The storage quota is exhausted: ${message}`, { cause: error })
  }
  return new MemoryError('INTERNAL', message, { cause: error })
}

export type Api = { [key: string]: unknown }

/**
 * A new plain object of `api`'s shape with each of its functions, and those of its nested
 * namespaces (plain objects), replaced by `wrap(fn, key, path)`, where `path` is dotted
 * (`memories.update`); the function is called on its own namespace.
 */
export function mapFunctions<T extends Api>(
  api: T,
  wrap: (call: (...args: unknown[]) => unknown, key: string, path: string) => (...args: unknown[]) => unknown,
  prefix = '',
): T {
  const out: Api = {}
  for (const [key, value] of Object.entries(api)) {
    if (typeof value === 'function') {
      const fn = value as (...args: unknown[]) => unknown
      out[key] = wrap((...args: unknown[]) => fn.apply(api, args), key, prefix + key)
    } else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
      out[key] = mapFunctions(value as Api, wrap, `${prefix}${key}.`)
    } else out[key] = value
  }
  return out as T
}

/** `call` with arguments too deep to walk refused first, and whatever escapes it a MemoryError. */
export function memoryErrors(call: (...args: unknown[]) => unknown, key: string) {
  return async (...args: unknown[]): Promise<unknown> => {
    checkArgumentDepth(key, args)
    try {
      return await call(...args)
    } catch (error) {
      throw toMemoryError(error)
    }
  }
}

/**
 * Wraps every function of an API object (and of its nested namespaces) with `memoryErrors`.
 * Returns a new plain object of the same shape.
 */
export function withMemoryErrors<T extends Api>(api: T): T {
  return mapFunctions(api, memoryErrors)
}
