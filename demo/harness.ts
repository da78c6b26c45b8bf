import * as engram from '../src/index.ts'
import { createTransformersEmbedder } from '../src/embed/transformers-embedder.ts'
import workerUrl from '../workers/memory.worker.ts?worker&url'
import { IdbPageBackend } from '../src/worker/idb-pages.ts'

declare global {
  interface Window {
    engram: typeof engram
    /** The built worker script, for tests that start it themselves (e.g. as a blob: worker). */
    engramWorkerUrl: string
    /** The embedder on the page itself (not in a worker), for the tests of that path. */
    engramEmbed: { createTransformersEmbedder: typeof createTransformersEmbedder }
    engramHarnessReady: boolean
    /**
     * Makes a memory the way IndexedDB memories were kept before their page store: PGlite's
     * own IndexedDB file system, in the page. Resolves once it is closed.
     */
    engramLegacyIdb(name: string): Promise<void>
    /** The IndexedDB page store, for the tests of its edge cases. */
    engramIdbPages: { IdbPageBackend: typeof IdbPageBackend }
  }
}

/** The browser tests drive the public API through this page. */
window.engram = engram
window.engramWorkerUrl = new URL(workerUrl, import.meta.url).href
window.engramEmbed = { createTransformersEmbedder }
window.engramLegacyIdb = async (name) => {
  const [{ PGlite }, { vector }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-pgvector')])
  const pg = await PGlite.create(`idb://engram-${name}`, { extensions: { vector } })
  await pg.exec('CREATE TABLE legacy_marker (note text); INSERT INTO legacy_marker VALUES (\'kept\')')
  await pg.close()
}
window.engramIdbPages = { IdbPageBackend }
window.engramHarnessReady = true
