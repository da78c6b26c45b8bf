/**
 * How `recordTurn`'s latency changes over the first turns after a memory starts: one memory
 * (OPFS, or IndexedDB with STORAGE=idb; no model, indexing manual) records TURNS turns
 * (default 160) from a fresh page, and then TURNS more from another fresh page, so a second
 * worker opens the memory it left. Prints, per start, p50 / p95 / p99 / slowest over turns
 * 20 on (what `record_turn_no_index_ms` times after its 20 warm-ups) and over turns 60 on, and
 * every turn's time. JSFLAGS passes V8 flags to Chromium (`JSFLAGS=--no-liftoff` compiles
 * PGlite's WASM with the optimizing compiler from the start).
 * WARMUP sets `createMemory({ warmUp })` (default 20, the default's; 0 for none), WAIT_MS how
 * long the page waits after the open before its first turn (default 0), as an app that opens
 * its memory before the user's first message. Needs `npm run build`.
 *
 *   WARMUP=0 WAIT_MS=8000 TURNS=60 node bench/run.mjs bench/record-turn-warmup.ts
 */
import { launchBench, openHarness } from './lib/browser-suite.ts'
import { makeTurns, sessionShape } from './lib/data.ts'
import { latency, percentile } from './lib/metrics.ts'

const TURNS = Number(process.env.TURNS ?? 160)
const warmUp = Number(process.env.WARMUP ?? 20)
const wait = Number(process.env.WAIT_MS ?? 0)
const storage = (process.env.STORAGE ?? 'opfs') as 'opfs' | 'idb'
const flags = process.env.JSFLAGS ? [`--js-flags=${process.env.JSFLAGS}`] : []
const turns = makeTurns(sessionShape(4 * 2 * TURNS), 4242)
const summary = (timings: number[]) => {
  if (timings.length === 0) return 'no turns'
  const { p50, p95 } = latency(timings)
  const sorted = [...timings].sort((a, b) => a - b)
  return `p50 ${p50} / p95 ${p95} / p99 ${Math.round(percentile(sorted, 99) * 10) / 10} / slowest ${Math.round((sorted.at(-1) ?? 0) * 10) / 10} ms`
}

const bench = await launchBench(flags)
const { origin, browser } = bench
try {
  const context = await browser.newContext()
  for (const start of [0, 1]) {
    const page = await openHarness(context, origin)
    const timings = await page.evaluate(
      async ({ json, wait, warmUp, storage }) => {
        const memory = await window.engram.createMemory({
          name: 'warmup',
          storage,
          workspace: { mode: 'local', root: '/bench/repo' },
          embedder: { kind: 'none' },
          indexing: 'manual',
          warmUp,
        })
        await new Promise((r) => setTimeout(r, wait))
        const times: number[] = []
        try {
          for (const turn of JSON.parse(json) as Parameters<typeof memory.recordTurn>[0][]) {
            const t0 = performance.now()
            await memory.recordTurn(turn)
            times.push(performance.now() - t0)
          }
        } finally {
          await memory.close()
        }
        return times
      },
      { json: JSON.stringify(turns.slice(start * TURNS, (start + 1) * TURNS)), wait, warmUp, storage },
    )
    process.stdout.write(
      `${start === 0 ? 'new memory' : 'reopened'}${flags.length ? ` (${flags.join(' ')})` : ''}, warmUp ${warmUp}, wait ${wait} ms: ` +
        `turns 20+ ${summary(timings.slice(20))}; turns 60+ ${summary(timings.slice(60))}\n` +
        `  ${timings.map((t) => t.toFixed(0)).join(',')}\n`,
    )
    await page.close()
  }
} finally {
  await bench.close()
}
