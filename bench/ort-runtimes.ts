/**
 * onnxruntime-web's two browser runtimes with the bundled model, in a fresh Chromium context
 * each time: the WASM-only build (`onnxruntime-web/wasm`) and the WebGPU build Transformers.js
 * imports (its asyncify runtime), both on the WASM execution provider with two threads. Times
 * the model's bytes, the session, the first run, and batches of 16 texts of 40 tokens.
 * Needs `npm run build` (for models/).
 *
 *   node bench/run.mjs bench/ort-runtimes.ts
 *   ROUNDS=5 node bench/run.mjs bench/ort-runtimes.ts
 */
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { extname, join } from 'node:path'
import { chromium } from '@playwright/test'
import { CHROMIUM_PATH } from './lib/browser-suite.ts'
import { latency } from './lib/metrics.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 3)
const BUILDS = ['wasm', 'webgpu'] as const

// The worker under test: imports one build, loads the model, runs it.
const WORKER = `
const build = new URL(self.location.href).searchParams.get('build')
const t0 = performance.now()
const ort = await import('/ort/ort.' + build + '.min.mjs')
ort.env.wasm.numThreads = 2
ort.env.wasm.wasmPaths = '/ort/'
const model = new Uint8Array(await (await fetch('/model/onnx/model_quantized.onnx')).arrayBuffer())
const bytes = performance.now() - t0
const session = await ort.InferenceSession.create(model, { executionProviders: ['wasm'] })
const ready = performance.now() - t0
const L = 40
const feed = (k) => {
  const ids = BigInt64Array.from({ length: k * L }, (_, i) => BigInt(i % L === 0 ? 101 : 1000 + (i % 500)))
  const ones = new BigInt64Array(k * L).fill(1n)
  return {
    input_ids: new ort.Tensor('int64', ids, [k, L]),
    attention_mask: new ort.Tensor('int64', ones, [k, L]),
    token_type_ids: new ort.Tensor('int64', new BigInt64Array(k * L), [k, L]),
  }
}
await session.run(feed(1))
const probe = performance.now() - t0
const batches = []
for (let i = 0; i < 5; i++) {
  const t = performance.now()
  await session.run(feed(16))
  batches.push(performance.now() - t)
}
postMessage({ bytes, ready, probe, batches })
`

const TYPES: Record<string, string> = { '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' }
const ROOTS: [string, string][] = [
  ['/ort/', 'node_modules/onnxruntime-web/dist/'],
  ['/model/', 'models/all-MiniLM-L6-v2/'],
]

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://x').pathname
  const send = (body: string | Buffer, type: string) => {
    res.writeHead(200, {
      'Content-Type': type,
      'Content-Length': Buffer.byteLength(body),
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
    })
    res.end(body)
  }
  if (path === '/') return send('<!doctype html>', 'text/html')
  if (path === '/worker.mjs') return send(WORKER, 'text/javascript')
  const root = ROOTS.find(([prefix]) => path.startsWith(prefix) && !path.includes('..'))
  if (!root) return void res.writeHead(404).end()
  readFile(join(root[1], path.slice(root[0].length))).then(
    (body) => send(body, TYPES[extname(path)] ?? 'application/octet-stream'),
    () => void res.writeHead(404).end(),
  )
})
await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox'] })

interface Run {
  bytes: number
  ready: number
  probe: number
  batches: number[]
}
const runs = new Map<string, Run[]>(BUILDS.map((b) => [b, []]))
try {
  // Interleaved, so that a slower stretch of a noisy machine touches both builds alike.
  for (let round = 0; round < ROUNDS; round++) {
    for (const build of BUILDS) {
      const context = await browser.newContext()
      const page = await context.newPage()
      await page.goto(origin)
      const run = await page.evaluate(
        (b) =>
          new Promise<Run>((resolve, reject) => {
            const worker = new Worker(`/worker.mjs?build=${b}`, { type: 'module' })
            worker.onmessage = (event) => resolve(event.data as Run)
            worker.onerror = (event) => reject(new Error(event.message))
          }),
        build,
      )
      runs.get(build)?.push(run)
      await context.close()
    }
  }
} finally {
  await browser.close()
  server.close()
}

const ms = (values: number[]) => values.map((v) => Math.round(v)).join(' / ')
const rows = ['| build | model bytes, ms | session ready, ms | first run, ms | batch of 16, p50 ms |', '| --- | --- | --- | --- | ---: |']
for (const [build, list] of runs) {
  const batch = latency(list.flatMap((r) => r.batches)).p50 ?? Number.NaN
  rows.push(`| ${build} | ${ms(list.map((r) => r.bytes))} | ${ms(list.map((r) => r.ready))} | ${ms(list.map((r) => r.probe))} | ${Math.round(batch)} |`)
}
process.stdout.write(`${rows.join('\n')}\n`)
