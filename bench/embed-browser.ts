// Sentences per second for the bundled int8 model inside the memory worker in headless
// Chromium: WASM, and WebGPU on the software (SwiftShader) adapter `--enable-unsafe-webgpu`
// grants. 200 sentences of 17 words through `memory.embed` (batches of 32, comlink round
// trip included), after one warm-up batch; median of 5 passes (1 for WebGPU). Serves the built
// demo itself. BENCH_ONLY=WASM|WebGPU picks one; BENCH_SENTENCES changes the count.
//
//   npm run build && node bench/run.mjs bench/embed-browser.ts
import { spawn } from 'node:child_process'
import { chromium } from '@playwright/test'

const PORT = Number(process.env.BENCH_PORT ?? 4399)
const BASE = `http://127.0.0.1:${PORT}`
const ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run']

const WORDS = (
  'the agent recorded a decision about the login flow while fixing flaky tests in the payment ' +
  'service and asked the user whether the staging database should be migrated before friday'
).split(' ')
const sentences = Array.from({ length: Number(process.env.BENCH_SENTENCES ?? 200) }, (_, i) =>
  Array.from({ length: 17 }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' '),
)

const server = spawn('npx', ['vite', 'preview', '--host', '127.0.0.1', '--port', String(PORT), '--strictPort'], {
  stdio: 'ignore',
  detached: true,
})
try {
  await waitForServer(`${BASE}/harness.html`)
  // SwiftShader runs WebGPU on the CPU at about one sentence per second: one pass only.
  const modes = [
    ['WASM', [], 5],
    ['WebGPU (SwiftShader)', ['--enable-unsafe-webgpu'], 1],
  ] as const
  for (const [label, extra, passes] of modes.filter(([l]) => !process.env.BENCH_ONLY || l.startsWith(process.env.BENCH_ONLY))) {
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [...ARGS, ...extra],
    })
    try {
      const page = await browser.newPage()
      page.on('crash', () => process.stderr.write(`${label}: the page crashed\n`))
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') process.stderr.write(`${label} console: ${m.text()}\n`)
      })
      await page.goto(`${BASE}/harness.html`)
      await page.waitForFunction(() => window.engramHarnessReady === true)
      const result = await page.evaluate(async ({ texts, passes }) => {
        const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'bundled' } })
        try {
          const loadStarted = performance.now()
          await memory.waitForIndex({ timeoutMs: 120_000 })
          const loadMs = performance.now() - loadStarted
          await memory.embed(texts.slice(0, 32))
          const rates: number[] = []
          for (let pass = 0; pass < passes; pass++) {
            const started = performance.now()
            await memory.embed(texts)
            rates.push(texts.length / ((performance.now() - started) / 1000))
          }
          return { info: await memory.embedderInfo(), rates, loadMs, isolated: crossOriginIsolated }
        } finally {
          await memory.close()
        }
      }, { texts: sentences, passes })
      const sorted = [...result.rates].sort((a, b) => a - b)
      const median = sorted[Math.floor(sorted.length / 2)]!
      const best = sorted.at(-1)!
      process.stdout.write(
        `${label}: ${result.info.model} on ${result.info.device}` +
          `${result.info.device === 'wasm' ? (result.isolated ? ' (multi-threaded)' : ' (one thread: the page is not cross-origin isolated)') : ''}: ` +
          `median ${median.toFixed(1)}/s, best ${best.toFixed(1)}/s (${passes} pass${passes > 1 ? 'es' : ''}); ` +
          `model ready ${(result.loadMs / 1000).toFixed(1)} s after boot\n`,
      )
    } finally {
      await browser.close()
    }
  }
} finally {
  if (server.pid) process.kill(-server.pid)
}

async function waitForServer(url: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`vite preview did not answer at ${url}`)
}
