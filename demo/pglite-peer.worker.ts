import { worker } from '@electric-sql/pglite/worker'
import { opfsFileSystem } from '../src/browser/storage/opfs-fs.ts'
import { storageKey } from '../src/browser/storage/storage.ts'
import { openPGlite } from '../src/runtime/pglite.ts'

/**
 * A benchmark peer: PGlite's own tab election (`PGliteWorker`) over an existing Engram memory's
 * OPFS folder, opened as the host opens it. `npm run bench` times its takeover beside the host's.
 */
void worker({
  async init(options) {
    const { name } = options.meta as { name: string }
    return openPGlite({ fs: opfsFileSystem(storageKey(name), { created: false, template: null }) })
  },
})
