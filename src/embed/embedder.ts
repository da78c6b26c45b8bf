import { MemoryError } from '../core/errors.ts'

/**
 * Turns texts into vectors. The engine depends on this interface only, so any model (the
 * bundled MiniLM, a remote API, a test double) can fill the vector columns.
 */
export interface Embedder {
  /**
   * Stable name of the model and its numeric variant, e.g. `all-MiniLM-L6-v2/q8`. Stored
   * next to every vector: vectors from different ids are not comparable.
   */
  readonly id: string
  /** Length of every vector `embed` returns. */
  readonly dims: number
  /**
   * One L2-normalised vector per text, in input order.
   *
   * @example
   * const [vector] = await embedder.embed(['fix the login bug'])
   */
  embed(texts: string[], options?: EmbedOptions): Promise<Float32Array[]>
}

export interface EmbedOptions {
  /** Stops between batches with a MemoryError `ABORTED`. */
  signal?: AbortSignal
}

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
