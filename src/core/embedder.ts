/**
 * Turns texts into vectors. The engine depends on this shape only, so any model (the bundled
 * MiniLM, a remote API, a test stub) can be plugged in.
 *
 * @example
 * const [v] = await embedder.embed(['fix the login bug'])
 */
export interface Embedder {
  /** Model id stored next to each vector, so vectors of different models are never compared. */
  readonly id: string
  readonly dims: number
  embed(texts: string[], options?: { signal?: AbortSignal }): Promise<Float32Array[]>
}

/**
 * How a vector travels to SQL. Text today; one place to swap for the binary pgvector
 * encoding.
 */
export function toVectorParam(v: Float32Array | readonly number[]): string {
  return `[${Array.from(v).join(',')}]`
}

/** Embeds one text and checks the embedder kept its promise about dimensions. */
export async function embedOne(embedder: Embedder, text: string): Promise<Float32Array> {
  const [v] = await embedder.embed([text])
  if (!v || v.length !== embedder.dims) {
    throw new Error(`embedder ${embedder.id} returned ${v?.length ?? 0} dims, expected ${embedder.dims}`)
  }
  return v
}
