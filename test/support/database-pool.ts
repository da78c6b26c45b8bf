import type { PGlite } from '@electric-sql/pglite'
import { forgetPreparedStatements } from '../../src/core/db/prepared.ts'

/**
 * Test databases that a closed test memory hands back, wiped to the template's state, for the
 * next test to open. A wipe takes a fraction of an open's time (docs/BENCHMARKS.md, "The unit
 * suite's time"), and the suite opens several hundred. A wipe is checked: a database whose schema, settings,
 * statistics or rows differ from the template's afterwards is closed instead of reused.
 */

/** What a fresh database from the template holds, read once per process. */
interface Template {
  tables: string[]
  indexes: Set<string>
  seeds: { table: string; columns: string; rows: string }[]
  sequences: { name: string; value: string | null }[]
  fingerprint: string
}

/** The parts of PGlite's Emscripten module the log's folder is tidied with. */
interface EmscriptenFiles {
  ENV: { PGDATA: string }
  FS: { readdir(path: string): string[]; unlink(path: string): void }
}

/**
 * Removes the log segments past the one being written. A checkpoint renames used segments to
 * future names for reuse; Postgres makes a segment anew when it finds none to reuse, so without
 * them the log's folder is as small as a fresh database's.
 */
async function dropRecycledSegments(pg: PGlite): Promise<void> {
  const { rows } = await pg.query<{ current: string }>('SELECT pg_walfile_name(pg_current_wal_insert_lsn()) AS current')
  const current = rows[0]?.current
  if (!current) return
  const mod = pg.Module as unknown as EmscriptenFiles
  const folder = `${mod.ENV.PGDATA}/pg_wal`
  for (const name of mod.FS.readdir(folder)) {
    if (/^[0-9A-F]{24}$/.test(name) && name > current) mod.FS.unlink(`${folder}/${name}`)
  }
}

/** Databases waiting for a test, and the most kept waiting. */
const idle: PGlite[] = []
const MAX_IDLE = 4

let template: Template | undefined

/** How many databases this process opened, handed on, and closed instead of handing on. */
const counts = { opened: 0, reused: 0, closed: 0 }

/** How many databases this process opened, handed on, and closed instead of handing on. */
export function poolCounts(): Readonly<typeof counts> {
  return { ...counts }
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/** Schemas of the database's own objects, as a SQL condition on `nspname`. */
const OWN_SCHEMA = `nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND nspname NOT LIKE 'pg_temp%' AND nspname NOT LIKE 'pg_toast_temp%'`

/**
 * Everything a wipe must bring back, as one text: the objects, their definitions, the session's
 * and the database's settings, the planner statistics, and every table's row count.
 */
async function fingerprint(pg: PGlite, tables: string[]): Promise<string> {
  const counts = tables.map((t) => `SELECT 'n:${t.replaceAll("'", "''")}:' || count(*) FROM ${quote(t)}`).join(' UNION ALL ')
  const { rows } = await pg.query<{ f: string }>(`
    WITH own AS (SELECT c.oid, c.relname, c.relkind, c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ${OWN_SCHEMA})
    SELECT string_agg(x, E'\\n' ORDER BY x) AS f FROM (
      SELECT 'c:' || relname || ':' || relkind::text || ':' || coalesce(array_to_string(reloptions, ','), '') AS x FROM own
      UNION ALL SELECT 'i:' || pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN own ON own.oid = i.indexrelid
      UNION ALL SELECT 'a:' || own.relname || ':' || a.attname || ':' || format_type(a.atttypid, a.atttypmod) || ':' || a.attnotnull
        FROM pg_attribute a JOIN own ON own.oid = a.attrelid WHERE a.attnum > 0 AND NOT a.attisdropped
      UNION ALL SELECT 'k:' || conname || ':' || pg_get_constraintdef(k.oid) FROM pg_constraint k JOIN own ON own.oid = k.conrelid
      UNION ALL SELECT 't:' || pg_get_triggerdef(t.oid) || ':' || t.tgenabled::text FROM pg_trigger t JOIN own ON own.oid = t.tgrelid WHERE NOT t.tgisinternal
      UNION ALL SELECT 'f:' || p.oid::regprocedure || ':' || md5(p.prosrc) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ${OWN_SCHEMA}
      UNION ALL SELECT 'x:' || extname || ':' || extversion FROM pg_extension
      UNION ALL SELECT 'v:' || name || '=' || setting FROM pg_settings WHERE source IN ('session', 'database', 'user', 'database user')
      UNION ALL SELECT 'd:' || coalesce(array_to_string(setconfig, ','), '') FROM pg_db_role_setting
      UNION ALL SELECT 's:' || count(*) FROM pg_statistic s JOIN own ON own.oid = s.starelid
      UNION ALL SELECT 'q:' || schemaname || '.' || sequencename || ':' || coalesce(last_value::text, '-') FROM pg_sequences
      ${counts ? `UNION ALL ${counts}` : ''}
    ) parts`)
  return rows[0]?.f ?? ''
}

/** Reads what a fresh database holds; called before any engine has touched it. */
async function readTemplate(pg: PGlite): Promise<Template> {
  const tables = (
    await pg.query<{ t: string }>(
      `SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`,
    )
  ).rows.map((r) => r.t)
  const indexes = new Set(
    (await pg.query<{ i: string }>(`SELECT indexname AS i FROM pg_indexes WHERE schemaname = 'public'`)).rows.map((r) => r.i),
  )
  const seeds: Template['seeds'] = []
  for (const table of tables) {
    const { rows } = await pg.query<{ rows: string | null }>(`SELECT json_agg(t)::text AS rows FROM ${quote(table)} t`)
    if (!rows[0]?.rows) continue
    // Generated columns are computed again; every other column is copied as it was.
    const columns = (
      await pg.query<{ c: string }>(
        `SELECT attname AS c FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
        [quote(table)],
      )
    ).rows
      .map((r) => quote(r.c))
      .join(', ')
    seeds.push({ table, columns, rows: rows[0].rows })
  }
  const sequences = (
    await pg.query<{ name: string; value: string | null }>(
      `SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename) AS name, last_value::text AS value FROM pg_sequences`,
    )
  ).rows
  return { tables, indexes, seeds, sequences, fingerprint: await fingerprint(pg, tables) }
}

/** Brings a database back to the template's state; false when it could not be. */
async function wipe(pg: PGlite, t: Template): Promise<boolean> {
  // The session's prepared statements, settings and temporary tables go with the engine.
  await pg.exec('DISCARD ALL')
  forgetPreparedStatements(pg)
  // Tests read the activity counters (vacuums) and the size of the write-ahead log.
  await pg.exec('SELECT pg_stat_reset()')
  const extraIndexes = (
    await pg.query<{ i: string }>(`SELECT indexname AS i FROM pg_indexes WHERE schemaname = 'public'`)
  ).rows.filter((r) => !t.indexes.has(r.i))
  await pg.transaction(async (tx) => {
    // Seeded rows go back as they were, without the triggers that keep counts of new ones.
    await tx.exec('SET LOCAL session_replication_role = replica')
    for (const { i } of extraIndexes) await tx.exec(`DROP INDEX ${quote(i)}`)
    await tx.exec(`TRUNCATE ${t.tables.map(quote).join(', ')}`)
    for (const seed of t.seeds) {
      await tx.query(
        `INSERT INTO ${quote(seed.table)} (${seed.columns}) OVERRIDING SYSTEM VALUE SELECT ${seed.columns} FROM json_populate_recordset(NULL::${quote(seed.table)}, $1::json)`,
        [seed.rows],
      )
    }
    for (const { name, value } of t.sequences) {
      if (value === null) await tx.query('SELECT setval(seqrelid, seqstart, false) FROM pg_sequence WHERE seqrelid = $1::regclass', [name])
      else await tx.query('SELECT setval($1::regclass, $2::bigint, true)', [name, value])
    }
    await tx.exec(`DELETE FROM pg_statistic WHERE starelid IN (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE ${OWN_SCHEMA})`)
  })
  await pg.exec('CHECKPOINT')
  await dropRecycledSegments(pg)
  return (await fingerprint(pg, t.tables)) === t.fingerprint
}

/** A database at the template's state: one handed back by an earlier test, or `open()`'s. */
export async function takeDatabase(open: () => Promise<PGlite>): Promise<PGlite> {
  const reused = idle.pop()
  if (reused) {
    counts.reused++
    return reused
  }
  const pg = await open()
  counts.opened++
  template ??= await readTemplate(pg)
  return pg
}

/** Takes back a database its memory has finished with: wiped for the next test, or closed. */
export async function giveBackDatabase(pg: PGlite): Promise<void> {
  // `durableDb` wraps the instance's flush; the next memory wraps it afresh.
  delete (pg as { syncToFs?: unknown }).syncToFs
  const clean =
    !pg.closed && template !== undefined && idle.length < MAX_IDLE && (await wipe(pg, template).catch(() => false))
  if (clean) {
    idle.push(pg)
    return
  }
  counts.closed++
  if (!pg.closed) await pg.close()
}
