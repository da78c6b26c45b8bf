import type { PGlite } from '@electric-sql/pglite'
import { DEFAULT_CACHE_MB, setCache } from '../core/page-cache.ts'
import { migrate } from '../core/schema/migrations.ts'
import { openPGlite } from './pglite.ts'

/**
 * An empty, migrated data directory for new memories to start from with `loadDataDir`,
 * instead of running initdb (seconds): the browser's bundled template
 * (scripts/build-template.mjs) and the test suite's (test/support/global-setup.ts).
 *
 * A memory is one database, so the two template databases initdb makes, for `CREATE
 * DATABASE` (which a memory never runs), are dropped: they were more than half of the
 * directory's files, and a memory reads every file of its directory when it opens. New
 * memories open with a page cache of `DEFAULT_CACHE_MB` rather than Postgres' 128 MiB. The log
 * keeps only its current segment (`dropRecycledWal`).
 */
export async function buildTemplate(compression: 'gzip' | 'none'): Promise<Blob> {
  const pg = await openPGlite()
  try {
    await migrate(pg)
    for (const name of ['template0', 'template1']) {
      await pg.exec(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false IS_TEMPLATE false`)
      await pg.exec(`DROP DATABASE ${name}`)
    }
    await setCache(pg, DEFAULT_CACHE_MB)
    await pg.exec('CHECKPOINT')
    await dropRecycledWal(pg)
    return await pg.dumpDataDir(compression)
  } finally {
    await pg.close()
  }
}

/**
 * Removes the log segments past the current one: old segments the checkpoints renamed for
 * reuse, full of records nobody reads again. They were 7 of the template's 17 MB, which a new
 * memory unpacks, copies to its storage and reads again at every open. Postgres makes a
 * segment when the log reaches it, as it does once the recycled ones run out.
 */
async function dropRecycledWal(pg: PGlite): Promise<void> {
  const { rows } = await pg.query<{ dir: string; current: string }>(
    `SELECT current_setting('data_directory') AS dir, pg_walfile_name(pg_current_wal_lsn()) AS current`,
  )
  const { dir, current } = rows[0] ?? { dir: '', current: '' }
  if (!dir || !current) throw new Error('buildTemplate: the data directory or the current log segment is unknown')
  // PGlite types its file system with Emscripten's global types, which are not installed here.
  const fs = (pg.Module as unknown as { FS: { readdir(path: string): string[]; unlink(path: string): void } }).FS
  for (const name of fs.readdir(`${dir}/pg_wal`)) {
    // Segment names sort in log order within a timeline.
    if (/^[0-9A-F]{24}$/.test(name) && name > current) fs.unlink(`${dir}/pg_wal/${name}`)
  }
}
