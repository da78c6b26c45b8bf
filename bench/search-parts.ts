/**
 * Where a search's time goes, over the bench's memory of SIZE events (default 100,000): the
 * same 50 queries searched with the defaults and with each part left out by a per-call option,
 * every variant in turn query by query (ROUNDS timed passes, default 4, after one untimed),
 * so that a noisy stretch of the machine falls on all of them alike. The difference from the
 * defaults is what a part costs: the neighbour walk (`neighbour: 0`), each list (keyword or
 * vector only), and how many of each list's events pass a share to their neighbours
 * (`neighbourDepth`). Prints p50 / p95 per variant and its median per-query ratio to the
 * defaults.
 *
 *   CACHE_MB=448 node bench/run.mjs bench/search-parts.ts
 *   SIZE=10000 node bench/run.mjs bench/search-parts.ts
 */
import type { SearchOptions } from '../src/core/retrieval/search.ts'
import { BENCH_SCOPE, makeQueries } from './lib/data.ts'
import { latency, percentile } from './lib/metrics.ts'
import { buildBenchMemory } from './lib/node-suite.ts'

const SIZE = Number(process.env.SIZE ?? 100_000)
const ROUNDS = Number(process.env.ROUNDS ?? 4)
const CACHE_MB = process.env.CACHE_MB === undefined ? undefined : Number(process.env.CACHE_MB)

const VARIANTS: Record<string, SearchOptions> = {
  defaults: {},
  'neighbour: 0': { weights: { neighbour: 0 } },
  'neighbourDepth: 10': { weights: { neighbourDepth: 10 } },
  'neighbourDepth: 20': { weights: { neighbourDepth: 20 } },
  'keyword only': { mode: 'keyword' },
  'vector only': { mode: 'vector' },
}

const data = await buildBenchMemory(SIZE, CACHE_MB, (line) => process.stderr.write(`${line}\n`))
const queries = makeQueries(50, 1234)
const names = Object.keys(VARIANTS)
const times = new Map(names.map((name) => [name, [] as number[]]))
for (let round = 0; round <= ROUNDS; round++) {
  for (const [i, query] of queries.entries()) {
    // The order rotates query by query: no variant always runs first, on pages another left.
    const order = names.map((_, k) => names[(k + i + round) % names.length]!)
    for (const name of order) {
      const t0 = performance.now()
      const hits = await data.engine.search(query, { limit: 10, scope: BENCH_SCOPE, ...VARIANTS[name] })
      const ms = performance.now() - t0
      if (hits.length === 0) throw new Error(`${name}: no hits for "${query}"`)
      if (round > 0) times.get(name)!.push(ms)
    }
  }
}
await data.pg.close()

const defaults = times.get('defaults')!
const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50)
const lines = [
  `\n${SIZE} events, ${CACHE_MB === undefined ? 'the default pool' : `a ${CACHE_MB} MiB pool`}, ${defaults.length} searches per variant\n`,
  '| variant | p50 ms | p95 ms | median ratio to the defaults |',
  '| --- | ---: | ---: | ---: |',
  ...names.map((name) => {
    const ms = times.get(name)!
    const l = latency(ms)
    return `| ${name} | ${l.p50} | ${l.p95} | ${median(ms.map((t, i) => t / defaults[i]!)).toFixed(3)} |`
  }),
]
process.stdout.write(`${lines.join('\n')}\n`)
process.exit(0)
