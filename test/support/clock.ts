/** A pinned clock for tests: `now()` returns the set time; `advance` moves it. */
export function testClock(start = '2025-02-09T10:00:00.000Z') {
  let t = new Date(start).getTime()
  return {
    now: () => new Date(t),
    set(iso: string) {
      t = new Date(iso).getTime()
    },
    advance(ms: number) {
      t += ms
    },
  }
}

export const DAY = 86_400_000

/** A pinned clock for tests: each reading is one second after the previous one. */
export function steppingClock(start = Date.parse('2025-03-01T10:00:00Z'), stepMs = 1000): () => Date {
  let t = start
  return () => {
    t += stepMs
    return new Date(t)
  }
}
