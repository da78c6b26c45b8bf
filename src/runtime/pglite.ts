import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'

export interface OpenPGliteOptions {
  /** `memory://`, a file path (Node), `idb://name` or `memfs2opfs://name` (browser). */
  dataDir?: string
  /** A `dumpDataDir()` tarball to start from instead of running initdb. */
  loadDataDir?: Blob
}

/** PGlite with the extensions Engram needs, in Node or in a worker. */
export async function openPGlite(options: OpenPGliteOptions = {}): Promise<PGlite> {
  return PGlite.create({
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.loadDataDir === undefined ? {} : { loadDataDir: options.loadDataDir }),
    extensions: { vector },
  })
}
