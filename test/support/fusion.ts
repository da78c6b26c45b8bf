/**
 * z-scores as the engine standardises a list: `z(x)` = (x − mean) / population standard
 * deviation of `scores`; `floor` is the z of the lowest of them (what a missing entry counts).
 */
export function standardise(scores: number[]): { z: (x: number) => number; floor: number } {
  const mean = scores.reduce((a, b) => a + b, 0) / scores.length
  const sd = Math.sqrt(scores.reduce((a, b) => a + (b - mean) ** 2, 0) / scores.length)
  return { z: (x: number) => (x - mean) / sd, floor: (Math.min(...scores) - mean) / sd }
}

/**
 * Texts with pinned vectors (for `createTestEmbedder({ dims: 8, table })`) where `strong`
 * holds both query words, far above the rest of the keyword list, while the vector list
 * barely prefers `barely`: z-score fusion ranks `strong` first, reciprocal rank `barely`.
 */
export function standoutCase() {
  const query = 'quokka habitat'
  const strong = 'quokka habitat survey on the island'
  const barely = 'a habitat note'
  const at = (x: number) => [x, Math.sqrt(1 - x * x), 0]
  const weak = ['habitat maps for the river valley project', 'habitat loss in the old forest region', 'habitat of the coastal birds this year']
  const near = ['island ferry times', 'island weather report', 'island camping rules', 'island bike hire']
  const table: Record<string, number[]> = { [query]: [1, 0, 0], [strong]: at(0.9), [barely]: at(0.999) }
  for (const text of weak) table[text] = at(0.85)
  for (const text of near) table[text] = at(0.92)
  return { query, strong, barely, others: [...weak, ...near], table }
}
