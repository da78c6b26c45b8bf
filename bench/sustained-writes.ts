// Background indexing under a steady stream of writes, with the bundled model (Node, CPU).
// A memory of `--events` events waits for its vectors; then four callers (record, recordTurn,
// remember, search) write at `--rate` calls per second in all for `--seconds`. Reported: the
// backlog every `--every` seconds, the vectors written per second against the model's own rate
// on the same texts (measured alone before and after the load), and each call's p50 / p95.
//
//   node scripts/build-model.mjs && node bench/run.mjs bench/sustained-writes.ts \
//     [--events 20000] [--seconds 120] [--rate 20] [--every 10] [--seed-dir /tmp/engram-load-seed]
//     [--manual]
//
// `--manual` indexes nothing during the load: the calls' latencies with the model idle.
// The seeded memory is kept in `--seed-dir` and copied for each run, so runs start alike.
import { cp, mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTransformersEmbedder, openMemory } from '../src/node/index.ts'
import { BENCH_SCOPE, makeQueries, makeTurns, seededRandom, sentence, sessionShape } from './lib/data.ts'
import { percentile } from './lib/metrics.ts'

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? fallback : Number(process.argv[i + 1])
}
function textFlag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? fallback : String(process.argv[i + 1])
}

const events = flag('events', 20_000)
const seconds = flag('seconds', 120)
const rate = flag('rate', 20)
const every = flag('every', 10)
const seedDir = textFlag('seed-dir', join(tmpdir(), `engram-load-seed-${events}`))
const log = (line: string) => process.stdout.write(`${line}\n`)

const embedder = await createTransformersEmbedder()
const shape = sessionShape(events)
const workspace = { mode: 'local', root: '/bench/repo' } as const

// The seeded memory: events only, no vectors (indexing is manual while it is written).
if (!(await stat(join(seedDir, 'PG_VERSION')).catch(() => undefined))) {
  await rm(seedDir, { recursive: true, force: true })
  const seeding = await openMemory({ dataDir: seedDir, embedder, indexing: 'manual', workspace })
  const started = performance.now()
  for (const turn of makeTurns(shape, 42)) await seeding.recordTurn(turn)
  log(`seeded ${shape.turns * 4} events in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  await seeding.close()
}
const dataDir = await mkdtemp(join(tmpdir(), 'engram-load-'))
await cp(seedDir, dataDir, { recursive: true })

/** Texts per second for the model alone, on `texts`, in its own batches. */
async function modelRate(texts: string[]): Promise<number> {
  const started = performance.now()
  await embedder.embed(texts)
  return texts.length / ((performance.now() - started) / 1000)
}

// Texts like those the indexer embeds first (the oldest turns' messages), to time the model alone.
const sample = makeTurns(shape, 42, 0, 48)
  .flatMap((t) => [t.user, t.agent])
  .map((m) => (typeof m === 'string' ? m : m.text))
await embedder.embed(sample.slice(0, 8))
const aloneBefore = await modelRate(sample)

const manual = process.argv.includes('--manual')
const memory = await openMemory({ dataDir, embedder, workspace, ...(manual ? { indexing: 'manual' as const } : {}) })
const first = await memory.indexing()
log(`memory: ${events} events, ${first.pending} rows waiting for vectors; model alone: ${aloneBefore.toFixed(1)} texts/s`)

const r = seededRandom(7)
const turns = makeTurns(shape, 43, shape.turns, Math.ceil(rate * seconds))
const queries = makeQueries(1000, 11)
const times: Record<string, number[]> = { record: [], recordTurn: [], remember: [], search: [] }
let n = 0
const calls: Record<string, () => Promise<unknown>> = {
  record: () =>
    memory.record({
      kind: 'message',
      scope: { ...BENCH_SCOPE, conversationId: 'load' },
      actor: { type: 'human', id: BENCH_SCOPE.userId },
      content: { text: sentence(r, 30) },
    }),
  recordTurn: () => memory.recordTurn(turns[n++ % turns.length]!),
  remember: () => memory.remember({ content: `The user said ${sentence(r, 12)}`, category: 'fact', userId: BENCH_SCOPE.userId }),
  search: () => memory.search(queries[Math.floor(r() * queries.length)]!, { scope: { userId: BENCH_SCOPE.userId }, limit: 10 }),
}

// One caller per kind, each on a fixed schedule of rate/4 calls per second: a late call
// starts at once, and the schedule does not move.
const started = performance.now()
const end = started + seconds * 1000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
const callers = Object.entries(calls).map(async ([kind, call], k) => {
  const gap = (1000 * Object.keys(calls).length) / rate
  for (let i = 0; ; i++) {
    const at = started + (k * gap) / 4 + i * gap
    if (at >= end) return
    await sleep(at - performance.now())
    const t = performance.now()
    await call()
    times[kind]!.push(performance.now() - t)
  }
})
const backlog: string[] = [`0 s: ${first.pending}`]
const reporter = (async () => {
  for (let s = every; s <= seconds; s += every) {
    await sleep(started + s * 1000 - performance.now())
    const status = await memory.indexing()
    backlog.push(`${s} s: ${status.pending}`)
    log(`  ${s} s: ${status.pending} waiting, ${status.done} with a vector`)
  }
})()
await Promise.all([...callers, reporter])
const elapsed = (performance.now() - started) / 1000
const last = await memory.indexing()
await memory.close()
const aloneAfter = await modelRate(sample)
await embedder.dispose()
await rm(dataDir, { recursive: true, force: true })

const made = Object.values(times).reduce((sum, t) => sum + t.length, 0)
log(`\n${made} calls in ${elapsed.toFixed(0)} s (${(made / elapsed).toFixed(1)} calls/s)`)
log(`backlog: ${backlog.join(', ')}`)
const achieved = (last.done - first.done) / elapsed
const alone = (aloneBefore + aloneAfter) / 2
log(
  `vectors written: ${(last.done - first.done)} (${achieved.toFixed(1)}/s), ` +
    `model alone ${aloneBefore.toFixed(1)} → ${aloneAfter.toFixed(1)} texts/s: ${((100 * achieved) / alone).toFixed(0)}%`,
)
for (const [kind, samples] of Object.entries(times)) {
  const sorted = [...samples].sort((a, b) => a - b)
  log(`${kind}_ms: p50 ${percentile(sorted, 50).toFixed(0)}, p95 ${percentile(sorted, 95).toFixed(0)} (${sorted.length} calls)`)
}
