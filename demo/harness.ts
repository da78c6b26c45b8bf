import type { PGliteWorker } from '@electric-sql/pglite/worker'
import * as engram from '../src/index.ts'
import * as engramMem0 from '../src/adapters/mem0/index.ts'
import { createTransformersEmbedder } from '../src/embed/transformers-embedder.ts'
import workerUrl from '../workers/memory.worker.ts?worker&url'
import { IdbPageBackend } from '../src/browser/storage/idb-pages.ts'
import peerUrl from './pglite-peer.worker.ts?worker&url'

declare global {
  interface Window {
    engram: typeof engram
    /** The mem0-compatible API (`engram/mem0`). */
    engramMem0: typeof engramMem0
    /** The built worker script, for tests that start it themselves (e.g. as a blob: worker). */
    engramWorkerUrl: string
    /** The embedder on the page itself (not in a worker), for the tests of that path. */
    engramEmbed: { createTransformersEmbedder: typeof createTransformersEmbedder }
    engramHarnessReady: boolean
    /**
     * Makes a memory the way IndexedDB memories were kept before their page store: PGlite's
     * own IndexedDB file system, in the page, with one turn recorded by the engine. Resolves
     * with that turn's request event once the memory is closed.
     */
    engramLegacyIdb(name: string): Promise<{ userEventId: string }>
    /** The IndexedDB page store, for the tests of its edge cases. */
    engramIdbPages: { IdbPageBackend: typeof IdbPageBackend }
    /**
     * PGlite's own tab election (`PGliteWorker`) over an existing memory's OPFS folder, for the
     * benchmark that times its takeover beside the host's. Resolves once this tab is connected.
     */
    engramPgliteWorker(name: string): Promise<PGliteWorker>
  }
}

/** The browser tests drive the public API through this page. */
window.engram = engram
window.engramMem0 = engramMem0
window.engramWorkerUrl = new URL(workerUrl, import.meta.url).href
window.engramEmbed = { createTransformersEmbedder }
window.engramLegacyIdb = async (name) => {
  const [{ PGlite }, { vector }, { createEngine }, { durableDb }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-pgvector'),
    import('../src/core/engine.ts'),
    import('../src/runtime/pglite.ts'),
  ])
  const pg = await PGlite.create(`idb://engram-${name}`, { extensions: { vector } })
  const engine = await createEngine({ db: durableDb(pg), statistics: 'manual', indexing: 'manual' })
  const { userEventId } = await engine.recordTurn({ conversationId: 'before', user: 'kept in the old layout?', agent: 'yes' })
  await engine.stopIndexing()
  await pg.close()
  return { userEventId }
}
window.engramIdbPages = { IdbPageBackend }
window.engramPgliteWorker = async (name) => {
  const { PGliteWorker } = await import('@electric-sql/pglite/worker')
  const worker = new Worker(new URL(peerUrl, import.meta.url), { type: 'module' })
  return PGliteWorker.create(worker, { id: `engram-peer-${name}`, meta: { name } })
}
window.engramHarnessReady = true
