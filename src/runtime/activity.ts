/**
 * Calls in flight and when the last one ended (`performance.now()`): what background work
 * looks at to find a quiet moment.
 */
export class Activity {
  pending = 0
  lastEnded = performance.now()

  /** Runs `fn`, counted as in flight until it settles. */
  async track<T>(fn: () => Promise<T>): Promise<T> {
    this.pending++
    try {
      return await fn()
    } finally {
      this.pending--
      this.lastEnded = performance.now()
    }
  }
}
