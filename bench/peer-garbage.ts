/**
 * What a peer's searches in the same process cost the engine's: hybrid search over the bench's
 * memory of SIZE events (default 100,000), alone and with an Orama hybrid search after each,
 * in alternating rounds of one pass over the bench's 50 queries (ROUNDS of each, default 4,
 * after one untimed pass of both). Orama keeps the whole memory in the JS heap and its searches
 * leave garbage; a major collection it owes can fall inside the engine's next search. Prints
 * each side's p50 / p95, the median of the per-query ratios (query i with Orama against query
 * i alone, round by round) and the garbage collection time observed inside the engine's
 * searches.
 *
 *   CACHE_MB=448 node bench/run.mjs bench/peer-garbage.ts
 *   SIZE=10000 node bench/run.mjs bench/peer-garbage.ts
 */
import { PerformanceObserver } from 'node:perf_hooks'
import { BENCH_SCOPE, makeQueries } from './lib/data.ts'
import { latency } from './lib/metrics.ts'
import { buildBenchMemory, buildOrama, searchOrama } from './lib/node-suite.ts'

const SIZE = Number(process.env.SIZE ?? 100_000)
const ROUNDS = Number(process.env.ROUNDS ?? 4)
const CACHE_MB = process.env.CACHE_MB === undefined ? undefined : Number(process.env.CACHE_MB)

const data = await buildBenchMemory(SIZE, CACHE_MB, (line) => process.stdout.write(`${line}\n`))
const { db: orama } = await buildOrama(data)
const queries = makeQueries(50, 1234)

let gcMs = 0
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration
}).observe({ entryTypes: ['gc'] })

const times = { alone: [] as number[], withOrama: [] as number[] }
const gc = { alone: 0, withOrama: 0 }
for (let round = 0; round <= 2 * ROUNDS + 1; round++) {
  const side = round % 2 === 0 ? 'alone' : 'withOrama'
  for (const query of queries) {
    const gc0 = gcMs
    const t0 = performance.now()
    await data.engine.search(query, { limit: 10, scope: BENCH_SCOPE })
    const ms = performance.now() - t0
    // Lets the observer report a collection that ended inside the search.
    await new Promise((resolve) => setImmediate(resolve))
    if (round >= 2) {
      times[side].push(ms)
      gc[side] += gcMs - gc0
    }
    if (side === 'withOrama') await searchOrama(orama, query)
  }
}
await data.pg.close()

const ratios = times.withOrama.map((ms, i) => ms / times.alone[i]!).sort((a, b) => a - b)
const row = (name: string, ms: number[], gcTotal: number) => {
  const l = latency(ms)
  return `| ${name} | ${ms.length} | ${l.p50} | ${l.p95} | ${(gcTotal / ms.length).toFixed(2)} |`
}
process.stdout.write(
  [
    `\n${SIZE} events, ${CACHE_MB === undefined ? 'the default pool' : `a ${CACHE_MB} MiB pool`}\n`,
    '| engine search | searches | p50 ms | p95 ms | GC ms per search |',
    '| --- | ---: | ---: | ---: | ---: |',
    row('alone', times.alone, gc.alone),
    row('with an Orama search after each', times.withOrama, gc.withOrama),
    `\nmedian per-query ratio (with Orama / alone): ${ratios[Math.floor(ratios.length / 2)]!.toFixed(3)}\n`,
  ].join('\n'),
)
process.exit(0)
