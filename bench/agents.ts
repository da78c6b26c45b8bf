/**
 * Several agents on one memory at once. A memory of 2,000 turns of the synthetic session is
 * built once and copied for each level, so every level starts from the same state; the
 * hashing embedder keeps the model's cost from hiding the database's. Then 1, 4 and 12 agents
 * share ROUNDS rounds between them, all at once, each round one `recordTurn` in the agent's own
 * conversation and one `search` in its user's scope. Prints, per level: rounds per second for
 * all agents together, and p50 / p95 of each call as an agent waits for it. The engine runs
 * one statement at a time (PGlite; the browser worker serves its tabs the same way), so an
 * agent's call queues behind the others' and its latency grows with the agents, while the
 * rounds per second should hold. The statistics upkeep (see src/core/maintenance/planner-statistics.ts) runs as in
 * any memory, when the writes pause or before a read once a tenth of the memory has changed.
 *
 *   node bench/run.mjs bench/agents.ts            # ROUNDS (default 240 per level)
 */
import { createEngine } from '../src/core/engine.ts'
import { createHashEmbedder } from '../src/embed/hash-embedder.ts'
import { durableDb, openPGlite } from '../src/runtime/pglite.ts'
import { makeQueries, makeTurns, sessionShape } from './lib/data.ts'
import { percentile } from './lib/metrics.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 240)
const SEED_TURNS = 2000
const LEVELS = [1, 4, 12]

const print = (line: string) => process.stdout.write(`${line}\n`)
const p = (xs: number[], q: number) => percentile([...xs].sort((a, b) => a - b), q)
type Turn = ReturnType<typeof makeTurns>[number]
/** A memory as openMemory makes one (the default upkeep), on a PGlite whose data folder can be copied. */
async function open(loadDataDir?: Blob) {
  const pg = await openPGlite(loadDataDir ? { loadDataDir } : {})
  const engine = await createEngine({
    db: durableDb(pg),
    embedder: createHashEmbedder({ dims: 384 }),
    indexing: 'manual',
    workspace: { mode: 'local', root: '/bench/repo' },
  })
  return Object.assign(engine, {
    pg,
    async close() {
      await engine.stopIndexing()
      await pg.close()
    },
  })
}

const turns = makeTurns(sessionShape((SEED_TURNS + 20 + ROUNDS) * 4 + 400), 42)
const queries = makeQueries(400, 7)
const seeded = await open()
for (let i = 0; i < SEED_TURNS; i++) await seeded.recordTurn(turns[i] as Turn)
await seeded.indexNow()
await seeded.refreshStatistics()
const dump = await seeded.pg.dumpDataDir('gzip')
await seeded.close()

print(`${SEED_TURNS} turns in the memory, ${ROUNDS} rounds per level (recordTurn + search) shared by the agents, hashing embedder, this process:`)
print('| agents | rounds/s, all agents | recordTurn p50 / p95 | search p50 / p95 |')
print('| ---: | ---: | ---: | ---: |')
for (const agents of LEVELS) {
  const memory = await open(dump)
  let next = SEED_TURNS
  // A warm-up for the statements and pages, not counted.
  for (let i = 0; i < 20; i++) {
    await memory.recordTurn({ ...(turns[next++] as Turn), conversationId: 'warm-up' })
    await memory.search(queries[i] as string, { limit: 10 })
  }
  const turnMs: number[] = []
  const searchMs: number[] = []
  const started = performance.now()
  let round = 0
  await Promise.all(
    Array.from({ length: agents }, async (_, a) => {
      while (round < ROUNDS) {
        const r = round++
        let t = performance.now()
        await memory.recordTurn({ ...(turns[next++] as Turn), conversationId: `agent-${a}`, scope: { userId: `u${a % 3}`, agentId: `agent-${a}` } })
        turnMs.push(performance.now() - t)
        t = performance.now()
        await memory.search(queries[r % queries.length] as string, { limit: 10, scope: { userId: `u${a % 3}` } })
        searchMs.push(performance.now() - t)
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  print(
    `| ${agents} | ${(ROUNDS / seconds).toFixed(1)} | ${p(turnMs, 50).toFixed(2)} / ${p(turnMs, 95).toFixed(2)} ms | ${p(searchMs, 50).toFixed(2)} / ${p(searchMs, 95).toFixed(2)} ms |`,
  )
  await memory.close()
}
process.exit(0)
