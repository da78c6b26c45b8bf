/**
 * One first minute in a fresh Chromium context, told as it happens: ready, five turns, a
 * keyword search, the model's loading stages, two vector searches, with each step's time from
 * `connectMemory` and the engine's telemetry. Writes a Chromium trace of the run (the worker's
 * WASM compiles, V8's background compiling) to TRACE (default /tmp/first-minute-trace.json).
 * Needs `npm run build`.
 *
 *   node bench/run.mjs bench/first-minute-trace.ts
 */
import { launchBench, openHarness } from './lib/browser-suite.ts'
import { makeTurns, sessionShape } from './lib/data.ts'

const TRACE = process.env.TRACE ?? '/tmp/first-minute-trace.json'

const bench = await launchBench()
const { origin, browser } = bench
try {
  const context = await browser.newContext()
  const page = await openHarness(context, origin)
  const turns = makeTurns(sessionShape(40), 500)
  await browser.startTracing(page, { path: TRACE, categories: ['devtools.timeline', 'v8.wasm', 'blink.user_timing', 'loading'] })
  const log = await page.evaluate(
    async ({ json }) => {
      const t0 = performance.now()
      const out: string[] = []
      const at = (what: string) => out.push(`${Math.round(performance.now() - t0)} ms  ${what}`)
      const memory = window.engram.connectMemory({ name: 'first-minute-trace', storage: 'opfs', workspace: { mode: 'local', root: '/bench/repo' } })
      memory.onProgress((p) => {
        if (p.stage !== 'progress' && p.stage !== 'total') at(`model ${p.stage} ${p.file} ${p.loaded}/${p.total}`)
      })
      memory.onIndexProgress((s) => at(`index ${s.done} done, ${s.pending} pending`))
      memory.telemetry.subscribe((e) => at(`telemetry ${JSON.stringify(e.detail)}`))
      at(`ready ${JSON.stringify(await memory.ready)}`)
      for (const turn of (JSON.parse(json) as Parameters<typeof memory.recordTurn>[0][]).slice(0, 5)) {
        await memory.recordTurn(turn)
        at('recordTurn')
      }
      await memory.search('which file did the parser change touch', { mode: 'keyword' })
      at('keyword search')
      while ((await memory.embedderInfo()).state === 'loading') await new Promise((r) => setTimeout(r, 20))
      at(`model ${JSON.stringify(await memory.embedderInfo())}`)
      await memory.search('where is the code that reads the input', { mode: 'vector' })
      at('vector search')
      await memory.search('where is the code that reads the output', { mode: 'vector' })
      at('second vector search')
      await memory.close()
      return out
    },
    { json: JSON.stringify(turns) },
  )
  await browser.stopTracing()
  process.stdout.write(`${log.join('\n')}\ntrace: ${TRACE}\n`)
  await context.close()
} finally {
  await bench.close()
}
