import type { Embedder } from '../../src/core/kernel/embedder.ts'

export interface TestEmbedderOptions {
  dims?: number
  /** Exact texts with fixed vectors (padded with zeros, normalised), to force similarities. */
  table?: Record<string, readonly number[]>
  /** Texts for which `embed` throws, to test failure paths. */
  failOn?: (text: string) => boolean
  id?: string
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

function normalise(v: Float32Array): Float32Array {
  let n = 0
  for (const x of v) n += x * x
  const len = Math.sqrt(n)
  if (len > 0) for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) / len
  return v
}

/**
 * A deterministic embedder for tests: bag of words hashed into `dims` buckets (signed),
 * L2-normalised, so texts sharing words are similar. `table` pins exact texts to vectors.
 */
export function createTestEmbedder(options: TestEmbedderOptions = {}): Embedder & { calls: number } {
  const dims = options.dims ?? 384
  const table = new Map(Object.entries(options.table ?? {}))
  const embedder = {
    id: options.id ?? `test-bow-${dims}`,
    dims,
    calls: 0,
    async embed(texts: string[]): Promise<Float32Array[]> {
      embedder.calls++
      return texts.map((text) => {
        if (options.failOn?.(text)) throw new Error(`test embedder refuses "${text}"`)
        const v = new Float32Array(dims)
        const fixed = table.get(text)
        if (fixed) {
          fixed.forEach((x, i) => {
            if (i < dims) v[i] = x
          })
          return normalise(v)
        }
        for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
          const h = fnv1a(word)
          v[h % dims] = (v[h % dims] as number) + (h & 0x80000000 ? -1 : 1)
        }
        return normalise(v)
      })
    },
  }
  return embedder
}

/** A unit vector at `cos` similarity to the unit axis e0 (in the e0/e1 plane). */
export function atSimilarity(cos: number): number[] {
  return [cos, Math.sqrt(1 - cos * cos)]
}
