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
