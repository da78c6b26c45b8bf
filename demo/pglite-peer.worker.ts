import { worker } from '@electric-sql/pglite/worker'
import { createEngine } from '../src/core/engine.ts'
import { opfsFileSystem } from '../src/browser/storage/opfs-fs.ts'
import { storageKey } from '../src/browser/storage/storage.ts'
import { durableDb, openPGlite } from '../src/runtime/pglite.ts'

/**
 * A benchmark peer: PGlite's own tab election (`PGliteWorker`) over an existing Engram memory's
 * OPFS folder, opened as the host opens it and with the engine started over it, as the host
 * does when it takes over. `npm run bench` times its takeover beside the host's.
 */
void worker({
  async init(options) {
    const { name } = options.meta as { name: string }
    const pg = await openPGlite({ fs: opfsFileSystem(storageKey(name), { created: false, template: null }) })
    await createEngine({ db: durableDb(pg), indexing: 'manual', statistics: 'manual' })
    return pg
  },
})
