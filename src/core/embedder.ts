/**
 * Turns texts into vectors. The engine depends on this shape only, so any model (the bundled
 * MiniLM, a remote API, a test stub) can be plugged in.
 *
 * @example
 * const [v] = await embedder.embed(['fix the login bug'])
 */
export interface Embedder {
  /**
   * Stable name of the model and its numeric variant, e.g. `all-MiniLM-L6-v2/q8`. Stored
   * next to every vector: vectors from different ids are never compared.
   */
  readonly id: string
  /** Length of every vector `embed` returns. */
  readonly dims: number
  /**
   * Texts per model call, when the embedder works in batches: background indexing hands it
   * no more at once, so it can yield to writes between calls.
   */
  readonly batchSize?: number
  /** One L2-normalised vector per text, in input order. */
  embed(texts: string[], options?: EmbedOptions): Promise<Float32Array[]>
}

export interface EmbedOptions {
  /** Stops between batches with a MemoryError `ABORTED`. */
  signal?: AbortSignal
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
