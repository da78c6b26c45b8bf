import { type ZodType, z } from 'zod'
import { MemoryError } from './errors.ts'

/**
 * Validates input at the API edge, once. Failures become INVALID_INPUT (or the given code)
 * with the offending paths in `details.issues`, so nothing below ever sees bad input.
 */
export function parseInput<T>(
  schema: ZodType<T>,
  value: unknown,
  what: string,
  code: 'INVALID_INPUT' | 'INVALID_FILTER' = 'INVALID_INPUT',
): T {
  // Postgres text cannot hold NUL: refused here for every string of every input, ids and
  // queries included, before any of it reaches a statement.
  const nul = nulAt(value, [], new Set())
  if (nul) {
    const path = nul.join('.')
    const message = 'contains a NUL character, which cannot be stored'
    throw new MemoryError(code, `Invalid ${what}${path ? ` at "${path}"` : ''}: ${message}`, {
      details: { issues: [{ path, message }] },
    })
  }
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const issues = result.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }))
  const first = issues[0]
  const where = first?.path ? ` at "${first.path}"` : ''
  throw new MemoryError(code, `Invalid ${what}${where}: ${first?.message ?? 'malformed input'}`, {
    details: { issues },
    cause: result.error,
  })
}

export { z }

/** The path of the first string holding NUL in plain objects, arrays and keys, or null. */
function nulAt(value: unknown, path: (string | number)[], seen: Set<object>): (string | number)[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null
  if (typeof value !== 'object' || value === null || seen.has(value)) return null
  if (Array.isArray(value)) {
    seen.add(value)
    for (let i = 0; i < value.length; i++) {
      const found = nulAt(value[i], [...path, i], seen)
      if (found) return found
    }
    return null
  }
  const proto = Object.getPrototypeOf(value) as unknown
  if (proto !== Object.prototype && proto !== null) return null
  seen.add(value)
  for (const [key, item] of Object.entries(value)) {
    if (key.includes('\u0000')) return [...path, key]
    const found = nulAt(item, [...path, key], seen)
    if (found) return found
  }
  return null
}
