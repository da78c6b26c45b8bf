import { describe, expect, it } from 'vitest'
import type { Queryable } from '../../src/core/kernel/db.ts'
import type { Embedder } from '../../src/core/kernel/embedder.ts'
import { createEngine, type Engine } from '../../src/core/engine.ts'
import type { EngineErrorEvent } from '../../src/core/maintenance/indexer.ts'
import { BULK_VECTOR_ROWS } from '../../src/core/db/vectors.ts'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import { openTestEngine } from '../support/engine.ts'

const INDEX = 'chunks_embedding_hnsw_384'

/** A distinct text per number: its own token and eight words drawn from 397. */
const TEXT = `(SELECT 'n' || g || ' ' || string_agg('w' || ((g * 7919 + i * g * 104729 + i * 31) % 397), ' ') FROM generate_series(1, 8) i)`

/** `n` message events with one chunk each, written in two statements (the write path is not under test). */
/** The id of the `g`th event `seedChunks` writes: one the write path could have made. */
const seededEventId = (g: number) => `evt_${String(g).padStart(26, '0')}`

async function seedChunks(db: Queryable, n: number, from = 0) {
  await db.query(
    `INSERT INTO events (id, kind, conversation_id, actor_type, actor_id, content, created_at)
     SELECT 'evt_' || lpad(g::text, 26, '0'), 'message', 'c' || (g % 7), 'human', 'u1', jsonb_build_object('text', ${TEXT}),
            timestamptz '2026-01-01' + g * interval '1 minute'
     FROM generate_series($1::int, $2::int) g`,
    [from, from + n - 1],
  )
  await db.query(
    `INSERT INTO chunks (id, source_id, ord, text, token_est, tenant_id, conversation_id, kind, channel, sensitivity, created_at)
     SELECT 'ch' || g, 'evt_' || lpad(g::text, 26, '0'), 0, ${TEXT}, 5, 'default', 'c' || (g % 7), 'message', 'private', 'none',
            timestamptz '2026-01-01' + g * interval '1 minute'
     FROM generate_series($1::int, $2::int) g`,
    [from, from + n - 1],
  )
}

async function indexOid(db: Queryable, index = INDEX): Promise<number | null> {
  const { rows } = await db.query<{ oid: number }>(`SELECT to_regclass($1)::oid::int AS oid`, [index])
  return rows[0]?.oid ?? null
}

/** The hash embedder, noting after each call whether the HNSW index (the chunks' unless said) existed meanwhile. */
function watching(at: { db?: Queryable }, index = INDEX) {
  const inner = createHashEmbedder()
  const seen: boolean[] = []
  const embedder: Embedder = {
    id: inner.id,
    dims: inner.dims,
    async embed(texts) {
      if (!at.db) throw new Error('no database to watch')
      seen.push((await indexOid(at.db, index)) !== null)
      return inner.embed(texts)
    },
  }
  return { embedder, seen }
}

/** The planner's plan for the vector query search runs, with scans that avoid the index priced out. */
async function vectorPlan(db: Queryable): Promise<string> {
  const [probe] = await createHashEmbedder().embed(['n5 w1 w2'])
  await db.exec('SET enable_seqscan = off')
  try {
    const { rows } = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM chunks WHERE vector_dims(embedding) = 384
       ORDER BY embedding::vector(384) <=> $1::vector(384) LIMIT 5`,
      [`[${[...probe!].join(',')}]`],
    )
    return rows.map((r) => r['QUERY PLAN']).join('\n')
  } finally {
    await db.exec('RESET enable_seqscan')
  }
}

/** The rebuilt index serves search: a chunk's own text is its nearest neighbour (vector rank 1, distance 0). */
async function expectOwnNeighbour(engine: Engine, db: Queryable, eventId = seededEventId(117)) {
  const { rows } = await db.query<{ text: string }>(`SELECT text FROM chunks WHERE source_id = $1`, [eventId])
  const hits = await engine.search(rows[0]?.text ?? '', { mode: 'vector', limit: 10 })
  const own = hits.find((h) => h.eventId === eventId)
  expect(own?.explain.vector?.rank).toBe(1)
  expect(own?.explain.vector?.distance).toBeCloseTo(0, 5)
}

/** An export of a memory with more vectors than the bulk threshold. */
async function bulkExport(): Promise<Blob> {
  await using source = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
  await seedChunks(source.db, BULK_VECTOR_ROWS + 50)
  await source.engine.indexNow()
  return source.engine.exportFile()
}

const MEMORY_INDEX = 'memories_vector_hnsw_384'

/** "deploy notes <k> about the release pipeline of service s<k % 37> in zone z<k % 11>", k from `from`. */
function deployNotes(n: number, from = 0): string[] {
  return Array.from({ length: n }, (_, i) => `deploy notes ${from + i} about the release pipeline of service s${(from + i) % 37} in zone z${(from + i) % 11}`)
}

/** One deploy note, searched for by its own text. */
const OWN_NOTE = deployNotes(1, 117)[0] as string

/** Memories of `user` with these texts in one statement (the write path is not under test), each with its hash-embedded vector. */
async function seedMemories(db: Queryable, user: string, texts: string[]) {
  const vectors = await createHashEmbedder().embed(texts)
  await db.query(
    `INSERT INTO memories (id, user_id, scope, category, source, confidence, content, hash, vector, embed_model, created_at, updated_at)
     SELECT 'mem_0' || left(md5($3 || '_' || k), 25), $3, 'user', 'fact', 'explicit', 1, t, md5(t), v::vector, 'hash/384', now(), now()
     FROM unnest($1::text[], $2::text[]) WITH ORDINALITY x(t, v, k)`,
    [texts, vectors.map((v) => `[${[...v].join(',')}]`), user],
  )
}

/** Scans of `index` so far (the statistics are flushed first). */
async function indexScans(db: Queryable, index: string): Promise<number> {
  await db.query('SELECT pg_stat_force_next_flush()')
  const { rows } = await db.query<{ n: number }>(`SELECT idx_scan::int AS n FROM pg_stat_user_indexes WHERE indexrelname = $1`, [index])
  return rows[0]?.n ?? 0
}

/** Makes every CREATE INDEX fail until `DROP EVENT TRIGGER no_builds`. */
async function refuseIndexBuilds(db: Queryable) {
  await db.exec(`CREATE FUNCTION fail_build() RETURNS event_trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'no index builds today'; END $$;
    CREATE EVENT TRIGGER no_builds ON ddl_command_end WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION fail_build()`)
}

describe('bulk vector index builds', () => {
  it(`a fill of ≥ ${BULK_VECTOR_ROWS} vectors drops the HNSW index after the first batch and builds it once at the end`, async () => {
    const at: { db?: Queryable } = {}
    const watch = watching(at)
    await using t = await openTestEngine({ embedder: watch.embedder, indexing: 'manual' })
    at.db = t.db
    const before = await indexOid(t.db)
    expect(before).not.toBeNull()
    await seedChunks(t.db, BULK_VECTOR_ROWS + 100)

    const status = await t.engine.indexNow()
    expect(status.pending).toBe(0)
    expect(watch.seen[0]).toBe(true)
    expect(watch.seen.slice(1).every((present) => !present)).toBe(true)
    const after = await indexOid(t.db)
    expect(after).not.toBeNull()
    expect(after).not.toBe(before)
    expect(await vectorPlan(t.db)).toContain(INDEX)
    await expectOwnNeighbour(t.engine, t.db)
  })

  it(`re-embedding ≥ ${BULK_VECTOR_ROWS} chunks for a new model builds the index once, as a first fill does`, async () => {
    const at: { db?: Queryable } = {}
    const watch = watching(at)
    await using t = await openTestEngine({ embedder: watch.embedder, indexing: 'manual' })
    at.db = t.db
    await seedChunks(t.db, BULK_VECTOR_ROWS + 100)
    await t.engine.indexNow()
    // Every vector is now another model's: all of them wait, and the index holds only theirs.
    await t.db.exec(`UPDATE chunks SET embed_model = 'older/384'`)
    const before = await indexOid(t.db)
    watch.seen.length = 0

    const status = await t.engine.indexNow()
    expect(status.pending).toBe(0)
    expect(watch.seen[0]).toBe(true)
    expect(watch.seen.length).toBeGreaterThan(1)
    expect(watch.seen.slice(1).every((present) => !present)).toBe(true)
    const after = await indexOid(t.db)
    expect(after).not.toBeNull()
    expect(after).not.toBe(before)
    const { rows } = await t.db.query<{ model: string; n: number }>(`SELECT embed_model AS model, count(*)::int AS n FROM chunks GROUP BY 1`)
    expect(rows).toEqual([{ model: 'hash/384', n: BULK_VECTOR_ROWS + 100 }])
    await expectOwnNeighbour(t.engine, t.db)
  })

  it('a small fill, or one smaller than what is already indexed, inserts into the index as it goes', async () => {
    const at: { db?: Queryable } = {}
    const watch = watching(at)
    await using t = await openTestEngine({ embedder: watch.embedder, indexing: 'manual' })
    at.db = t.db
    const before = await indexOid(t.db)
    await seedChunks(t.db, 100)
    await t.engine.indexNow()
    expect(watch.seen.every(Boolean)).toBe(true)
    expect(await indexOid(t.db)).toBe(before)
  })

  it('a bulk build that fails is reported (onError, indexNow) and the vectors stay; the next open builds the index', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    await seedChunks(t.db, BULK_VECTOR_ROWS + 100)
    await refuseIndexBuilds(t.db)
    const errors: EngineErrorEvent[] = []
    t.engine.onError((e) => errors.push(e))
    await expect(t.engine.indexNow()).rejects.toMatchObject({ code: 'INTERNAL' })
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining('Building the vector index failed')])
    expect(await indexOid(t.db)).toBeNull()
    expect((await t.engine.indexing()).pending).toBe(0)
    await t.db.exec('DROP EVENT TRIGGER no_builds')
    await t.engine.stopIndexing()
    await createEngine({ db: t.db, embedder: createHashEmbedder(), indexing: 'manual' })
    expect(await indexOid(t.db)).not.toBeNull()
  })

  it('an engine opened where a bulk build never finished creates the index again', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    await t.db.exec(`DROP INDEX ${INDEX}`)
    await t.engine.stopIndexing()
    await createEngine({ db: t.db, embedder: createHashEmbedder(), indexing: 'manual' })
    expect(await indexOid(t.db)).not.toBeNull()
  })

  it(`an import restoring ≥ ${BULK_VECTOR_ROWS} vectors builds the index once, in its transaction; a small one inserts`, async () => {
    const file = await bulkExport()

    await using target = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    const before = await indexOid(target.db)
    const report = await target.engine.importFile(file, { mode: 'replace' })
    expect(report.vectorsRestored).toBe(BULK_VECTOR_ROWS + 50)
    const after = await indexOid(target.db)
    expect(after).not.toBeNull()
    expect(after).not.toBe(before)
    expect(await vectorPlan(target.db)).toContain(INDEX)
    expect((await target.engine.indexing()).pending).toBe(0)
    await expectOwnNeighbour(target.engine, target.db)

    // Merging the same file again restores nothing new: the index is left alone.
    const again = await target.engine.importFile(file)
    expect(again.vectorsRestored).toBe(0)
    expect(await indexOid(target.db)).toBe(after)
  })

  it('a failed import leaves the index as it was (the drop is undone with the transaction)', async () => {
    const file = await bulkExport()

    await using target = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    const before = await indexOid(target.db)
    // A trigger that fails the import's last step (the index build runs after every row).
    await refuseIndexBuilds(target.db)
    await expect(target.engine.importFile(file, { mode: 'replace' })).rejects.toThrow()
    await target.db.exec('DROP EVENT TRIGGER no_builds')
    expect(await indexOid(target.db)).toBe(before)
    const { rows } = await target.db.query<{ n: number }>('SELECT count(*)::int AS n FROM chunks')
    expect(rows[0]?.n).toBe(0)
  })

  it('memory search walks the memories\' HNSW index, and a filtered walk goes on until it has its candidates', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    await seedMemories(t.db, 'ann', deployNotes(996))
    await seedMemories(t.db, 'bob', deployNotes(4, 996))
    // The table is small: make the planner take the HNSW index as it would on a large one.
    await t.db.exec('ANALYZE memories; SET enable_seqscan = off; SET enable_sort = off')
    const scans = await indexScans(t.db, MEMORY_INDEX)
    // Bob's 4 memories are 0.4% of the graph: a walk that stopped at ef_search rows would
    // leave most of them to the keyword list alone.
    const hits = await t.engine.memories.search('release pipeline deploy notes', { userId: 'bob', limit: 10 })
    expect(hits.map((h) => h.userId)).toEqual(['bob', 'bob', 'bob', 'bob'])
    expect(hits.every((h) => h.scores.vector !== null && h.scores.vector > 0)).toBe(true)
    expect(await indexScans(t.db, MEMORY_INDEX)).toBeGreaterThan(scans)

    // recall, which counts uses in the same statement, walks it too and finds its own text first.
    const [own] = await t.engine.recall(OWN_NOTE, { userId: 'ann', limit: 3 })
    expect(own?.content).toBe(OWN_NOTE)
    expect(own?.scores.vector).toBeCloseTo(1, 5)
    expect(own?.useCount).toBe(1)
  })

  it("remember's near-duplicate check walks the memories' HNSW index past other scopes' nearer memories", async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    const text = 'deploy notes 7 about the release pipeline of service s7 in zone z7 today again'
    // 300 memories of Ann's, each the text Bob will save and a word of its own: all nearer to
    // it than anything of Bob's, so a walk that stopped at ef_search (100) rows would find
    // nothing in Bob's scope.
    await seedMemories(t.db, 'ann', Array.from({ length: 300 }, (_, i) => `${text} note${i}`))
    await seedMemories(t.db, 'bob', deployNotes(20))
    const [probe] = await createHashEmbedder().embed([text])
    const { rows: nearest } = await t.db.query<{ ann: number; bob: number }>(
      `SELECT min(1 - (vector <=> $1::vector)) FILTER (WHERE user_id = 'ann') AS ann,
              max(1 - (vector <=> $1::vector)) FILTER (WHERE user_id = 'bob') AS bob
       FROM memories`,
      [`[${[...probe!].join(',')}]`],
    )
    expect(nearest[0]!.ann).toBeGreaterThan(nearest[0]!.bob)
    expect(nearest[0]!.bob).toBeGreaterThan(0.85)
    await t.db.exec('ANALYZE memories; SET enable_seqscan = off; SET enable_sort = off')
    const scans = await indexScans(t.db, MEMORY_INDEX)
    const saved = await t.engine.remember({ content: text, category: 'fact', userId: 'bob' })
    expect(saved.action).toBe('superseded')
    expect(await indexScans(t.db, MEMORY_INDEX)).toBeGreaterThan(scans)
    const { rows } = await t.db.query<{ user_id: string; content: string }>(
      `SELECT user_id, content FROM memories WHERE superseded_by = $1`,
      [saved.id],
    )
    expect(rows).toEqual([{ user_id: 'bob', content: 'deploy notes 7 about the release pipeline of service s7 in zone z7' }])
  })

  it(`embedding ≥ ${BULK_VECTOR_ROWS} memories drops their HNSW index after the first batch and builds it once at the end`, async () => {
    const at: { db?: Queryable } = {}
    const watch = watching(at, MEMORY_INDEX)
    await using t = await openTestEngine({ embedder: watch.embedder, indexing: 'manual' })
    at.db = t.db
    const before = await indexOid(t.db, MEMORY_INDEX)
    expect(before).not.toBeNull()
    await seedMemories(t.db, 'ann', deployNotes(BULK_VECTOR_ROWS + 100))
    await t.db.exec(`UPDATE memories SET vector = NULL, embed_model = NULL`)

    expect((await t.engine.indexNow()).pending).toBe(0)
    expect(watch.seen[0]).toBe(true)
    expect(watch.seen.length).toBeGreaterThan(1)
    expect(watch.seen.slice(1).every((present) => !present)).toBe(true)
    const after = await indexOid(t.db, MEMORY_INDEX)
    expect(after).not.toBeNull()
    expect(after).not.toBe(before)
    // The chunks' index had nothing to wait for: left alone.
    expect(await indexOid(t.db)).not.toBeNull()
    await t.db.exec('ANALYZE memories; SET enable_seqscan = off; SET enable_sort = off')
    const scans = await indexScans(t.db, MEMORY_INDEX)
    const [own] = await t.engine.memories.search(OWN_NOTE, { userId: 'ann' })
    expect(own?.scores.vector).toBeCloseTo(1, 5)
    expect(await indexScans(t.db, MEMORY_INDEX)).toBeGreaterThan(scans)
  })

  it(`an import of ≥ ${BULK_VECTOR_ROWS} new memories with vectors builds their index once; merging them again leaves it`, async () => {
    await using source = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    await seedMemories(source.db, 'ann', deployNotes(BULK_VECTOR_ROWS + 20))
    const file = await source.engine.exportFile()

    await using target = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    const oid = () => indexOid(target.db, MEMORY_INDEX)
    const before = await oid()
    expect(before).not.toBeNull()
    const report = await target.engine.importFile(file, { mode: 'replace' })
    expect(report.inserted.memories).toBe(BULK_VECTOR_ROWS + 20)
    const after = await oid()
    expect(after).not.toBeNull()
    expect(after).not.toBe(before)
    const { rows } = await target.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM memories WHERE vector IS NOT NULL`)
    expect(rows[0]?.n).toBe(BULK_VECTOR_ROWS + 20)
    await target.db.exec('ANALYZE memories; SET enable_seqscan = off; SET enable_sort = off')
    const [own] = await target.engine.memories.search(OWN_NOTE, { userId: 'ann' })
    expect(own?.scores.vector).toBeCloseTo(1, 5)

    const again = await target.engine.importFile(file)
    expect(again.inserted.memories).toBe(0)
    expect(await oid()).toBe(after)
  })
})

describe('deleted vectors', () => {
  const debt = async (db: Queryable) => (await db.query<{ n: number }>(`SELECT chunks::int AS n FROM vector_debt`)).rows[0]?.n

  it('are counted as they go; past one in a hundred the statistics refresh builds the index again before it vacuums', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual', statistics: 'manual' })
    // Seven conversations of 60 chunks, all with vectors; one deleted chunk had none.
    await seedChunks(t.db, 420)
    await t.engine.indexNow()
    await t.db.query(`UPDATE chunks SET embedding = NULL, embed_model = NULL WHERE id = 'ch0'`)
    const built = await indexOid(t.db)
    expect(built).not.toBeNull()

    // Fewer than VECTOR_DEBT_MIN: counted, and the refresh leaves the index alone.
    await t.engine.forget({ eventId: seededEventId(7) })
    await t.engine.forget({ eventId: seededEventId(0) })
    expect(await debt(t.db)).toBe(1)
    await t.engine.refreshStatistics()
    expect(await indexOid(t.db)).toBe(built)
    expect(await debt(t.db)).toBe(1)

    // Two conversations archived: 120 vectors gone, more than a hundredth of the 418 left.
    await t.engine.archives.create({ conversationIds: ['c1', 'c2'] })
    expect(await debt(t.db)).toBe(121)
    // A build that fails is reported; the old index and the count stay, and the refresh goes on.
    await refuseIndexBuilds(t.db)
    const errors: EngineErrorEvent[] = []
    t.engine.onError((e) => errors.push(e))
    await t.engine.refreshStatistics()
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining('Refreshing the planner statistics failed')])
    expect(await indexOid(t.db)).toBe(built)
    expect(await debt(t.db)).toBe(121)
    await t.db.exec('DROP EVENT TRIGGER no_builds')
    await t.engine.refreshStatistics()
    const rebuilt = await indexOid(t.db)
    expect(rebuilt).not.toBeNull()
    expect(rebuilt).not.toBe(built)
    expect(await debt(t.db)).toBe(0)
    await expectOwnNeighbour(t.engine, t.db, seededEventId(412))
    // A bulk build (here a replace import of more than BULK_VECTOR_ROWS vectors, whose
    // deletions are counted first) resets the count as well.
    await t.engine.forget({ conversationId: 'c3' })
    expect(await debt(t.db)).toBe(60)
    await t.engine.importFile(await bulkExport(), { mode: 'replace' })
    expect(await debt(t.db)).toBe(0)

    // A vector replaced by another counts; one filled where there was none, or cleared, does not.
    const ids = (await t.db.query<{ id: string }>(`SELECT id FROM chunks WHERE embedding IS NOT NULL ORDER BY id LIMIT 3`)).rows.map((r) => r.id)
    expect(ids).toHaveLength(3)
    const [a, b, c] = ids
    await t.db.query(`UPDATE chunks SET embedding = (SELECT embedding FROM chunks WHERE id = $1) WHERE id = $2`, [a, b])
    await t.db.query(`UPDATE chunks SET embedding = NULL WHERE id = $1`, [c])
    await t.db.query(`UPDATE chunks SET embedding = (SELECT embedding FROM chunks WHERE id = $1) WHERE id = $2`, [a, c])
    expect(await debt(t.db)).toBe(1)
    // rebuildIndex clears every vector and counts them at once.
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM chunks WHERE embedding IS NOT NULL`)
    await t.engine.rebuildIndex()
    expect(await debt(t.db)).toBe(1 + (rows[0]?.n ?? 0))
  })
})
