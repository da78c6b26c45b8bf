/**
 * What prepared statements save on the write path: two engines in this process, each over
 * its own in-memory PGlite, record the same TURNS turns (default 2,000; `npm run bench`'s
 * synthetic coding session) alternately, one turn each in turn, first one then the other.
 * One engine gets the PGlite itself (its write statements run prepared); the other gets the
 * same PGlite behind a plain `Db` object, which `withPreparedStatements` cannot see through,
 * so every statement runs unnamed as PGlite's `query` sends it. The first 100 turns are
 * warm-up. Prints p50 / p95 / p99 per engine and their ratios.
 *
 *   node bench/run.mjs bench/prepared-statements.ts
 */
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import type { Db } from '../src/core/kernel/db.ts'
import { createEngine } from '../src/core/engine.ts'
import { makeTurns, sessionShape } from './lib/data.ts'
import { percentile } from './lib/metrics.ts'

const TURNS = Number(process.env.TURNS ?? 2_000)
const WARMUP = 100

async function open(prepared: boolean) {
  const pg = await PGlite.create({ extensions: { vector } })
  const plain: Db = {
    query: (sql, params, options) => pg.query(sql, params, options as Parameters<PGlite['query']>[2]),
    exec: (sql) => pg.exec(sql),
    transaction: (fn) => pg.transaction((tx) => fn(tx)),
  }
  const engine = await createEngine({
    db: prepared ? pg : plain,
    workspace: { mode: 'local', root: '/bench/repo' },
    indexing: 'manual',
  })
  return { pg, engine }
}

const sides = { prepared: await open(true), unnamed: await open(false) }
const samples: Record<keyof typeof sides, number[]> = { prepared: [], unnamed: [] }
const turns = makeTurns(sessionShape(TURNS * 4), 42)
for (const [n, turn] of turns.entries()) {
  const order = n % 2 === 0 ? (['prepared', 'unnamed'] as const) : (['unnamed', 'prepared'] as const)
  for (const side of order) {
    const t0 = performance.now()
    await sides[side].engine.recordTurn(turn)
    if (n >= WARMUP) samples[side].push(performance.now() - t0)
  }
}
const stats = (side: keyof typeof sides) => {
  const sorted = [...samples[side]].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) }
}
const prepared = stats('prepared')
const unnamed = stats('unnamed')
const fmt = (x: number) => x.toFixed(2)
process.stdout.write(`recordTurn, ${samples.prepared.length} turns each after ${WARMUP} of warm-up (ms)\n`)
process.stdout.write(`prepared  p50 ${fmt(prepared.p50)}  p95 ${fmt(prepared.p95)}  p99 ${fmt(prepared.p99)}\n`)
process.stdout.write(`unnamed   p50 ${fmt(unnamed.p50)}  p95 ${fmt(unnamed.p95)}  p99 ${fmt(unnamed.p99)}\n`)
process.stdout.write(
  `ratio     p50 ${fmt(prepared.p50 / unnamed.p50)}×  p95 ${fmt(prepared.p95 / unnamed.p95)}×  p99 ${fmt(prepared.p99 / unnamed.p99)}×\n`,
)
await Promise.all([sides.prepared.pg.close(), sides.unnamed.pg.close()])
