/**
 * The Node side of `npm run bench`: the engine in-process over an in-memory PGlite, Orama,
 * brute-force cosine and a naive PGlite write path, all on the same synthetic memory; and
 * `remember` under steady writes with the bundled model (bench/lib/steady-writes.ts).
 */
import type { PGlite } from '@electric-sql/pglite'
import { create, insertMultiple, load, search, save } from '@orama/orama'
import type { Db } from '../../src/core/kernel/db.ts'
import { createEngine, type Engine, type EngineOptions } from '../../src/core/engine.ts'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import { createTransformersEmbedder } from '../../src/embed/transformers-embedder.ts'
import { lookupVectorOid, vectorQueryOptions } from '../../src/embed/vectors.ts'
import { durableDb, openPGlite } from '../../src/runtime/pglite.ts'
import { BENCH_SCOPE, embeddingSentences, makeQueries, makeTurns, sessionShape } from './data.ts'
import { meanTokens } from './tokens.ts'
import { bruteForceTopK } from './brute-force.ts'
import { latency, type Metric, median } from './metrics.ts'
import { CYPHER_METRICS, cypherSuite } from './cypher-suite.ts'
import { runSteadyWrites } from './steady-writes.ts'

export interface SuiteOptions {
  size: number
  /** Timed operations per latency metric, after `warmup` untimed ones. */
  ops: number
  warmup: number
  /** Passes over the embedding sentences (median reported). */
  embedPasses: number
  embedSentences: number
  /** Runs of export, import and restore (whole-memory operations). */
  bulkRuns: number
  naiveRows: number
  wants: (name: string) => boolean
  log: (line: string) => void
  /** `cacheMB` of the engine's memory (default: the library's). */
  cacheMB?: number
  /** The steady-writes run behind `remember_ms`: events waiting for vectors, and seconds of load. */
  steady: { events: number; seconds: number }
}

export interface SuiteOutput {
  metrics: Record<string, Metric>
  skipped: Record<string, string>
}

const DIMS = 384
const embedder = createHashEmbedder({ dims: DIMS })

export interface Dataset {
  pg: PGlite
  engine: Engine
  db: Db
  conversations: number
  chunkIds: string[]
  texts: string[]
  vectors: Float32Array[]
}

/** An engine method that may not exist in this build (it lands from another area). */
function optional<T extends (...args: never[]) => Promise<unknown>>(engine: Engine, name: string): T | undefined {
  const fn = (engine as unknown as Record<string, unknown>)[name]
  return typeof fn === 'function' ? (fn.bind(engine) as T) : undefined
}

async function openEngine(pg: PGlite): Promise<Engine> {
  // Vectors are filled in one timed step after the writes (`indexNow()` where the engine has a
  // background indexer), so the write rate measures the write path alone.
  const manual: Record<string, unknown> = { indexing: 'manual' }
  const options: EngineOptions = { db: durableDb(pg), embedder, workspace: { mode: 'local', root: '/bench/repo' } }
  return createEngine({ ...options, ...manual })
}

export async function buildDataset(options: SuiteOptions, out: SuiteOutput): Promise<Dataset> {
  const shape = sessionShape(options.size)
  const pg = await openPGlite(options.cacheMB === undefined ? {} : { cacheMB: options.cacheMB })
  const engine = await openEngine(pg)
  const db = durableDb(pg)
  options.log(`  recording ${shape.turns} turns (${shape.turns * 4} events) through recordTurn…`)
  const turns = makeTurns(shape, 42)
  const started = performance.now()
  for (const turn of turns) await engine.recordTurn(turn)
  const seconds = (performance.now() - started) / 1000
  out.metrics.engine_write_events_per_s = median([(turns.length * 4) / seconds], 'per_s', 'recordTurn in Node, in-memory PGlite, 4 events per turn, no vectors')

  // Vectors: the hash embedder (deterministic, instant) for chunks and queries on every side,
  // so the figures measure search, not the model. The engine's indexer fills them when this
  // build has one; otherwise they are written here as the indexer would, in binary.
  const indexNow = optional<() => Promise<unknown>>(engine, 'indexNow')
  const fillStarted = performance.now()
  const { rows } = await pg.query<{ id: string; text: string }>('SELECT id, text FROM chunks ORDER BY id')
  const chunkIds = rows.map((r) => r.id)
  const texts = rows.map((r) => r.text)
  const vectors = await embedder.embed(texts)
  if (indexNow) {
    await indexNow()
  } else {
    const options_ = vectorQueryOptions(await lookupVectorOid(db))
    for (let from = 0; from < chunkIds.length; from += 1000) {
      await db.transaction(async (tx) => {
        for (let i = from; i < Math.min(from + 1000, chunkIds.length); i++) {
          await tx.query('UPDATE chunks SET embedding = $1, embed_model = $2 WHERE id = $3', [vectors[i], embedder.id, chunkIds[i]], options_)
        }
      })
    }
  }
  const fillSeconds = (performance.now() - fillStarted) / 1000
  out.metrics.engine_vector_fill_per_s = median(
    [chunkIds.length / fillSeconds],
    'per_s',
    indexNow
      ? "the engine's indexer (indexNow) with the hash embedder"
      : 'one UPDATE per chunk with a binary vector parameter, 1,000 per transaction, hash embedder',
  )
  const { rows: missing } = await pg.query<{ n: number }>('SELECT count(*)::int AS n FROM chunks WHERE embedding IS NULL')
  if ((missing[0]?.n ?? 0) > 0) throw new Error(`${missing[0]?.n} chunks have no vector after filling`)
  options.log(`  ${chunkIds.length} chunks with vectors; ${turns.length * 4} events in ${seconds.toFixed(1)} s`)
  return { pg, engine, db, conversations: shape.conversations, chunkIds, texts, vectors }
}

/**
 * The bench's memory of `size` events built as `buildDataset` builds it, for a script that
 * measures one thing over it (`bench/peer-garbage.ts`, `bench/keyword-branches.ts`): nothing
 * else is timed, and its progress goes to `log`.
 */
export function buildBenchMemory(size: number, cacheMB: number | undefined, log: (line: string) => void): Promise<Dataset> {
  const options: SuiteOptions = { size, ops: 0, warmup: 0, embedPasses: 0, embedSentences: 0, bulkRuns: 0, naiveRows: 0, steady: { events: 0, seconds: 0 }, wants: () => true, log }
  return buildDataset(cacheMB === undefined ? options : { ...options, cacheMB }, { metrics: {}, skipped: {} })
}

const oramaSchema = { id: 'string', text: 'string', embedding: `vector[${DIMS}]` } as const

// Orama's search parameter types are too deep for the compiler with a vector schema.
const oramaSearch = search as unknown as (db: unknown, params: Record<string, unknown>) => Promise<unknown>

/**
 * An Orama database of the memory's chunks: their ids, texts and vectors, inserted 1,000 at a
 * time, and the seconds the inserts took.
 */
export async function buildOrama(data: Dataset): Promise<{ db: ReturnType<typeof create>; seconds: number }> {
  const docs = data.texts.map((text, i) => ({ id: data.chunkIds[i]!, text, embedding: Array.from(data.vectors[i]!) }))
  const db = create({ schema: oramaSchema })
  const started = performance.now()
  await insertMultiple(db, docs, 1000)
  return { db, seconds: (performance.now() - started) / 1000 }
}

/** Orama's hybrid search for `query`, top 10, as the bench runs it. */
export async function searchOrama(db: ReturnType<typeof create>, query: string): Promise<void> {
  const [vector] = await embedder.embed([query])
  await oramaSearch(db, { mode: 'hybrid', term: query, vector: { value: vector!, property: 'embedding' }, similarity: 0.1, limit: 10 })
}

/**
 * Engine search, Orama hybrid search and brute-force cosine, in blocks of one pass over the
 * queries each, the order of the three rotating from block to block: a noisy phase of the
 * machine still falls on all three, and each pays for the garbage its own searches leave.
 * Taken query by query, the engine's searches paid for Orama's major collections: at 100,000
 * events and 448 MiB, median ratio 1.046 per query with an Orama search after each against
 * none (`CACHE_MB=448 node bench/run.mjs bench/peer-garbage.ts`; bench/HISTORY.md,
 * "Each system's searches in blocks").
 */
async function searchSuite(data: Dataset, options: SuiteOptions, out: SuiteOutput): Promise<void> {
  const queries = makeQueries(50, 1234)
  const queryVectors = await embedder.embed(queries)
  const engineSearch = optional<(query: string, opts: Record<string, unknown>) => Promise<unknown>>(data.engine, 'search')
  const wantEngine = options.wants('search_ms')
  if (wantEngine && !engineSearch) out.skipped.search_ms = 'not available: this build has no search()'

  let orama: ReturnType<typeof create> | undefined
  if (options.wants('orama_search_ms') || options.wants('orama_insert_per_s') || options.wants('orama_restore_ms')) {
    const { db, seconds } = await buildOrama(data)
    out.metrics.orama_insert_per_s = median([data.texts.length / seconds], 'per_s', 'insertMultiple, batches of 1,000, text + 384-d vector per document')
    orama = db
  }

  let matrix: Float32Array | undefined
  if (options.wants('bruteforce_search_ms')) {
    matrix = new Float32Array(data.vectors.length * DIMS)
    data.vectors.forEach((v, i) => matrix!.set(v, i * DIMS))
  }

  let engineHits = 0
  const timings = { engine: [] as number[], orama: [] as number[], brute: [] as number[] }
  const systems: { name: keyof typeof timings; run: (query: string) => Promise<void> }[] = []
  if (wantEngine && engineSearch) {
    systems.push({
      name: 'engine',
      run: async (query) => {
        const hits = await engineSearch(query, { limit: 10, scope: BENCH_SCOPE })
        if (Array.isArray(hits)) engineHits += hits.length
      },
    })
  }
  if (orama && options.wants('orama_search_ms')) {
    const db = orama
    systems.push({
      name: 'orama',
      run: (query) => searchOrama(db, query),
    })
  }
  if (matrix) {
    const m = matrix
    systems.push({
      name: 'brute',
      run: async (query) => {
        const [vector] = await embedder.embed([query])
        bruteForceTopK(m, data.vectors.length, vector ?? queryVectors[0]!, 10)
      },
    })
  }
  const total = options.warmup + options.ops
  for (let from = 0, block = 0; from < total; from += queries.length, block++) {
    const order = systems.map((_, k) => systems[(k + block) % systems.length]!)
    for (const system of order) {
      for (let i = from; i < Math.min(from + queries.length, total); i++) {
        const t0 = performance.now()
        await system.run(queries[i % queries.length]!)
        if (i >= options.warmup) timings[system.name].push(performance.now() - t0)
      }
    }
  }
  // A search that finds nothing is fast and wrong: refuse to report it.
  if (timings.engine.length && engineHits === 0) throw new Error('search() returned no hits for any query')
  if (timings.engine.length) out.metrics.search_ms = latency(timings.engine, 'hybrid search(), top 10, hash-embedded query, Node in-memory PGlite')
  if (timings.orama.length) {
    out.metrics.orama_search_ms = latency(timings.orama, "Orama mode 'hybrid', top 10, similarity ≥ 0.1, same texts and vectors")
  }
  if (timings.brute.length) out.metrics.bruteforce_search_ms = latency(timings.brute, 'exact cosine over one Float32Array, top 10, plain JS')

  if (orama && options.wants('orama_restore_ms')) {
    const raw = save(orama)
    let serialized: string | undefined
    try {
      serialized = JSON.stringify(raw)
    } catch {
      serialized = undefined // too large for one string: restore from the object instead
    }
    const runs: number[] = []
    for (let r = 0; r < options.bulkRuns; r++) {
      const t0 = performance.now()
      const restored = create({ schema: oramaSchema })
      load(restored, serialized === undefined ? structuredClone(raw) : (JSON.parse(serialized) as typeof raw))
      runs.push(performance.now() - t0)
    }
    out.metrics.orama_restore_ms = latency(
      runs,
      serialized === undefined
        ? 'create + load(save()) from a structured clone (the JSON would exceed one string)'
        : `create + load(JSON.parse()) of save() output (${(serialized.length / 1e6).toFixed(1)} MB JSON)`,
    )
  }
}

async function contextSuite(data: Dataset, options: SuiteOptions, out: SuiteOutput): Promise<void> {
  const buildContext = optional<(request: Record<string, unknown>) => Promise<unknown>>(data.engine, 'buildContext')
  if (!buildContext) {
    for (const name of ['build_context_ms', 'build_context_fast_ms']) {
      if (options.wants(name)) out.skipped[name] = 'not available: this build has no buildContext()'
    }
    return
  }
  const queries = makeQueries(50, 5678)
  const timings = { full: [] as number[], fast: [] as number[] }
  // How many hits each search pass asked for, and in how many timed calls each count was last.
  const limits = new Map<string, number>()
  for (let i = 0; i < options.warmup + options.ops; i++) {
    const request = {
      query: queries[i % queries.length]!,
      conversationId: `conv-${i % data.conversations}`,
      userId: BENCH_SCOPE.userId,
      agentId: BENCH_SCOPE.agentId,
      channel: 'private',
      maxTokens: 8000,
    }
    const timed = i >= options.warmup
    if (options.wants('build_context_ms')) {
      const t0 = performance.now()
      const bundle = (await buildContext(request)) as { provenance?: { searchLimit?: number; searchPasses?: number } }
      if (timed) {
        timings.full.push(performance.now() - t0)
        const p = bundle.provenance
        if (p?.searchLimit !== undefined) {
          const key = `${p.searchPasses === 2 ? 'second pass' : 'one pass'} of ${p.searchLimit} hits`
          limits.set(key, (limits.get(key) ?? 0) + 1)
        }
      }
    }
    if (options.wants('build_context_fast_ms')) {
      const t0 = performance.now()
      await buildContext({ ...request, retrieval: false })
      if (timed) timings.fast.push(performance.now() - t0)
    }
  }
  const passes = [...limits].sort().map(([k, n]) => `${k} in ${n}`).join(', ')
  if (timings.full.length) {
    out.metrics.build_context_ms = latency(timings.full, `maxTokens 8000, channel private, Node${passes ? `; search: ${passes} calls` : ''}`)
  }
  if (timings.fast.length) out.metrics.build_context_fast_ms = latency(timings.fast, 'retrieval: false, Node')
}

async function portableSuite(data: Dataset, options: SuiteOptions, out: SuiteOutput): Promise<void> {
  const exports: number[] = []
  let file: Blob | undefined
  for (let r = 0; r < options.bulkRuns; r++) {
    const t0 = performance.now()
    file = await data.engine.exportFile()
    exports.push(performance.now() - t0)
  }
  if (!file) throw new Error('no export runs')
  out.metrics.export_ms = latency(exports, 'exportFile() with vectors, Node')
  out.metrics.export_bytes = median([file.size], 'bytes', 'exportFile() with vectors: gzip JSON lines')

  if (options.wants('import_ms')) {
    const blank = await openPGlite()
    await openEngine(blank)
    const imports: number[] = []
    for (let r = 0; r < options.bulkRuns; r++) {
      const pg = (await blank.clone()) as PGlite
      const engine = await openEngine(pg)
      const t0 = performance.now()
      const report = await engine.importFile(file, { mode: 'replace' })
      imports.push(performance.now() - t0)
      if (report.vectorsRestored !== data.chunkIds.length) {
        throw new Error(`import restored ${report.vectorsRestored} vectors, expected ${data.chunkIds.length}`)
      }
      await pg.close()
    }
    await blank.close()
    out.metrics.import_ms = latency(imports, "importFile(mode 'replace') into a fresh migrated memory, chunks rebuilt, vectors restored")
  }

  if (options.wants('raw_dump_bytes')) {
    await data.pg.exec('CHECKPOINT')
    const t0 = performance.now()
    const dump = await data.pg.dumpDataDir('gzip')
    const ms = performance.now() - t0
    out.metrics.raw_dump_bytes = median([dump.size], 'bytes', "PGlite dumpDataDir('gzip') of the same database after CHECKPOINT")
    out.metrics.raw_dump_ms = latency([ms], "dumpDataDir('gzip'), one run")
  }
}

async function naiveInsertSuite(data: Dataset | undefined, options: SuiteOptions, out: SuiteOutput): Promise<void> {
  const pg = await openPGlite()
  await pg.exec('CREATE EXTENSION IF NOT EXISTS vector')
  await pg.exec('CREATE TABLE naive (id int PRIMARY KEY, text text NOT NULL, embedding vector(384))')
  const count = options.naiveRows
  const texts = data?.texts ?? embeddingSentences(count, 99)
  const vectors = data?.vectors ?? (await embedder.embed(texts))
  const t0 = performance.now()
  for (let i = 0; i < count; i++) {
    const j = i % texts.length
    await pg.query('INSERT INTO naive (id, text, embedding) VALUES ($1, $2, $3)', [i, texts[j], `[${Array.from(vectors[j]!).join(',')}]`])
  }
  const seconds = (performance.now() - t0) / 1000
  await pg.close()
  out.metrics.naive_pglite_insert_per_s = median([count / seconds], 'per_s', `${count} rows, one autocommit INSERT each, vector as text`)
}

async function embedNodeSuite(options: SuiteOptions, out: SuiteOutput): Promise<void> {
  const sentences = embeddingSentences(options.embedSentences, 17)
  const model = await createTransformersEmbedder({ quantized: true })
  try {
    await model.embed(sentences.slice(0, 32))
    const rates: number[] = []
    for (let pass = 0; pass < options.embedPasses; pass++) {
      const t0 = performance.now()
      await model.embed(sentences)
      rates.push(sentences.length / ((performance.now() - t0) / 1000))
    }
    out.metrics.embed_node_per_s = median(rates, 'per_s', `${model.id} on ${model.device}, ${sentences.length} sentences of ${await meanTokens(sentences)} tokens on average, batches of ${model.batchSize}`)
  } finally {
    await model.dispose()
  }
}

export const NODE_METRICS = [
  'search_ms',
  'build_context_ms',
  'build_context_fast_ms',
  'export_ms',
  'export_bytes',
  'import_ms',
  'raw_dump_bytes',
  'orama_search_ms',
  'orama_insert_per_s',
  'orama_restore_ms',
  'bruteforce_search_ms',
  'naive_pglite_insert_per_s',
  'embed_node_per_s',
  'remember_ms',
  'indexing_under_writes_per_s',
  'remember_one_session_ms',
  'indexing_one_session_per_s',
  ...CYPHER_METRICS,
]

export async function runNodeSuite(options: SuiteOptions): Promise<SuiteOutput> {
  const out: SuiteOutput = { metrics: {}, skipped: {} }
  const ownData = ['embed_node_per_s', 'naive_pglite_insert_per_s', ...STEADY_METRICS]
  const needsData = NODE_METRICS.filter((n) => !ownData.includes(n)).some(options.wants)
  let data: Dataset | undefined
  if (needsData) {
    options.log(`Node: building a memory of ${options.size} events`)
    data = await buildDataset(options, out)
    if (['search_ms', 'orama_search_ms', 'orama_insert_per_s', 'orama_restore_ms', 'bruteforce_search_ms'].some(options.wants)) {
      options.log('Node: search — engine, Orama and brute force, in rotating blocks')
      await searchSuite(data, options, out)
    }
    if (['build_context_ms', 'build_context_fast_ms'].some(options.wants)) {
      options.log('Node: buildContext')
      await contextSuite(data, options, out)
    }
    if (['export_ms', 'export_bytes', 'import_ms', 'raw_dump_bytes'].some(options.wants)) {
      options.log('Node: export, import and raw dump')
      await portableSuite(data, options, out)
    }
    // Last on the memory: its bursts add turns.
    if (CYPHER_METRICS.some(options.wants)) {
      options.log('Node: Cypher beside SQL, and the catch-up after a burst')
      await cypherSuite(data, options, out)
    }
  }
  if (options.wants('naive_pglite_insert_per_s')) {
    options.log('Node: naive PGlite inserts')
    await naiveInsertSuite(data, options, out)
  }
  await data?.pg.close()
  if (options.wants('embed_node_per_s')) {
    options.log('Node: embedding throughput (CPU, q8)')
    await embedNodeSuite(options, out)
  }
  if (STEADY_METRICS.some(options.wants)) {
    options.log('Node: remember and indexing under steady writes (the bundled model)')
    await steadySuite(options, out)
  }
  return out
}

const STEADY_METRICS = ['remember_ms', 'indexing_under_writes_per_s', 'remember_one_session_ms', 'indexing_one_session_per_s']

/**
 * `remember` while four callers write at 8 calls a second and the model indexes a backlog:
 * with Node's embedder, then with the model's one session in this thread (the peer).
 */
async function steadySuite(options: SuiteOptions, out: SuiteOutput): Promise<void> {
  const { events, seconds } = options.steady
  const rate = 8
  const load = `${events} events waiting for vectors, ${rate} calls/s of record, recordTurn, remember and search for ${seconds} s`
  for (const oneSession of [false, true]) {
    const [remember, indexing] = oneSession
      ? ['remember_one_session_ms', 'indexing_one_session_per_s']
      : ['remember_ms', 'indexing_under_writes_per_s']
    if (!options.wants(remember) && !options.wants(indexing)) continue
    const run = await runSteadyWrites({ events, seconds, rate, every: seconds / 3, manual: false, oneSession, log: options.log })
    const how = oneSession ? ', indexing on the one session in this thread' : ''
    out.metrics[remember] = latency(run.times.remember, `${load}${how}; search took ${describe(run.times.search)}`)
    const alone = (run.modelAlone[0] + run.modelAlone[1]) / 2
    out.metrics[indexing] = median(
      [run.vectorsWritten / run.seconds],
      'per_s',
      `vectors written under that load${how}; the model alone embeds ${alone.toFixed(1)} of those texts a second`,
    )
  }
}

/** p50 / p95 of `samples`, in words. */
function describe(samples: number[]): string {
  const m = latency(samples)
  return `${m.p50} / ${m.p95} ms (p50 / p95)`
}
