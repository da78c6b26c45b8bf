// Writes assets/pgdata-template.tar.gz: an empty, migrated Engram database. A new memory in
// the browser starts from it with loadDataDir instead of running initdb (seconds slower).
// Run after build-lib (it uses the compiled recipe, src/runtime/template.ts); skipped when
// nothing that shapes the directory changed.
import { createHash } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'

const out = 'assets/pgdata-template.tar.gz'
const stampFile = 'assets/pgdata-template.stamp'
const recipe = new URL('../dist/lib/src/runtime/template.js', import.meta.url)
const migrations = await import('../dist/lib/src/core/db/schema/migrations.js')
const runtime = await import('../dist/lib/src/runtime/pglite.js')
const pageCache = await import('../dist/lib/src/core/db/page-cache.js')
const pgliteVersion = JSON.parse(await readFile('node_modules/@electric-sql/pglite/package.json', 'utf8')).version
const stamp = createHash('sha256')
  .update(JSON.stringify({ pgliteVersion, migrations: migrations.MIGRATIONS, initdb: runtime.INITDB_PARAMS, wal: runtime.WAL_SETTINGS, cacheMB: pageCache.DEFAULT_CACHE_MB }))
  .update(await readFile(recipe))
  .update(await readFile(new URL(import.meta.url))) // this script
  .digest('hex')

const previous = await readFile(stampFile, 'utf8').catch(() => '')
const existing = await readFile(out).catch(() => undefined)
if (previous === stamp && existing) {
  console.log(`build-template: ${out} is up to date`)
} else {
  const { buildTemplate } = await import(recipe.href)
  const dump = await buildTemplate('gzip')
  await mkdir('assets', { recursive: true })
  await writeFile(out, new Uint8Array(await dump.arrayBuffer()))
  await writeFile(stampFile, stamp)
  console.log(`build-template: wrote ${out} (${dump.size} bytes, schema v${migrations.SCHEMA_VERSION})`)
}
