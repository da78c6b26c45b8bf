// Latency of `memories.search` over curated memories: every turn of the LoCoMo-style
// conversations in DIR saved as a memory ("Speaker: text"), all for one user (2,760 memories
// for ../shared/locomo-dev), then their questions asked in turn, top 10, with the hash embedder
// for vectors (the model's cost is not what is timed). 200 searches are timed after 60 warm-ups.
//
//   node bench/run.mjs bench/memory-search.ts --data ../shared/locomo-dev
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { createEngine } from '../src/core/engine.ts'
import { createHashEmbedder } from '../src/embed/hash-embedder.ts'
import { arg, conversationFiles, readConversation, rememberConversation } from './lib/locomo.ts'

const USER = 'reader'

const data = arg('data', '../shared/locomo-dev') as string
const WARM = 60
const TIMED = 200

const db = await PGlite.create({ extensions: { vector } })
const memory = await createEngine({ db, indexing: 'manual', embedder: createHashEmbedder() })
const asked: string[] = []
for (const file of await conversationFiles(data)) {
  const { questions } = await rememberConversation(memory, await readConversation(data, file), USER)
  asked.push(...questions.map((q) => q.question))
}
const times: number[] = []
for (let n = 0; n < WARM + TIMED; n++) {
  const started = performance.now()
  await memory.memories.search(asked[n % asked.length]!, { userId: USER, limit: 10 })
  if (n >= WARM) times.push(performance.now() - started)
}
times.sort((a, b) => a - b)
const at = (p: number) => Math.round(times[Math.ceil(p * times.length) - 1]! * 10) / 10
const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM memories`)
process.stdout.write(`${JSON.stringify({ memories: rows[0]?.n, searches: TIMED, p50_ms: at(0.5), p95_ms: at(0.95) })}\n`)
await db.close()
