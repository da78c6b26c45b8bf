/**
 * Search latency as the memory grows: TURNS turns (2 events each) with hash-embedder vectors,
 * then 12 hybrid and 12 keyword-only searches (top 10). Prints the per-query times in ms.
 *
 *   TURNS=5000 node bench/run.mjs bench/search-scale.ts
 */
import { openMemory } from '../src/node/index.ts'
import { createHashEmbedder } from '../src/embed/hash-embedder.ts'

const embedder = createHashEmbedder({ dims: 384 })
const memory = await openMemory({ embedder, indexing: 'manual' })
const words = 'login auth token session logout database index query vector search memory graph file write read test build deploy cache user agent error retry timeout config schema migration'.split(' ')
let seed = 7
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed / 2147483648)
const sentence = (n: number) => Array.from({ length: n }, () => words[Math.floor(rnd() * words.length)]).join(' ')
const TURNS = Number(process.env.TURNS ?? 2500)
for (let i = 0; i < TURNS; i++) {
  await memory.recordTurn({ conversationId: `c${i % 50}`, user: sentence(20), agent: sentence(40) })
}
await memory.indexNow()
await memory.waitForIndex()
const times: number[] = []
for (let i = 0; i < 12; i++) {
  const t0 = performance.now()
  await memory.search(sentence(6), { limit: 10 })
  times.push(performance.now() - t0)
}
const fast: number[] = []
for (let i = 0; i < 12; i++) {
  const t0 = performance.now()
  await memory.search(sentence(6), { limit: 10, mode: 'keyword' })
  fast.push(performance.now() - t0)
}
process.stdout.write(
  `${JSON.stringify({ events: (await memory.stats()).counts.events, hybrid: times.map(Math.round), keyword: fast.map(Math.round) })}\n`,
)
await memory.close()
