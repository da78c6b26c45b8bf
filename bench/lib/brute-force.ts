/**
 * Exact cosine top-k over unit vectors of `dims` packed row after row in one Float32Array:
 * the floor for exact vector search in plain JS. Returns the rows, best first.
 */
export function bruteForceTopK(matrix: Float32Array, count: number, query: Float32Array, k: number, dims = query.length): number[] {
  const best = new Float64Array(k).fill(-Infinity)
  const ids = new Int32Array(k).fill(-1)
  for (let row = 0; row < count; row++) {
    let dot = 0
    const base = row * dims
    for (let i = 0; i < dims; i++) dot += matrix[base + i]! * query[i]!
    if (dot <= best[k - 1]!) continue
    let j = k - 1
    while (j > 0 && best[j - 1]! < dot) {
      best[j] = best[j - 1]!
      ids[j] = ids[j - 1]!
      j--
    }
    best[j] = dot
    ids[j] = row
  }
  return Array.from(ids)
}
