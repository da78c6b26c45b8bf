import { DEFAULT_CACHE_MB, setCache } from '../core/db/page-cache.ts'
import { migrate } from '../core/db/schema/migrations.ts'
import type { PGlite } from '@electric-sql/pglite'
import { openPGlite } from './pglite.ts'

/**
 * An empty, migrated data directory for new memories to start from with `loadDataDir`,
 * instead of running initdb (seconds): the browser's bundled template
 * (scripts/build-template.mjs) and the test suite's (test/support/global-setup.ts).
 *
 * A memory is one database, so the two template databases initdb makes, for `CREATE
 * DATABASE` (which a memory never runs), are dropped: they were more than half of the
 * directory's files, and a memory reads every file of its directory when it opens. New
 * memories open with a page cache of `DEFAULT_CACHE_MB` rather than Postgres' 128 MiB.
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
    await dropSpareLogSegments(pg)
    return await pg.dumpDataDir(compression)
  } finally {
    await pg.close()
  }
}

/**
 * Removes the log segments past the one in use: a checkpoint renames old segments into those
 * places for reuse, and Postgres makes them again when it needs them. In a template they were
 * 6 of its 7 MiB of log, downloaded with it and written to storage before a new memory's first
 * write is acknowledged (browser/storage/opfs-fs.ts).
 */
async function dropSpareLogSegments(pg: PGlite): Promise<void> {
  const { rows } = await pg.query<{ name: string; current: string; dir: string }>(
    `SELECT name, pg_walfile_name(pg_current_wal_insert_lsn()) AS current, current_setting('data_directory') AS dir
     FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'`,
  )
  // The emscripten file system's types do not reach this package; unlink is all it needs.
  const fs = pg.Module.FS as unknown as { unlink(path: string): void }
  for (const { name, current, dir } of rows) if (name > current) fs.unlink(`${dir}/pg_wal/${name}`)
}
