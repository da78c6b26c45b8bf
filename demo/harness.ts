import * as engram from '../src/index.ts'
import { createTransformersEmbedder } from '../src/embed/transformers-embedder.ts'
import workerUrl from '../workers/memory.worker.ts?worker&url'

declare global {
  interface Window {
    engram: typeof engram
    /** The built worker script, for tests that start it themselves (e.g. as a blob: worker). */
    engramWorkerUrl: string
    /** The embedder on the page itself (not in a worker), for the tests of that path. */
    engramEmbed: { createTransformersEmbedder: typeof createTransformersEmbedder }
    engramHarnessReady: boolean
  }
}

/** The browser tests drive the public API through this page. */
window.engram = engram
window.engramWorkerUrl = new URL(workerUrl, import.meta.url).href
window.engramEmbed = { createTransformersEmbedder }
window.engramHarnessReady = true
