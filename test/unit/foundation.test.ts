import { PGlite } from '@electric-sql/pglite'
import { describe, expect, it } from 'vitest'
import { migrate, SCHEMA_VERSION } from '../../src/core/db/schema/migrations.ts'
import { createEngine } from '../../src/core/engine.ts'
import { durableDb, openPGlite, prewarmPGlite } from '../../src/runtime/pglite.ts'
import { openMemory } from '../../src/node/index.ts'
import { pgliteFsBundle } from '../../src/node/template.ts'
import { cacheFor, DEFAULT_CACHE_MB, growCache, MAX_CACHE_MB } from '../../src/core/db/page-cache.ts'
import { openTestDb, openTestMemory, templateBlob } from '../support/memory.ts'
import { expectKeptMemoryCounts } from '../support/memory-stats.ts'

describe('foundation', () => {
  it('opens a migrated memory with pgvector and answers ping', async () => {
    await using memory = await openTestMemory()
    const ping = await memory.ping()
    expect(ping.schemaVersion).toBe(SCHEMA_VERSION)
    expect(ping.postgres).toMatch(/^1[5-9]/)
    expect(ping.vector).toMatch(/^0\.\d+\.\d+$/)
  })

  it('in-memory databases opened from one template start equal, and each keeps its writes to itself', async () => {
    const template = await templateBlob()
    const first = await openPGlite({ loadDataDir: template, cacheMB: 4 })
    const second = await openPGlite({ loadDataDir: template, cacheMB: 4 })
    try {
      await first.exec("CREATE TABLE only_first (n int); INSERT INTO only_first VALUES (1); UPDATE schema_migrations SET name = name")
      await first.exec('CHECKPOINT')
      const seen = await second.query(`SELECT to_regclass('only_first') AS t`)
      expect(seen.rows).toEqual([{ t: null }])
      // A third, opened after the first wrote and checkpointed, still starts from the template.
      const third = await openPGlite({ loadDataDir: template, cacheMB: 4 })
      expect((await third.query(`SELECT to_regclass('only_first') AS t`)).rows).toEqual([{ t: null }])
      expect((await third.query<{ version: number }>('SELECT max(version) AS version FROM schema_migrations')).rows[0]?.version).toBe(SCHEMA_VERSION)
      await third.close()
    } finally {
      await first.close()
      await second.close()
    }
  })

  it('prewarmPGlite starts and closes PGlite without a database, and an open after it works', async () => {
    await prewarmPGlite()
    // Node reads PGlite's own files once per process, from beside its module.
    expect(await pgliteFsBundle()).toBeInstanceOf(Blob)
    const pg = await openTestDb()
    expect((await pg.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
    await pg.close()
  })

  it('migrate is idempotent', async () => {
    const db = await openTestDb()
    expect(await migrate(db)).toBe(SCHEMA_VERSION)
    expect(await migrate(db)).toBe(SCHEMA_VERSION)
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations')
    expect(rows[0]?.n).toBe(SCHEMA_VERSION)
    await db.close()
  })

  it('refuses a database a newer Engram migrated, or one whose history it does not know, and changes nothing', async () => {
    const db = await openTestDb()
    await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [SCHEMA_VERSION + 1, 'from-the-future'])
    await expect(migrate(db)).rejects.toMatchObject({
      code: 'SCHEMA_TOO_NEW',
      details: { databaseVersion: SCHEMA_VERSION + 1, codeVersion: SCHEMA_VERSION },
    })
    await db.query('DELETE FROM schema_migrations WHERE version = $1', [SCHEMA_VERSION + 1])
    await db.query(`UPDATE schema_migrations SET name = 'renamed' WHERE version = 3`)
    await expect(migrate(db)).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW', details: { migration: { version: 3, name: 'renamed' } } })
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations')
    expect(rows[0]?.n).toBe(SCHEMA_VERSION)
    await db.close()
  })

  it('cosine distance works in the template', async () => {
    const db = await openTestDb()
    const { rows } = await db.query<{ d: number }>(`SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector AS d`)
    expect(rows[0]?.d).toBeCloseTo(1, 6)
    await db.close()
  })
  it('edges into a document version carry its document, on insert and after migrating an older memory', async () => {
    const pg = await openTestDb()
    const engine = await createEngine({ db: durableDb(pg) })
    const doc = (content: string) => ({ tool: 'read_file', args: { path: 'a.ts' }, document: { path: '/repo/a.ts', content, effect: 'read' as const } })
    await engine.recordTurn({ conversationId: 'c1', user: 'read it', agent: 'read', procedures: [doc('one'), { tool: 'run', args: {}, output: 'ok' }] })
    const expected = async () =>
      (
        await pg.query<{ n: number; wrong: number }>(
          `SELECT count(*)::int AS n, count(*) FILTER (WHERE e.document_id IS DISTINCT FROM v.document_id)::int AS wrong
           FROM edges e LEFT JOIN doc_versions v ON v.id = e.dst`,
        )
      ).rows[0]
    const filled = async () => (await pg.query<{ n: number }>('SELECT count(*)::int AS n FROM edges WHERE document_id IS NOT NULL')).rows[0]?.n
    // MESSAGE, read_file → version, VERSION_OF (version → document), run → call, RESULT
    expect(await expected()).toEqual({ n: 5, wrong: 0 })
    expect(await filled()).toBe(1)

    await engine.remember({ content: 'Deploys go out on Fridays', category: 'convention', userId: 'ann' })
    await engine.remember({ content: 'The staging database is read-only', category: 'fact', scope: 'global' })
    // The same memory as it was before the column existed (schema version 5), then migrated again.
    const { keywordStats } = await import('../../src/core/db/schema/0004-keyword-stats.ts')
    const countEveryWrite = keywordStats
      .slice(keywordStats.indexOf('CREATE FUNCTION engram_keyword_stats_add()'), keywordStats.indexOf('CREATE FUNCTION engram_chunks_text_guard()'))
      .replaceAll('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION')
    await pg.exec(`DROP FUNCTION engram_graph_wrote() CASCADE; DROP SEQUENCE graph_writes; DROP SEQUENCE graph_resets;
                   DROP INDEX doc_versions_observed;
                   ALTER TABLE edges DROP CONSTRAINT edges_valid_period; ALTER TABLE edges DROP COLUMN valid_from; ALTER TABLE edges DROP COLUMN valid_to;
                   DROP INDEX memories_expiring; ALTER TABLE memories DROP COLUMN expires_at;
                   DROP TABLE vault; DROP INDEX events_unsealed; DROP INDEX memories_unsealed;
                   ALTER TABLE memories ALTER COLUMN tsv SET EXPRESSION AS (to_tsvector('english', content));
                   DROP TRIGGER chunks_vector_debt ON chunks; DROP FUNCTION engram_vector_debt();
                   DROP TRIGGER chunks_vector_replaced ON chunks; DROP FUNCTION engram_vector_replaced(); DROP TABLE vector_debt;
                   DROP TRIGGER doc_versions_append_only ON doc_versions; DROP FUNCTION engram_doc_versions_guard();
                   CREATE TRIGGER doc_versions_append_only BEFORE UPDATE OR DELETE ON doc_versions
                     FOR EACH ROW EXECUTE FUNCTION engram_append_only();
                   DROP INDEX doc_versions_content_of; ALTER TABLE doc_versions DROP COLUMN content_of;
                   DROP INDEX memories_key; ALTER TABLE memories DROP COLUMN key;
                   DROP INDEX memories_unembedded; DROP INDEX memories_embed_model;
                   DROP TRIGGER events_actor_terms_add ON events; DROP TRIGGER events_actor_terms_remove ON events;
                   DROP FUNCTION engram_actor_terms_add(); DROP FUNCTION engram_actor_terms_remove(); DROP TABLE actor_terms;
                   DROP TABLE writer_clock; DROP TABLE sync_devices; DROP TABLE sync_received; DROP TABLE sync_remotes; DROP TABLE sync_vaults;
                   DROP TABLE sync_aliases; ALTER TABLE memory_contexts DROP COLUMN updated_at;`)
    await pg.exec(`SELECT engram_keyword_stats_apply(); ${countEveryWrite}
                   DROP FUNCTION engram_keyword_stats_apply(); DROP TABLE keyword_counted;
                   DROP INDEX chunks_by_stats_seq; ALTER TABLE chunks DROP COLUMN stats_seq; DROP SEQUENCE chunks_stats_seq;`)
    await pg.exec(`DROP TRIGGER memories_stats_insert_delete ON memories; DROP TRIGGER memories_stats_update ON memories;
                   DROP FUNCTION engram_memory_stats(); DROP TABLE memory_stats;
                   DROP INDEX events_actor_names;
                   DROP TRIGGER edges_fill_document ON edges; DROP FUNCTION edges_fill_document();
                   DROP INDEX edges_document; ALTER TABLE edges DROP COLUMN document_id;
                   DELETE FROM schema_migrations WHERE version >= 6`)
    await engine.recordTurn({ conversationId: 'c2', user: 'again', agent: 'read', procedures: [doc('two')] })
    // (Dropped after the turn: a turn reads the archives, schema version 14, for its number.)
    await pg.exec(`DROP TABLE archives; DROP TABLE conversation_hits;`)
    expect(await migrate(durableDb(pg))).toBe(SCHEMA_VERSION)
    expect(await expected()).toEqual({ n: 8, wrong: 0 })
    expect(await filled()).toBe(2)
    // The memories' kept counts (schema version 8) are filled from the memories already there.
    expect(await expectKeptMemoryCounts(pg)).toBe(2)
    // The words of the actors' ids (schema version 10), from the events already there.
    expect((await pg.query(`SELECT actor_id, lexeme FROM actor_terms ORDER BY 1, 2`)).rows).toEqual(
      (await pg.query(`SELECT DISTINCT actor_id, l AS lexeme FROM events, unnest(tsvector_to_array(to_tsvector('english', actor_id))) l ORDER BY 1, 2`)).rows,
    )
    expect((await pg.query(`SELECT DISTINCT actor_id FROM actor_terms ORDER BY 1`)).rows.length).toBeGreaterThan(2)
    // Ground truth stays append-only after the backfill.
    await expect(pg.query(`UPDATE edges SET document_id = NULL`)).rejects.toThrow(/append-only/)
    await pg.close()
  })
  it('write-ahead log segments are 1 MiB, and a directory made with 16 MiB segments still opens', async () => {
    const segment = async (pg: Awaited<ReturnType<typeof openPGlite>>) =>
      (await pg.query<{ wal_segment_size: string }>('SHOW wal_segment_size')).rows[0]?.wal_segment_size
    // The test template comes from openPGlite's own initdb.
    const current = await openPGlite({ loadDataDir: await templateBlob() })
    expect(await segment(current)).toBe('1MB')
    await current.close()
    // Memories made before segments were 1 MiB keep Postgres' default, fixed in pg_control:
    // the WAL settings every open passes must suit both.
    const older = await PGlite.create({ initDbStartParams: ['--wal-segsize=16'] })
    await older.exec('CREATE TABLE kept (n int); INSERT INTO kept VALUES (1); CHECKPOINT')
    const files = await older.dumpDataDir('none')
    await older.close()
    const reopened = await openPGlite({ loadDataDir: files })
    expect(await segment(reopened)).toBe('16MB')
    expect((await reopened.query<{ n: number }>('SELECT n FROM kept')).rows).toEqual([{ n: 1 }])
    await reopened.close()
  })

  it('cacheMB sets the page cache, and a size out of range is refused before anything opens', async () => {
    const pg = await openPGlite({ loadDataDir: await templateBlob(), cacheMB: 64 })
    expect((await pg.query<{ shared_buffers: string }>('SHOW shared_buffers')).rows[0]?.shared_buffers).toBe('64MB')
    await pg.close()
    for (const cacheMB of [3, 513, 100.5, Number.NaN]) {
      await expect(openMemory({ cacheMB })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
  })

  it('the engine refuses options a caller got wrong, naming the option', async () => {
    const pg = await openTestDb()
    const db = durableDb(pg)
    const wrong: [string, Record<string, unknown>][] = [
      ['db', { db: {} }],
      ['indexing', { db, indexing: 'sometimes' }],
      ['statistics', { db, statistics: true }],
      ['dedupThreshold', { db, dedupThreshold: '0.9' }],
      ['dedupThreshold', { db, dedupThreshold: 1.5 }],
      ['workspace', { db, workspace: { mode: 'local', root: 5 } }],
      ['workspace', { db, workspace: { mode: 'nearby' } }],
      ['now', { db, now: new Date() }],
      ['tokenCounter', { db, tokenCounter: 4 }],
      ['resolvePath', { db, resolvePath: '/x' }],
      ['embedder', { db, embedder: { id: 'x', dims: 3 } }],
      ['cacheMB', { db, cacheMB: 64 }],
    ]
    for (const [name, options] of wrong) {
      const error = await createEngine(options as unknown as Parameters<typeof createEngine>[0]).catch((e: unknown) => e)
      expect(error, name).toMatchObject({ code: 'INVALID_INPUT' })
      expect((error as Error).message, name).toContain(name)
    }
    await expect(createEngine(null as unknown as Parameters<typeof createEngine>[0])).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await pg.close()
  })

  it('the page cache grows with the memory from its next open, and an explicit cacheMB still wins', async () => {
    const MiB = 2 ** 20
    expect(DEFAULT_CACHE_MB).toBe(64)
    expect([0, 89 * MiB, 256 * MiB, 300 * MiB, 800 * MiB, 5000 * MiB].map(cacheFor)).toEqual([64, 64, 128, 192, 448, MAX_CACHE_MB])
    const shared = async (pg: Awaited<ReturnType<typeof openPGlite>>) =>
      (await pg.query<{ shared_buffers: string }>('SHOW shared_buffers')).rows[0]?.shared_buffers
    // A new memory opens with the default, which its template names, not Postgres' 128 MiB.
    const fresh = await openPGlite({ loadDataDir: await templateBlob() })
    expect(await shared(fresh)).toBe('64MB')
    await fresh.close()
    const first = await openPGlite({ loadDataDir: await templateBlob(), cacheMB: 32 })
    // A small memory needs no more than the default.
    expect(await growCache(durableDb(first))).toBe(null)
    expect(await growCache(durableDb(first), () => 192)).toBe(192)
    expect(await shared(first)).toBe('32MB') // the running pool stays until the next open
    const files = await first.dumpDataDir('none')
    await first.close()
    const next = await openPGlite({ loadDataDir: files })
    expect(await shared(next)).toBe('192MB')
    // Never lowered, and not written again when already set.
    expect(await growCache(durableDb(next), () => 160)).toBe(null)
    expect(await growCache(durableDb(next), () => 192)).toBe(null)
    await next.close()
    const pinned = await openPGlite({ loadDataDir: files, cacheMB: 64 })
    expect(await shared(pinned)).toBe('64MB')
    await pinned.close()
  })

  it('a memory that names no page cache (made before the default was 64 MiB) gets the default at its next refresh', async () => {
    const shared = async (pg: Awaited<ReturnType<typeof openPGlite>>) =>
      (await pg.query<{ shared_buffers: string }>('SHOW shared_buffers')).rows[0]?.shared_buffers
    const older = await openPGlite({ loadDataDir: await templateBlob() })
    await older.exec('ALTER SYSTEM RESET shared_buffers')
    const olderFiles = await older.dumpDataDir('none')
    await older.close()
    const before = await openPGlite({ loadDataDir: olderFiles })
    expect(await shared(before)).toBe('128MB')
    expect(await growCache(durableDb(before))).toBe(DEFAULT_CACHE_MB)
    expect(await growCache(durableDb(before))).toBe(null)
    const files = await before.dumpDataDir('none')
    await before.close()
    const after = await openPGlite({ loadDataDir: files })
    expect(await shared(after)).toBe('64MB')
    await after.close()
  })
})
