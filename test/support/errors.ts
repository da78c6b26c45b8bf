import { MemoryError } from '../../src/core/kernel/errors.ts'

/** The code a call fails with: `none` when it succeeds, a note when what it throws is not a MemoryError. */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
    return 'none'
  } catch (error) {
    return MemoryError.is(error) ? error.code : `not a MemoryError: ${String(error)}`
  }
}
