import type { Embedder } from '../kernel/embedder.ts'

/**
 * The longest a background model call should take (ms). A caller's embed (remember, recall,
 * a query) waits for at most the one background call in flight, so about this long.
 */
export const BACKGROUND_CALL_MS = 25

/** An embedder whose callers go ahead of background indexing. */
export interface LanedEmbedder extends Embedder {
  /**
   * Embeds for the background indexer: in model calls sized to last about
   * `BACKGROUND_CALL_MS`, each started only while no caller's embed is in flight.
   */
  background(texts: string[]): Promise<Float32Array[]>
}

/**
 * Wraps `inner` so that its callers never queue behind a whole background batch. `embed`
 * goes straight to the model; `background` waits until no `embed` is in flight before each
 * of its small calls. The call size follows the model's measured time per text, between one
 * text and `inner.batchSize` (32 when it has none, and for the first call, which is timed): a
 * fast model still embeds in large calls.
 *
 * @example
 * const laned = foregroundFirst(embedder)
 * await laned.background(chunkTexts) // yields to: await laned.embed(['a query'])
 */
export function foregroundFirst(inner: Embedder): LanedEmbedder {
  const most = Math.max(1, Math.floor(inner.batchSize ?? 32))
  let inFlight = 0
  let waiting: (() => void)[] = []
  /** Milliseconds per text of the last background calls (undefined: none timed yet). */
  let perText: number | undefined

  async function noCallers(): Promise<void> {
    while (inFlight > 0) await new Promise<void>((resolve) => waiting.push(resolve))
  }

  function callSize(): number {
    // The first call is timed at full size: a fast model (or a test stub) keeps its batches.
    if (perText === undefined) return most
    return Math.min(most, Math.max(1, Math.floor(BACKGROUND_CALL_MS / Math.max(perText, 0.01))))
  }

  return {
    id: inner.id,
    dims: inner.dims,
    ...(inner.batchSize === undefined ? {} : { batchSize: inner.batchSize }),
    async embed(texts, options) {
      inFlight++
      try {
        return await inner.embed(texts, options)
      } finally {
        if (--inFlight === 0) {
          const wake = waiting
          waiting = []
          for (const resolve of wake) resolve()
        }
      }
    },
    async background(texts) {
      const vectors: Float32Array[] = []
      while (vectors.length < texts.length) {
        await noCallers()
        const part = texts.slice(vectors.length, vectors.length + callSize())
        const began = performance.now()
        const made = await (inner.background ? inner.background(part) : inner.embed(part))
        const ms = (performance.now() - began) / part.length
        // Smoothed, so one slow call (a caller's embed ran alongside) does not halve the next.
        perText = perText === undefined ? ms : 0.7 * perText + 0.3 * ms
        if (made.length !== part.length) return [...vectors, ...made]
        vectors.push(...made)
      }
      return vectors
    },
  }
}
