/**
 * Where a cold start's time goes in Chromium. For each storage — `memory` (no storage at
 * all), `opfs` and `idb` — RUNS fresh browser contexts (default 3) each start a new memory,
 * then, from a fresh page, open it again (not for `memory`). Each start is `createMemory` +
 * `ping` timed on the page, beside the worker's own `bootMs` (from its `boot` call to the
 * memory being open: fetching the template, starting PGlite, reading the files, migrating).
 * The rest is the worker's script loading and the first round trips. For scale, the page
 * also times fetching the engine's WASM module and data file from the same server, and
 * compiling the module. Needs `npm run build`. `CACHE_MB` opens each memory with that page
 * cache (`cacheMB`) instead of the one it would get.
 *
 *   node bench/run.mjs bench/cold-start.ts
 *   CACHE_MB=32 STORAGES=opfs node bench/run.mjs bench/cold-start.ts
 */
import { readdirSync } from 'node:fs'
import { launchBench, openHarness } from './lib/browser-suite.ts'
import { latency } from './lib/metrics.ts'

const RUNS = Number(process.env.RUNS ?? 3)
const CACHE_MB = process.env.CACHE_MB === undefined ? undefined : Number(process.env.CACHE_MB)
const STORAGES = (process.env.STORAGES ?? 'memory,opfs,idb').split(',') as ('memory' | 'opfs' | 'idb')[]
const asset = (pattern: RegExp) => {
  const name = readdirSync('dist/demo/assets').find((file) => pattern.test(file))
  if (!name) throw new Error(`dist/demo/assets has no ${String(pattern)}: run \`npm run build\` first`)
  return `/assets/${name}`
}
const wasmUrl = asset(/^pglite-.*\.wasm$/)
const dataUrl = asset(/^pglite-.*\.data$/)

const bench = await launchBench()
const { origin, browser } = bench
const median = (values: number[]) => Math.round(latency(values).p50 ?? Number.NaN)
const rows: string[] = ['| storage | start | runs | page ms (p50) | worker bootMs (p50) | page − boot |', '| --- | --- | ---: | ---: | ---: | ---: |']
try {
  for (const storage of STORAGES) {
    const starts = { new: [] as { ms: number; bootMs: number }[], existing: [] as { ms: number; bootMs: number }[] }
    for (let run = 0; run < RUNS; run++) {
      const context = await browser.newContext()
      for (const start of storage === 'memory' ? (['new'] as const) : (['new', 'existing'] as const)) {
        const page = await openHarness(context, origin)
        const result = await page.evaluate(
          async ({ name, storage, cacheMB }) => {
            const t0 = performance.now()
            const memory = await window.engram.createMemory({
              name,
              storage,
              embedder: { kind: 'none' },
              ...(cacheMB === undefined ? {} : { cacheMB }),
            })
            await memory.ping()
            const ms = performance.now() - t0
            const info = await memory.ready
            await memory.close()
            return { ms, bootMs: info.bootMs, created: info.created }
          },
          { name: `cold-${run}`, storage, cacheMB: CACHE_MB },
        )
        if (result.created !== (start === 'new')) throw new Error(`${storage}: expected a ${start} memory`)
        starts[start].push(result)
        await page.close()
      }
      await context.close()
    }
    for (const [start, list] of Object.entries(starts)) {
      if (list.length === 0) continue
      const ms = list.map((s) => s.ms)
      const boot = list.map((s) => s.bootMs)
      rows.push(`| ${storage} | ${start} | ${list.length} | ${median(ms)} | ${median(boot)} | ${median(list.map((s) => s.ms - s.bootMs))} |`)
    }
  }

  const fetches: number[][] = []
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext()
    const page = await openHarness(context, origin)
    fetches.push(
      await page.evaluate(
        async ({ wasmUrl, dataUrl }) => {
          const t0 = performance.now()
          const wasm = await (await fetch(wasmUrl)).arrayBuffer()
          const t1 = performance.now()
          await WebAssembly.compile(wasm)
          const t2 = performance.now()
          await (await fetch(dataUrl)).arrayBuffer()
          return [t1 - t0, t2 - t1, performance.now() - t2]
        },
        { wasmUrl, dataUrl },
      ),
    )
    await context.close()
  }
  const column = (i: number) => median(fetches.map((f) => f[i] ?? 0))
  process.stdout.write(`${rows.join('\n')}\n`)
  process.stdout.write(`\nOn the page, fresh context, p50 of ${RUNS}: fetch ${wasmUrl} ${column(0)} ms, compile it ${column(1)} ms, fetch ${dataUrl} ${column(2)} ms\n`)
} finally {
  await bench.close()
}
