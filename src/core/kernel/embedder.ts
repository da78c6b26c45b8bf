import { MemoryError } from './errors.ts'
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
  /**
   * The same vectors from a second instance of the model, for background indexing, so a
   * caller's `embed` never waits behind it. Without it the indexer uses `embed`.
   */
  background?(texts: string[]): Promise<Float32Array[]>
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

/** An embedder's failure as the caller sees it: MODEL_UNAVAILABLE, or the MemoryError it threw. */
export function embedderFailed(embedder: { id: string }, cause: unknown): MemoryError {
  if (cause instanceof MemoryError) return cause
  return new MemoryError('MODEL_UNAVAILABLE', `The embedder "${embedder.id}" failed: ${String(cause)}`, { cause })
}

/** Embeds one text and checks the embedder kept its promise about dimensions. */
export async function embedOne(embedder: Embedder, text: string): Promise<Float32Array> {
  const [v] = await embedder.embed([text])
  if (!v || v.length !== embedder.dims) {
    throw new Error(`embedder ${embedder.id} returned ${v?.length ?? 0} dims, expected ${embedder.dims}`)
  }
  return v
}

/**
 * The vectors of the last texts embedded one at a time — queries, memories, a fact searched
 * for and then saved — by model and text, so a text asked about again is not embedded again.
 * Least recently used out first; a failed embedding is not kept. The vectors are shared:
 * callers read them and never write to them.
 */
export class VectorCache {
  readonly #entries = new Map<string, Promise<Float32Array>>()
  constructor(readonly limit = 64) {}

  embed(embedder: Embedder, text: string): Promise<Float32Array> {
    const key = `${embedder.id}\u0000${text}`
    const hit = this.#entries.get(key)
    if (hit) {
      this.#entries.delete(key)
      this.#entries.set(key, hit)
      return hit
    }
    const made = embedOne(embedder, text)
    this.#entries.set(key, made)
    made.catch(() => {
      if (this.#entries.get(key) === made) this.#entries.delete(key)
    })
    if (this.#entries.size > this.limit) this.#entries.delete(this.#entries.keys().next().value as string)
    return made
  }
}
