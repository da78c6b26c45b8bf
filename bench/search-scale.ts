/**
 * Search latency and what it depends on, in Node over in-memory PGlite, on the `npm run bench`
 * session data (bench/lib/data.ts) with hash-embedder vectors:
 *
 *   EVENTS=10000 node bench/run.mjs bench/search-scale.ts
 *
 * 1. The write path with and without the keyword-statistics trigger: two fresh memories fed
 *    the same turns alternately (2,000 turns each unless TURNS is set), p50/p95 per turn.
 * 2. A memory of EVENTS events, statistics left to `refreshStatistics()`: hybrid and keyword
 *    search (top 10, 50 queries cycled, 10 warm-ups, 60 timed) before and after the planner's
 *    statistics exist (the refresh also checkpoints: the write-ahead log and the gzip size of
 *    the whole data directory are printed before and after it).
 * Prints one JSON line.
 */
import type { PGlite } from '@electric-sql/pglite'
import { createEngine, type Engine } from '../src/core/engine.ts'
import { createHashEmbedder } from '../src/embed/hash-embedder.ts'
import { durableDb, openPGlite } from '../src/runtime/pglite.ts'
import { BENCH_SCOPE, makeQueries, makeTurns, sessionShape } from './lib/data.ts'

const EVENTS = Number(process.env.EVENTS ?? 10_000)
const TURNS = Number(process.env.TURNS ?? 2000)
const embedder = createHashEmbedder({ dims: 384 })

const pct = (values: number[], q: number) => {
  const s = [...values].sort((a, b) => a - b)
  return Math.round(s[Math.min(s.length - 1, Math.floor(s.length * q))]! * 100) / 100
}
const summary = (values: number[]) => ({ p50: pct(values, 0.5), p95: pct(values, 0.95), runs: values.length })

async function open(statistics: 'auto' | 'manual'): Promise<{ pg: PGlite; engine: Engine }> {
  const pg = await openPGlite()
  const engine = await createEngine({ db: durableDb(pg), embedder, indexing: 'manual', statistics, workspace: { mode: 'local', root: '/bench/repo' } })
  return { pg, engine }
}

// 1. Write path, with and without the keyword-statistics trigger, interleaved.
const withTrigger = await open('auto')
const withoutTrigger = await open('auto')
await withoutTrigger.pg.exec('DROP TRIGGER chunks_keyword_stats_insert ON chunks')
const writes = { trigger: [] as number[], none: [] as number[] }
for (const turn of makeTurns(sessionShape(TURNS * 4), 7)) {
  for (const [name, m] of [['trigger', withTrigger], ['none', withoutTrigger]] as const) {
    const t0 = performance.now()
    await m.engine.recordTurn(turn)
    writes[name].push(performance.now() - t0)
  }
}
for (const m of [withTrigger, withoutTrigger]) {
  await m.engine.stopIndexing()
  await m.pg.close()
}

// 2. Search before and after the planner has statistics.
const { pg, engine } = await open('manual')
for (const turn of makeTurns(sessionShape(EVENTS), 42)) await engine.recordTurn(turn)
await engine.indexNow()
const queries = makeQueries(50, 1234)
async function searches(mode: 'hybrid' | 'keyword'): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < 70; i++) {
    const t0 = performance.now()
    const hits = await engine.search(queries[i % queries.length]!, { limit: 10, scope: BENCH_SCOPE, mode })
    if (i >= 10) times.push(performance.now() - t0)
    if (hits.length === 0 && i === 0) throw new Error('search found nothing')
  }
  return times
}
const storage = async () => {
  const { rows } = await pg.query<{ segments: number; bytes: number }>(
    `SELECT count(*)::int AS segments, coalesce(sum(size), 0)::float8 AS bytes FROM pg_ls_waldir()`,
  )
  const dump = await pg.dumpDataDir('gzip')
  return { walSegments: rows[0]?.segments ?? 0, walMB: Math.round((rows[0]?.bytes ?? 0) / 2 ** 20), dataDirGzipMB: Math.round(dump.size / 2 ** 20) }
}
const before = { hybrid: summary(await searches('hybrid')), keyword: summary(await searches('keyword')) }
const storageBefore = await storage()
const t0 = performance.now()
await engine.refreshStatistics()
const analyzeMs = Math.round(performance.now() - t0)
const storageAfter = await storage()
const after = { hybrid: summary(await searches('hybrid')), keyword: summary(await searches('keyword')) }
const { counts } = await engine.stats()
process.stdout.write(
  `${JSON.stringify({
    recordTurnMs: { withKeywordStats: summary(writes.trigger.slice(100)), withoutKeywordStats: summary(writes.none.slice(100)) },
    events: counts.events,
    searchMs: { withoutPlannerStatistics: before, withPlannerStatistics: after },
    analyzeMs,
    storage: { beforeRefresh: storageBefore, afterRefresh: storageAfter },
  })}\n`,
)
await engine.stopIndexing()
await pg.close()
