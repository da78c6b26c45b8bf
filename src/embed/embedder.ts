import { MemoryError } from '../core/kernel/errors.ts'

// The interface lives in the engine, which depends on nothing else; implementations live here.
export type { EmbedOptions, Embedder } from '../core/kernel/embedder.ts'

/** The name the embedding worker runs under: its script serves its API only under this name. */
export const EMBED_WORKER_NAME = 'engram-embed'

/** Dot product; equals cosine similarity for the L2-normalised vectors embedders return. */
export function cosineSimilarity(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new RangeError(`vector lengths differ: ${a.length} vs ${b.length}`)
  let sum = 0
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!
  return sum
}

/** Scales a vector to unit length in place (a zero vector stays zero) and returns it. */
export function normalizeInPlace(vector: Float32Array): Float32Array {
  let sum = 0
  for (const v of vector) sum += v * v
  if (sum > 0) {
    const inv = 1 / Math.sqrt(sum)
    for (let i = 0; i < vector.length; i++) vector[i]! *= inv
  }
  return vector
}

/** Throws MemoryError `ABORTED` (with the signal's reason as cause) once `signal` has fired. */
export function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new MemoryError('ABORTED', `${what} was cancelled`, { cause: signal.reason })
}
