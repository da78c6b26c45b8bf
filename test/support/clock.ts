/** A pinned clock for tests: each reading is one second after the previous one. */
export function steppingClock(start = Date.parse('2025-03-01T10:00:00Z'), stepMs = 1000): () => Date {
  let t = start
  return () => {
    t += stepMs
    return new Date(t)
  }
}
