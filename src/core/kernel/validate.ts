import { type ZodType, z } from 'zod'
import { MemoryError } from './errors.ts'
import { inputProblem } from './input-walk.ts'

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
  // Postgres text cannot hold NUL or half a surrogate pair, and no depth may reach the
  // schema's recursion: refused here for every string of every input, ids and queries
  // included, before any of it reaches a statement.
  const problem = inputProblem(value)
  if (problem) {
    const path = problem.path.join('.')
    throw new MemoryError(code, `Invalid ${what}${path ? ` at "${path}"` : ''}: ${problem.message}`, {
      details: { issues: [{ path, message: problem.message }] },
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
