/**
 * What moving an IndexedDB memory from PGlite's own IndexedDB file system into the page store
 * costs, and what it gives. For each of RUNS (default 2) fresh browser contexts: a memory made
 * the old way (the harness's `engramLegacyIdb`: PGlite's IndexedDB file system, one turn) is
 * opened while a stray page-store database is held open, so the move cannot happen and the
 * memory opens in its old database; TURNS turns (default 60, the first 10 not counted) are
 * timed there. Then the stray is closed and the memory opened again — the move — and opened
 * once more, each open timed, with the same turns after the move. Needs `npm run build`.
 *
 *   node bench/run.mjs bench/idb-move.ts
 */
import { launchBench, openHarness } from './lib/browser-suite.ts'
import { latency } from './lib/metrics.ts'

const RUNS = Number(process.env.RUNS ?? 2)
const TURNS = Number(process.env.TURNS ?? 60)
const WARM = 10

const bench = await launchBench()
const { origin, browser } = bench
const round = (x: number | undefined) => Math.round((x ?? Number.NaN) * 10) / 10
try {
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext()
    const page = await openHarness(context, origin)
    const result = await page.evaluate(
      async ({ name, turns, warm }) => {
        await window.engramLegacyIdb(name)
        const stray = await new Promise<IDBDatabase>((resolve, reject) => {
          const request = indexedDB.open(`engram-${name}`, 1)
          request.onupgradeneeded = () => {
            request.result.createObjectStore('files')
            request.result.createObjectStore('pages')
          }
          request.onsuccess = () => resolve(request.result)
          request.onerror = () => reject(request.error ?? new Error('open failed'))
        })
        const options = { name, storage: 'idb', embedder: { kind: 'none' } } as const
        const names = async () => (await indexedDB.databases()).map((d) => d.name ?? '')
        const phases: { phase: string; openMs: number; turnMs: number[]; oldDatabase: boolean }[] = []
        for (const phase of ['old database', 'the move', 'page store']) {
          const t0 = performance.now()
          const memory = await window.engram.createMemory(options)
          await memory.ping()
          const openMs = performance.now() - t0
          const turnMs: number[] = []
          if (phase !== 'the move') {
            for (let i = 0; i < turns; i++) {
              const t = performance.now()
              await memory.recordTurn({ conversationId: 'c', user: `question ${i} about the build`, agent: `answer ${i}` })
              if (i >= warm) turnMs.push(performance.now() - t)
            }
          }
          await memory.close()
          phases.push({ phase, openMs, turnMs, oldDatabase: (await names()).includes(`/pglite/engram-${name}`) })
          if (phase === 'old database') stray.close()
        }
        await window.engram.deleteMemory(name)
        return phases
      },
      { name: `move-${run}`, turns: TURNS, warm: WARM },
    )
    for (const { phase, openMs, turnMs, oldDatabase } of result) {
      const turns = turnMs.length ? latency(turnMs) : undefined
      process.stdout.write(
        `run ${run} ${phase.padEnd(12)} open ${Math.round(openMs)} ms` +
          (turns ? `, recordTurn p50 ${round(turns.p50)} / p95 ${round(turns.p95)} ms (${turnMs.length})` : '') +
          `, old database ${oldDatabase ? 'kept' : 'gone'}\n`,
      )
    }
    await context.close()
  }
} finally {
  await bench.close()
}
