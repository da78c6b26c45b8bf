// Writes assets/pgdata-template.tar.gz: an empty, migrated Engram database. A new memory in
// the browser starts from it with loadDataDir instead of running initdb (seconds slower).
// Run after build-lib (it uses the compiled migrations); skipped when the schema is unchanged.
import { createHash } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'

const out = 'assets/pgdata-template.tar.gz'
const stampFile = 'assets/pgdata-template.stamp'
const migrations = await import('../dist/lib/src/core/schema/migrations.js')
const runtime = await import('../dist/lib/src/runtime/pglite.js')
const pgliteVersion = JSON.parse(await readFile('node_modules/@electric-sql/pglite/package.json', 'utf8')).version
const stamp = createHash('sha256')
  .update(JSON.stringify({ pgliteVersion, migrations: migrations.MIGRATIONS, initdb: runtime.INITDB_PARAMS, wal: runtime.WAL_SETTINGS }))
  .update(await readFile(new URL(import.meta.url))) // this recipe
  .digest('hex')

const previous = await readFile(stampFile, 'utf8').catch(() => '')
const existing = await readFile(out).catch(() => undefined)
if (previous === stamp && existing) {
  console.log(`build-template: ${out} is up to date`)
} else {
  const { dropTemplateDatabases, openPGlite } = runtime
  const pg = await openPGlite()
  await migrations.migrate(pg)
  // A memory is one database: initdb's template databases are left out.
  await dropTemplateDatabases(pg)
  await pg.exec('CHECKPOINT')
  const dump = await pg.dumpDataDir('gzip')
  await pg.close()
  await mkdir('assets', { recursive: true })
  await writeFile(out, new Uint8Array(await dump.arrayBuffer()))
  await writeFile(stampFile, stamp)
  console.log(`build-template: wrote ${out} (${dump.size} bytes, schema v${migrations.SCHEMA_VERSION})`)
}
