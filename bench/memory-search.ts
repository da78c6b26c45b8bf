// Latency of `memories.search` over curated memories: every turn of the LoCoMo-style
// conversations in DIR saved as a memory ("Speaker: text"), all for one user (2,760 memories
// for ../shared/locomo-dev; `--copies N` saves each turn N times, the copies marked " (copy
// k)", for N × as many), then their questions asked in turn, top 10, with the hash embedder
// for vectors (the model's cost is not what is timed). 200 searches are timed after 60
// warm-ups. Exact cosine over the same vectors in plain JS (embedding the question with the
// same embedder, top 10) runs interleaved, query by query, as the floor for exact search.
// Then `remember` of 120 new texts with its default near-duplicate check (100 timed), and
// last the open of an engine that must build the memories' HNSW index (once).
//
//   node bench/run.mjs bench/memory-search.ts --data ../shared/locomo-dev [--copies 10]
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { createEngine } from '../src/core/engine.ts'
import { createHashEmbedder } from '../src/embed/hash-embedder.ts'
import { bruteForceTopK } from './lib/brute-force.ts'
import { arg, conversationFiles, readConversation, rememberConversation } from './lib/locomo.ts'

const USER = 'reader'

const data = arg('data', '../shared/locomo-dev') as string
const copies = Number(arg('copies', '1'))
if (!Number.isInteger(copies) || copies < 1) throw new Error(`--copies must be a positive integer, got ${arg('copies')}`)
const WARM = 60
const TIMED = 200

const embedder = createHashEmbedder()
const db = await PGlite.create({ extensions: { vector } })
const memory = await createEngine({ db, indexing: 'manual', embedder })
const asked: string[] = []
const started = performance.now()
for (const file of await conversationFiles(data)) {
  const conv = await readConversation(data, file)
  const { questions } = await rememberConversation(memory, conv, USER)
  for (let k = 1; k < copies; k++) await rememberConversation(memory, conv, USER, ` (copy ${k})`)
  asked.push(...questions.map((q) => q.question))
}
const savedIn = (performance.now() - started) / 1000

const { rows: stored } = await db.query<{ vector: string }>(`SELECT vector::text AS vector FROM memories WHERE user_id = $1`, [USER])
const matrix = new Float32Array(stored.length * embedder.dims)
stored.forEach((r, i) => matrix.set(JSON.parse(r.vector) as number[], i * embedder.dims))

const times = { engine: [] as number[], brute: [] as number[] }
for (let n = 0; n < WARM + TIMED; n++) {
  const question = asked[n % asked.length]!
  let t0 = performance.now()
  const hits = await memory.memories.search(question, { userId: USER, limit: 10 })
  if (n >= WARM) times.engine.push(performance.now() - t0)
  if (hits.length === 0) throw new Error(`no memory found for "${question}"`)
  t0 = performance.now()
  const [query] = await embedder.embed([question])
  bruteForceTopK(matrix, stored.length, query!, 10)
  if (n >= WARM) times.brute.push(performance.now() - t0)
}
// Then `remember` with its default near-duplicate check, for new texts (the questions, each
// saved once, marked so no saved turn matches them exactly): 100 timed after 20.
const remembered: number[] = []
for (let n = 0; n < 120; n++) {
  const t0 = performance.now()
  await memory.remember({ content: `Noted ${n}: ${asked[n % asked.length]!}`, category: 'fact', userId: USER })
  if (n >= 20) remembered.push(performance.now() - t0)
}

// Last, what a memory saved by a build without the memories' HNSW index pays once: an engine
// opened on it builds the index over every memory there.
await db.exec('DROP INDEX memories_vector_hnsw_384')
const opening = performance.now()
await createEngine({ db, indexing: 'manual', embedder })
const indexBuildMs = Math.round(performance.now() - opening)

const at = (list: number[], p: number) => {
  const sorted = [...list].sort((a, b) => a - b)
  return Math.round(sorted[Math.ceil(p * sorted.length) - 1]! * 100) / 100
}
const summary = (list: number[]) => ({ p50_ms: at(list, 0.5), p95_ms: at(list, 0.95) })
const engine = summary(times.engine)
const brute = summary(times.brute)
process.stdout.write(
  `${JSON.stringify({
    memories: stored.length,
    saved_per_s: Math.round(stored.length / savedIn),
    searches: TIMED,
    search: engine,
    bruteforce: brute,
    ratio: { p50: Math.round((engine.p50_ms / brute.p50_ms) * 100) / 100, p95: Math.round((engine.p95_ms / brute.p95_ms) * 100) / 100 },
    remember: summary(remembered),
    open_building_index_ms: indexBuildMs,
  })}\n`,
)
await db.close()
