import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Queryable } from '../../src/core/kernel/db.ts'
import type { Embedder } from '../../src/core/kernel/embedder.ts'
import { createEngine, type Engine } from '../../src/core/engine.ts'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { type EngineErrorEvent, type IndexStatus, PENDING_BATCH_SQL } from '../../src/core/maintenance/indexer.ts'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import { createTransformersEmbedder, type TransformersEmbedder } from '../../src/embed/transformers-embedder.ts'
import { lookupVectorOid, vectorQueryOptions } from '../../src/embed/vectors.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestDb, openTestMemory } from '../support/memory.ts'

const scope = { conversationId: 'c1', userId: 'u1' }
const human = { type: 'human', id: 'u1' } as const

function message(text: string) {
  return { kind: 'message', scope, actor: human, content: { text } } as const
}

/** Rows of `table` read so far by scans and index fetches, from Postgres' statistics. */
async function rowsRead(db: Queryable, table: string): Promise<number> {
  await db.query('SELECT pg_stat_force_next_flush()')
  const { rows } = await db.query<{ n: number }>(
    `SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int AS n FROM pg_stat_user_tables WHERE relname = $1`,
    [table],
  )
  return rows[0]?.n ?? 0
}

function deferred<T>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Wraps an embedder so each call waits for `release()`; `started` resolves on the first call. */
function gated(inner: Embedder) {
  const gate = deferred<void>()
  const started = deferred<void>()
  let calls = 0
  const embedder: Embedder = {
    id: inner.id,
    dims: inner.dims,
    async embed(texts) {
      calls++
      started.resolve()
      await gate.promise
      return inner.embed(texts)
    },
  }
  return { embedder, started: started.promise, release: () => gate.resolve(), calls: () => calls }
}

async function chunkModels(db: Queryable) {
  const { rows } = await db.query<{ embed_model: string | null; n: number }>(
    `SELECT embed_model, count(*)::int AS n FROM chunks GROUP BY embed_model ORDER BY embed_model NULLS FIRST`,
  )
  return rows.map((r) => [r.embed_model, r.n])
}

describe('background indexing', () => {
  it('a write returns before its chunks are embedded, and waitForIndex sees them all embedded with the model id', async () => {
    const gate = gated(createHashEmbedder())
    await using t = await openTestEngine({ embedder: gate.embedder })
    const first = await t.engine.record(message('the login page throws after the upgrade'))
    const second = await t.engine.record(message('users cannot sign in with SSO'))
    expect(first.chunkIds).toHaveLength(1)
    expect(second.chunkIds).toHaveLength(1)

    await gate.started
    const during = await t.engine.indexing()
    expect(during).toEqual({ pending: 2, done: 0, model: 'hash/384', embedder: 'ready', running: true })

    gate.release()
    const after = await t.engine.waitForIndex({ timeoutMs: 10_000 })
    expect(after).toEqual({ pending: 0, done: 2, model: 'hash/384', embedder: 'ready', running: false })
    expect(await chunkModels(t.db)).toEqual([['hash/384', 2]])
    expect((await t.engine.stats()).indexing).toEqual(after)
    expect((await t.engine.stats()).unembeddedChunks).toBe(0)
  })

  it('a model that is still loading when the memory opens gets its vector indexes once it is ready', async () => {
    await using t = await openTestEngine({ embedder: Promise.resolve(createHashEmbedder()), indexing: 'manual' })
    await t.engine.recordTurn({ conversationId: 'c', user: 'index me', agent: 'indexed' })
    await t.engine.indexNow()
    const { rows } = await t.db.query<{ name: string }>(
      `SELECT indexname AS name FROM pg_indexes WHERE indexdef LIKE '% USING hnsw %' ORDER BY 1`,
    )
    expect(rows.map((r) => r.name)).toEqual(['chunks_embedding_hnsw_384', 'memories_vector_hnsw_384'])
  })

  it("stats() reports each index's size: the chunks' HNSW index grows as their vectors are written", async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    for (let n = 0; n < 40; n++) await t.engine.record(message(`note ${n} about the parser and the login page`))
    const before = (await t.engine.stats()).indexBytes
    expect(Object.keys(before)).toEqual(expect.arrayContaining(['events_pkey', 'chunks_tsv', 'chunks_embedding_hnsw_384', 'edges_document']))
    expect(Object.values(before).every((b) => Number.isInteger(b) && b >= 0)).toBe(true)
    await t.engine.indexNow()
    const after = (await t.engine.stats()).indexBytes
    expect(after.chunks_embedding_hnsw_384).toBeGreaterThan(before.chunks_embedding_hnsw_384!)
    expect(after.events_pkey).toBe(before.events_pkey)
  })

  it('background batches wait for writes to pause (at most maxWaitMs); waitForIndex and stopping never wait', async () => {
    const calls: number[] = []
    const counting = (inner: Embedder): Embedder => ({
      id: inner.id,
      dims: inner.dims,
      embed(texts) {
        calls.push(performance.now())
        return inner.embed(texts)
      },
    })
    // Writes never pause long enough: nothing is embedded in the background meanwhile…
    {
      await using t = await openTestEngine({ embedder: counting(createHashEmbedder()), indexingPause: { quietMs: 60_000, maxWaitMs: 60_000 } })
      for (let n = 0; n < 5; n++) await t.engine.record(message(`note ${n} about the invoice export`))
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(calls).toEqual([])
      expect((await t.engine.indexing()).pending).toBe(5)
      // …until someone waits for the index, which does not wait for the (60 s) pause.
      expect((await t.engine.waitForIndex({ timeoutMs: 10_000 })).pending).toBe(0)
      expect(calls.length).toBeGreaterThan(0)
      await t.engine.record(message('one more note'))
      // Stopping ends a pause at once instead of waiting it out.
      await Promise.race([
        t.engine.stopIndexing(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('stopIndexing waited for the pause')), 20_000)),
      ])
    }
    // A steady stream of writes still gets its vectors once a batch has waited maxWaitMs.
    calls.length = 0
    {
      await using t = await openTestEngine({ embedder: counting(createHashEmbedder()), indexingPause: { quietMs: 60_000, maxWaitMs: 200 } })
      const began = performance.now()
      let writes = 0
      while (calls.length === 0 && performance.now() - began < 20_000) {
        await t.engine.record(message(`streamed note ${writes++}`))
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      expect(calls.length).toBeGreaterThan(0)
      expect(writes).toBeGreaterThan(1)
      await t.engine.stopIndexing()
    }
    const db = await openTestDb()
    await expect(createEngine({ db, indexingPause: { quietMs: -1 } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await db.close()
    // openMemory passes it on.
    await expect(openTestMemory({ indexingPause: { maxWaitMs: 0.5 } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('under writes that never pause, a run waits maxWaitMs once, then indexes the backlog without waiting again', async () => {
    const inner = createHashEmbedder()
    // One text per model call: a wait before each call holds every text for maxWaitMs.
    const embedder: Embedder = { id: inner.id, dims: inner.dims, batchSize: 1, embed: (texts) => inner.embed(texts) }
    await using t = await openTestEngine({ embedder, indexingPause: { quietMs: 60_000, maxWaitMs: 500 } })
    for (let i = 0; i < 20; i++) await t.engine.record(message(`seeded note ${i} about the invoice export`))
    // A write every few milliseconds, never a pause of quietMs, until nothing waits but the
    // write just made.
    let writes = 0
    let pending = Infinity
    while (pending > 1 && writes < 150) {
      await t.engine.record(message(`streamed note ${writes++} about the invoice export`))
      pending = (await t.engine.indexing()).pending
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    expect(pending).toBeLessThanOrEqual(1)
    // Waiting 500 ms before each text, it fell behind: after 150 writes, more waited than at first.
    expect(writes).toBeLessThan(150)
    await t.engine.stopIndexing()
  })

  it("a caller's embed waits for one small background call at most, not for the whole batch", async () => {
    const inner = createHashEmbedder()
    const calls: { texts: string[]; background: boolean }[] = []
    let queue: Promise<unknown> = Promise.resolve()
    const secondCall = deferred<void>()
    // Like the bundled model: one call at a time, in order, 5 ms a text.
    const serial: Embedder = {
      id: inner.id,
      dims: inner.dims,
      batchSize: 32,
      embed(texts) {
        const run = queue.then(async () => {
          const background = !texts.includes('the query')
          calls.push({ texts, background })
          if (calls.filter((c) => c.background).length === 2) secondCall.resolve()
          await new Promise((resolve) => setTimeout(resolve, 5 * texts.length))
          return inner.embed(texts)
        })
        queue = run.catch(() => undefined)
        return run
      },
    }
    await using t = await openTestEngine({ embedder: serial, indexing: 'manual' })
    for (let i = 0; i < 96; i++) await t.engine.record(message(`note number ${i} about the release`))
    const indexing = t.engine.indexNow()
    await secondCall.promise
    const before = calls.length
    await t.engine.embed(['the query'])
    await indexing
    // Issued while the second background call ran: behind it alone, and the call was small.
    const query = calls.findIndex((c) => !c.background)
    expect(query).toBe(before)
    expect(calls[before - 1]!.texts.length).toBeLessThanOrEqual(8)
    expect(calls.filter((c) => c.background).flatMap((c) => c.texts)).toHaveLength(96)
  })

  it("indexes through an embedder's background lane, and callers' embeds through embed", async () => {
    const inner = createHashEmbedder()
    const lanes = { embed: [] as string[], background: [] as string[] }
    const embedder: Embedder = {
      id: inner.id,
      dims: inner.dims,
      embed: (texts) => (lanes.embed.push(...texts), inner.embed(texts)),
      background: (texts) => (lanes.background.push(...texts), inner.embed(texts)),
    }
    await using t = await openTestEngine({ embedder, indexing: 'manual' })
    for (let i = 0; i < 5; i++) await t.engine.record(message(`note number ${i} about the release`))
    await t.engine.indexNow()
    await t.engine.embed(['the query'])
    expect(lanes.background).toHaveLength(5)
    expect(lanes.embed).toEqual(['the query'])
    expect((await t.engine.indexing()).pending).toBe(0)
  })

  it('stores exactly the vector the embedder returned, sent in binary', async () => {
    const embedder = createHashEmbedder()
    await using t = await openTestEngine({ embedder })
    await t.engine.record(message('binary vectors keep every float32 bit'))
    await t.engine.waitForIndex()
    const options = vectorQueryOptions(await lookupVectorOid(t.db))
    const { rows } = await (t.db as Queryable).query<{ embedding: Float32Array }>('SELECT embedding FROM chunks', [], options)
    const [expected] = await embedder.embed(['binary vectors keep every float32 bit'])
    expect(Array.from(rows[0]!.embedding)).toEqual(Array.from(expected!))
  })

  it('in manual mode nothing is embedded until indexNow, which embeds in batches of 32', async () => {
    const embedder = createHashEmbedder()
    let calls = 0
    const counting: Embedder = { ...embedder, embed: (texts) => (calls++, embedder.embed(texts)) }
    await using t = await openTestEngine({ embedder: counting, indexing: 'manual' })
    for (let i = 0; i < 70; i++) await t.engine.record(message(`note number ${i} about the release`))
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await t.engine.indexing()).toMatchObject({ pending: 70, done: 0, running: false })
    expect(calls).toBe(0)

    const progress: IndexStatus[] = []
    const stop = t.engine.onIndexProgress((s) => progress.push(s))
    expect(await t.engine.indexNow()).toMatchObject({ pending: 0, done: 70 })
    stop()
    expect(calls).toBe(3)
    expect(progress.map((p) => [p.pending, p.running])).toEqual([
      [70, true],
      [38, true],
      [6, true],
      [0, false],
    ])
  })

  it('progress moves each batch from pending to done without counting again, unless a write came in', async () => {
    const inner = createHashEmbedder()
    const at: { engine?: Engine } = {}
    let calls = 0
    const writing: Embedder = {
      id: inner.id,
      dims: inner.dims,
      async embed(texts) {
        // A write lands while the second batch is being embedded.
        if (++calls === 2) await at.engine?.record(message('a note written during the run'))
        return inner.embed(texts)
      },
    }
    await using t = await openTestEngine({ embedder: writing, indexing: 'manual' })
    at.engine = t.engine
    for (let i = 0; i < 100; i++) await t.engine.record(message(`note number ${i} about the release`))
    const query = t.db.query.bind(t.db)
    let counted = 0
    t.db.query = ((sql: string, ...rest: unknown[]) => {
      if (sql.includes('WITH waiting AS')) counted++
      return (query as (...a: unknown[]) => unknown)(sql, ...rest)
    }) as typeof t.db.query
    const progress: IndexStatus[] = []
    const stop = t.engine.onIndexProgress((s) => progress.push(s))
    expect(await t.engine.indexNow()).toMatchObject({ pending: 0, done: 101 })
    stop()
    // 100 wait; 32 stored; 32 more and one written meanwhile (counted again: 37); 32 more.
    expect(progress.map((p) => [p.pending, p.done, p.running])).toEqual([
      [100, 0, true],
      [68, 32, true],
      [37, 64, true],
      [5, 96, true],
      [0, 101, false],
    ])
    // Counted when the run started, after the batch with the write and when it ended; then
    // twice by indexNow (nothing left?, its answer). Counting after every batch made it 8.
    expect(counted).toBe(5)
  })

  it('finding and counting the rows that wait reads indexes, never every chunk, in the indexer and in stats()', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    for (let i = 0; i < 40; i++) await t.engine.record(message(`note number ${i} about the release`))
    await t.engine.indexNow()
    // Vectors of another model wait too, and are found through chunks_embed_model.
    await t.db.exec(`UPDATE chunks SET embed_model = 'older/384' WHERE id IN (SELECT id FROM chunks ORDER BY id LIMIT 5)`)
    for (let i = 0; i < 10; i++) await t.engine.record(message(`later note ${i}`))
    const chunkScans = async () => {
      await t.db.query('SELECT pg_stat_force_next_flush()')
      const { rows } = await t.db.query<{ n: number }>(`SELECT seq_scan::int AS n FROM pg_stat_user_tables WHERE relname = 'chunks'`)
      return rows[0]?.n ?? 0
    }
    // Priced out of scans, each statement shows whether an index can answer it.
    await t.db.exec('SET enable_seqscan = off')
    const before = await chunkScans()
    // stats() counts what waits the same way.
    expect((await t.engine.stats()).unembeddedChunks).toBe(15)
    const progress: IndexStatus[] = []
    const stop = t.engine.onIndexProgress((s) => progress.push(s))
    const status = await t.engine.indexNow()
    stop()
    const after = await chunkScans()
    await t.db.exec('RESET enable_seqscan')
    expect(progress[0]).toMatchObject({ pending: 15, done: 35, running: true })
    expect(status).toMatchObject({ pending: 0, done: 50 })
    expect(await chunkModels(t.db)).toEqual([['hash/384', 50]])
    expect(after - before).toBe(0)
  })

  it('picking the next batch reads about one batch of chunks, however many wait for the new model', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    for (let i = 0; i < 150; i++) await t.engine.record(message(`note number ${i} about the release`))
    await t.engine.indexNow()
    // All 150 chunks hold hash/384 vectors: a memory opened with hash/256 re-embeds every one.
    const before = await rowsRead(t.db, 'chunks')
    const { rows } = await t.db.query<{ kind: string; id: string }>(PENDING_BATCH_SQL, ['hash/256', 32])
    const read = (await rowsRead(t.db, 'chunks')) - before
    expect(rows).toHaveLength(32)
    expect(new Set(rows.map((r) => r.id)).size).toBe(32)
    expect(rows.every((r) => r.kind === 'chunk')).toBe(true)
    // One ordered walk of chunks_embed_model stops after the batch; sorting every waiting
    // chunk by time read all 150 for each batch.
    expect(read).toBeGreaterThan(0)
    expect(read).toBeLessThanOrEqual(40)
  })

  it('picking the next batch reads only the memories that wait, however many do not', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    const texts = Array.from({ length: 200 }, (_, i) => `deploy note ${i} about service s${i % 17}`)
    const vectors = await createHashEmbedder().embed(texts)
    await t.db.query(
      `INSERT INTO memories (id, user_id, scope, category, source, confidence, content, hash, vector, embed_model, created_at, updated_at)
       SELECT 'mem_' || k, 'u1', 'user', 'fact', 'explicit', 1, x.t, md5(x.t), x.v::vector, 'hash/384', now(), now()
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY x(t, v, k)`,
      [texts, vectors.map((v) => `[${[...v].join(',')}]`)],
    )
    // Six wait: three with another model's vector, three with none.
    await t.db.exec(`UPDATE memories SET embed_model = 'older/384' WHERE id IN ('mem_1', 'mem_2', 'mem_3')`)
    await t.db.exec(`UPDATE memories SET vector = NULL, embed_model = NULL WHERE id IN ('mem_4', 'mem_5', 'mem_6')`)
    await t.db.exec('ANALYZE memories')
    const before = await rowsRead(t.db, 'memories')
    const { rows } = await t.db.query<{ kind: string; id: string }>(PENDING_BATCH_SQL, ['hash/384', 32])
    const read = (await rowsRead(t.db, 'memories')) - before
    expect(rows.map((r) => `${r.kind} ${r.id}`).sort()).toEqual(
      ['mem_1', 'mem_2', 'mem_3', 'mem_4', 'mem_5', 'mem_6'].map((id) => `memory ${id}`),
    )
    // The memories' two indexes give the six; a scan read all 200 for every batch.
    expect(read).toBeLessThanOrEqual(12)
    expect((await t.engine.indexNow()).pending).toBe(0)
    const { rows: models } = await t.db.query<{ model: string; n: number }>(
      `SELECT embed_model AS model, count(*)::int AS n FROM memories WHERE vector IS NOT NULL GROUP BY 1`,
    )
    expect(models).toEqual([{ model: 'hash/384', n: 200 }])
  })

  it('a query issued while a long indexing run is under way completes before the run ends', async () => {
    const inner = createHashEmbedder()
    const log: string[] = []
    let batch = 0
    const firstBatch = deferred<void>()
    const slow: Embedder = {
      id: inner.id,
      dims: inner.dims,
      async embed(texts) {
        const n = ++batch
        log.push(`batch ${n} start`)
        firstBatch.resolve()
        await new Promise((resolve) => setTimeout(resolve, 15))
        log.push(`batch ${n} end`)
        return inner.embed(texts)
      },
    }
    await using t = await openTestEngine({ embedder: slow, indexing: 'manual' })
    for (let i = 0; i < 160; i++) await t.engine.record(message(`log line ${i} from the nightly build`))

    const run = t.engine.indexNow().then(() => log.push('indexing done'))
    await firstBatch.promise
    const events = await t.engine.events.list({ conversationId: 'c1', limit: 5 })
    log.push('query done')
    await run

    expect(events).toHaveLength(5)
    // How many batches depends on the measured time per text (embed-lanes.ts), so on the machine.
    expect(batch).toBeGreaterThan(1)
    // The query waited for at most the batch in flight.
    expect(log.indexOf('query done')).toBeLessThan(log.indexOf('batch 2 start'))
    expect(log.at(-1)).toBe('indexing done')
  })

  it('memories embed on write when the model is ready, and in the background when it was still loading', async () => {
    const loading = deferred<Embedder>()
    await using t = await openTestEngine({ embedder: loading.promise })
    const early = await t.engine.remember({ content: 'User prefers tabs over spaces', category: 'preference' })
    expect(await t.engine.indexing()).toMatchObject({ embedder: 'loading', model: null, pending: 1 })

    loading.resolve(createHashEmbedder())
    await t.engine.waitForIndex()
    const late = await t.engine.remember({ content: 'The API is deployed on Fridays', category: 'fact' })
    const { rows } = await t.db.query<{ id: string; embed_model: string | null }>(
      'SELECT id, embed_model FROM memories ORDER BY id',
    )
    expect(rows).toEqual([
      { id: early.id, embed_model: 'hash/384' },
      { id: late.id, embed_model: 'hash/384' },
    ])
    expect(await t.engine.indexing()).toMatchObject({ pending: 0, done: 2 })
  })
})

describe('model identity', () => {
  it('opening the memory with another model counts every row as pending and re-embeds it', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder() })
    await t.engine.record(message('deploy the staging environment'))
    await t.engine.record(message('rotate the signing keys'))
    await t.engine.remember({ content: 'Staging deploys need approval', category: 'constraint' })
    await t.engine.waitForIndex()
    await t.engine.stopIndexing()

    const other = createHashEmbedder({ dims: 256 })
    const reopened = await createEngine({ db: t.db, embedder: other, indexing: 'manual' })
    expect(await reopened.indexing()).toEqual({
      pending: 3,
      done: 0,
      model: 'hash/256',
      embedder: 'ready',
      running: false,
    })
    expect((await reopened.stats()).unembeddedChunks).toBe(2)
    await reopened.indexNow()
    expect(await chunkModels(t.db)).toEqual([['hash/256', 2]])
    const { rows } = await t.db.query<{ embed_model: string; dims: number }>(
      'SELECT embed_model, vector_dims(vector) AS dims FROM memories',
    )
    expect(rows).toEqual([{ embed_model: 'hash/256', dims: 256 }])
    await reopened.stopIndexing()
  })

  it('rebuildIndex clears every vector and embeds everything again', async () => {
    await using t = await openTestEngine({ embedder: createHashEmbedder(), indexing: 'manual' })
    await t.engine.record(message('first'))
    await t.engine.record(message('second'))
    await t.engine.remember({ content: 'A memory', category: 'fact' })
    await t.engine.indexNow()
    expect(await t.engine.rebuildIndex()).toEqual({ chunks: 2, memories: 1 })
    expect(await t.engine.indexing()).toMatchObject({ pending: 3, done: 0 })
    expect(await t.engine.indexNow()).toMatchObject({ pending: 0, done: 3 })
  })
})

describe('when the model cannot be loaded', () => {
  it('reports MODEL_UNAVAILABLE once and keeps working on keywords', async () => {
    const loading = deferred<Embedder>()
    await using t = await openTestEngine({ embedder: loading.promise })
    const errors: EngineErrorEvent[] = []
    t.engine.onError((e) => errors.push(e))
    createTransformersEmbedder({ modelPath: '/nonexistent/engram-model' }).then(loading.resolve, loading.reject)

    await expect(t.engine.waitForIndex()).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(errors.map((e) => e.code)).toEqual(['MODEL_UNAVAILABLE'])
    expect(errors[0]!.message).toContain('/nonexistent/engram-model')

    const written = await t.engine.record(message('the login page throws after the upgrade'))
    expect(written.chunkIds).toHaveLength(1)
    const remembered = await t.engine.remember({ content: 'Login uses SSO', category: 'fact' })
    expect(remembered.action).toBe('created')
    const hits = await t.engine.recall('SSO login')
    expect(hits.map((h) => [h.id, h.scores.vector])).toEqual([[remembered.id, null]])
    const { rows } = await t.db.query<{ id: string }>(
      `SELECT id FROM chunks WHERE tsv @@ websearch_to_tsquery('english', 'login upgrade')`,
    )
    expect(rows.map((r) => r.id)).toEqual(written.chunkIds)

    const status = await t.engine.indexing()
    expect(status).toMatchObject({ embedder: 'unavailable', model: null, running: false, pending: 2, done: 0 })
    expect(status.lastError?.code).toBe('MODEL_UNAVAILABLE')
    await expect(t.engine.embed(['anything'])).rejects.toBeInstanceOf(MemoryError)
    expect(errors).toHaveLength(1)
  })

  it('a memory without an embedder says so instead of waiting forever', async () => {
    await using t = await openTestEngine()
    expect(await t.engine.indexing()).toEqual({ pending: 0, done: 0, model: null, embedder: 'none', running: false })
    await expect(t.engine.waitForIndex()).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
  })

  it('waitForIndex gives up with TIMEOUT or ABORTED', async () => {
    const gate = gated(createHashEmbedder())
    await using t = await openTestEngine({ embedder: gate.embedder })
    await t.engine.record(message('waiting on a stuck model'))
    await expect(t.engine.waitForIndex({ timeoutMs: 30 })).rejects.toMatchObject({ code: 'TIMEOUT' })
    const controller = new AbortController()
    const waiting = t.engine.waitForIndex({ signal: controller.signal })
    controller.abort()
    await expect(waiting).rejects.toMatchObject({ code: 'ABORTED' })
    gate.release()
    await t.engine.waitForIndex()
  })
})

describe('with the bundled MiniLM model', () => {
  let model: TransformersEmbedder
  beforeAll(async () => {
    model = await createTransformersEmbedder()
  })
  afterAll(async () => {
    await model?.dispose()
  })

  it('finds a paraphrase that shares no keyword with the query by vector similarity', async () => {
    await using t = await openTestEngine({ embedder: model })
    const paraphrase = await t.engine.record(message('resolve authentication issue'))
    await t.engine.record(message('buy groceries'))
    await t.engine.record(message('The mitochondria is the powerhouse of the cell'))
    expect(await t.engine.waitForIndex({ timeoutMs: 30_000 })).toMatchObject({
      pending: 0,
      done: 3,
      model: 'all-MiniLM-L6-v2/q8',
    })

    const query = 'fix the login bug'
    const keyword = await t.db.query(`SELECT id FROM chunks WHERE tsv @@ websearch_to_tsquery('english', $1)`, [
      query,
    ])
    expect(keyword.rows).toEqual([])

    const [vector] = await t.engine.embed([query])
    const options = vectorQueryOptions(await lookupVectorOid(t.db))
    const { rows } = await (t.db as Queryable).query<{ id: string; similarity: number }>(
      `SELECT id, 1 - (embedding <=> $1::vector) AS similarity FROM chunks
       WHERE embed_model = $2 ORDER BY embedding <=> $1::vector, id`,
      [vector, model.id],
      options,
    )
    expect(rows[0]!.id).toBe(paraphrase.chunkIds[0])
    expect(rows[0]!.similarity).toBeCloseTo(0.588, 1)
    expect(rows[1]!.similarity).toBeLessThan(0.2)
  })
})
