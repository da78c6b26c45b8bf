import { MemoryError } from '../kernel/errors.ts'
import { z } from '../kernel/validate.ts'

export const waitOptions = z.strictObject({
  timeoutMs: z.number().int().min(1).optional(),
  signal: z.custom<AbortSignal>((v) => typeof AbortSignal !== 'undefined' && v instanceof AbortSignal).optional(),
})
export type WaitForIndexOptions = z.input<typeof waitOptions>

/**
 * Runs `work`, then `then` with its result, unless `timeoutMs` passes first (`TIMEOUT`) or
 * `signal` aborts (`ABORTED`) while `work` runs; the timer and the abort listener stay until
 * `then` is done.
 */
export async function withinLimits<T, R>(
  work: () => Promise<T>,
  then: (value: T) => Promise<R>,
  timeoutMs: number | undefined,
  signal: AbortSignal | undefined,
): Promise<R> {
  let timeout: ReturnType<typeof setTimeout> | undefined
  const limits: Promise<never>[] = []
  if (timeoutMs !== undefined) {
    const ms = timeoutMs
    limits.push(
      new Promise<never>((_, reject) => {
        timeout = setTimeout(
          () => reject(new MemoryError('TIMEOUT', `The index was not complete within ${ms} ms.`)),
          ms,
        )
      }),
    )
  }
  let onAbort: (() => void) | undefined
  if (signal) {
    limits.push(
      new Promise<never>((_, reject) => {
        onAbort = () =>
          reject(new MemoryError('ABORTED', 'Waiting for the index was cancelled', { cause: signal.reason }))
        if (signal.aborted) onAbort()
        else signal.addEventListener('abort', onAbort, { once: true })
      }),
    )
  }
  try {
    const value = await Promise.race([work(), ...limits])
    return await then(value)
  } finally {
    if (timeout) clearTimeout(timeout)
    if (signal && onAbort) signal.removeEventListener('abort', onAbort)
  }
}
