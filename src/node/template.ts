import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/**
 * The template new memories start from: an empty, migrated database, written by `npm run build`
 * (scripts/build-template.mjs) and shipped in the package. New browser memories start from the
 * same file. Starting from it skips initdb and the migrations, which take seconds.
 */
const TEMPLATE = new URL('../../assets/pgdata-template.tar.gz', import.meta.url)

/** The bundled template, or undefined where there is none (running from sources before a build). */
export async function bundledTemplate(): Promise<Blob | undefined> {
  try {
    return new Blob([new Uint8Array(await readFile(TEMPLATE))])
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined
    throw error
  }
}

/** Whether a data folder holds no database yet: the file PGlite checks before it loads a tarball. */
export function holdsNoDatabase(dataDir: string): boolean {
  return !existsSync(join(dataDir, 'PG_VERSION'))
}

let fsBundle: Promise<Blob | undefined> | undefined

/**
 * PGlite's file-system bundle (`pglite.data`, about 6 MB), read once per process. PGlite reads
 * it from disk at every open otherwise (docs/BENCHMARKS.md, "A memory in memory, from a parsed
 * template"); PGlite already keeps its compiled WebAssembly module per process the same way.
 * Undefined where the file is not beside PGlite's module (a bundled app): PGlite finds its own.
 */
export function pgliteFsBundle(): Promise<Blob | undefined> {
  fsBundle ??= (async () => {
    try {
      const dist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'))
      return new Blob([new Uint8Array(await readFile(join(dist, 'pglite.data')))])
    } catch {
      return undefined
    }
  })()
  return fsBundle
}
