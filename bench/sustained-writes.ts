// Background indexing under a steady stream of writes, with the bundled model (Node, CPU).
// A memory of `--events` events waits for its vectors; then four callers (record, recordTurn,
// remember, search) write at `--rate` calls per second in all for `--seconds`. Reported: the
// backlog every `--every` seconds, the vectors written per second against the model's own rate
// on the same texts (measured alone before and after the load), and each call's p50 / p95.
//
//   node scripts/build-model.mjs && node bench/run.mjs bench/sustained-writes.ts \
//     [--events 20000] [--seconds 120] [--rate 20] [--every 10] [--seed-dir /tmp/engram-load-seed]
//     [--manual] [--one-session]
//
// `--manual` indexes nothing during the load: the calls' latencies with the model idle.
// `--one-session` indexes on the model's session in this thread, without Node's background thread.
// The seeded memory is kept in `--seed-dir` and copied for each run, so runs start alike.
import { percentile } from './lib/metrics.ts'
import { runSteadyWrites } from './lib/steady-writes.ts'

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? fallback : Number(process.argv[i + 1])
}

const log = (line: string) => process.stdout.write(`${line}\n`)
const seedAt = process.argv.indexOf('--seed-dir')
const every = flag('every', 10)
const run = await runSteadyWrites({
  events: flag('events', 20_000),
  seconds: flag('seconds', 120),
  rate: flag('rate', 20),
  every,
  manual: process.argv.includes('--manual'),
  oneSession: process.argv.includes('--one-session'),
  ...(seedAt < 0 ? {} : { seedDir: String(process.argv[seedAt + 1]) }),
  log,
})

const made = Object.values(run.times).reduce((sum, t) => sum + t.length, 0)
log(`\n${made} calls in ${run.seconds.toFixed(0)} s (${(made / run.seconds).toFixed(1)} calls/s)`)
log(`backlog: ${run.backlog.map((b, i) => `${i * every} s: ${b}`).join(', ')}`)
const achieved = run.vectorsWritten / run.seconds
const [before, after] = run.modelAlone
log(
  `vectors written: ${run.vectorsWritten} (${achieved.toFixed(1)}/s), ` +
    `model alone ${before.toFixed(1)} → ${after.toFixed(1)} texts/s: ${((200 * achieved) / (before + after)).toFixed(0)}%`,
)
for (const [kind, samples] of Object.entries(run.times)) {
  const sorted = [...samples].sort((a, b) => a - b)
  log(`${kind}_ms: p50 ${percentile(sorted, 50).toFixed(0)}, p95 ${percentile(sorted, 95).toFixed(0)} (${sorted.length} calls)`)
}
