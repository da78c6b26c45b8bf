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
  const nul = nulAt(value, new Set())
  if (nul) {
    const path = nul.join('.')
    throw new MemoryError(code, `Invalid ${what}${path ? ` at "${path}"` : ''}: ${NUL_PROBLEM}`, {
      details: { issues: [{ path, message: NUL_PROBLEM }] },
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

/** Why Postgres text cannot hold a string with NUL in it (also json.ts's `textProblem`). */
export const NUL_PROBLEM = 'contains a NUL character, which cannot be stored'

/**
 * The path below `value` to the first string holding NUL in plain objects, arrays and keys
 * (built only once one is found), or null.
 */
function nulAt(value: unknown, seen: Set<object>): (string | number)[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? [] : null
  if (typeof value !== 'object' || value === null || seen.has(value)) return null
  if (Array.isArray(value)) {
    seen.add(value)
    for (let i = 0; i < value.length; i++) {
      const found = nulAt(value[i], seen)
      if (found) return [i, ...found]
    }
    return null
  }
  const proto = Object.getPrototypeOf(value) as unknown
  if (proto !== Object.prototype && proto !== null) return null
  seen.add(value)
  for (const [key, item] of Object.entries(value)) {
    if (key.includes('\u0000')) return [key]
    const found = nulAt(item, seen)
    if (found) return [key, ...found]
  }
  return null
}
