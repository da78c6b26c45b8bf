import { DEFAULT_CACHE_MB, setCache } from '../core/db/page-cache.ts'
import { migrate } from '../core/db/schema/migrations.ts'
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
    return await pg.dumpDataDir(compression)
  } finally {
    await pg.close()
  }
}
