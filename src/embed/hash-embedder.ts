import type { Embedder } from './embedder.ts'
import { normalizeInPlace, throwIfAborted } from './embedder.ts'

export interface HashEmbedderOptions {
  /** Vector length; 384 matches the bundled model so schemas need no change in tests. */
  dims?: number
}

/**
 * A tiny deterministic embedder for tests: each lowercased word token is hashed (FNV-1a)
 * into one of `dims` buckets with a ±1 sign, and the vector is L2-normalised. Texts that
 * share words come out similar; it knows nothing of meaning ("car" and "automobile" are
 * unrelated). Instant, offline, same output on every platform.
 *
 * @example
 * const embedder = createHashEmbedder()
 * const [a, b] = await embedder.embed(['login bug', 'the login bug again'])
 */
export function createHashEmbedder(options: HashEmbedderOptions = {}): Embedder {
  const dims = options.dims ?? 384
  if (!Number.isInteger(dims) || dims < 1) throw new RangeError(`dims must be a positive integer, got ${dims}`)
  return {
    id: `hash/${dims}`,
    dims,
    embed: (texts, embedOptions) =>
      new Promise((resolve) => {
        throwIfAborted(embedOptions?.signal, 'Embedding')
        resolve(texts.map((text) => hashVector(text, dims)))
      }),
  }
}

const WORD = /[\p{L}\p{N}_]+/gu

function hashVector(text: string, dims: number): Float32Array {
  const vector = new Float32Array(dims)
  for (const [token] of text.toLowerCase().matchAll(WORD)) {
    const h = fnv1a(token)
    // The top bit picks the sign so colliding tokens partly cancel instead of piling up.
    vector[h % dims]! += h & 0x80000000 ? -1 : 1
  }
  return normalizeInPlace(vector)
}

function fnv1a(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}
