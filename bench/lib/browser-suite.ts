/**
 * The browser side of `npm run bench`: the built harness (dist/demo) served on 127.0.0.1 by
 * `vite preview`, driven in headless Chromium through Playwright's launcher (not its test
 * runner). Every timing is taken inside the page with performance.now().
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser, type BrowserContext, chromium, type Page } from '@playwright/test'
import { type PreviewServer, preview } from 'vite'
import type { RecordTurnInput } from '../../src/core/turns/turns.ts'
import { embeddingSentences, makeTurns, sessionShape } from './data.ts'
import { meanTokens } from './tokens.ts'
import { FIRST_MINUTE_METRICS, latency, median } from './metrics.ts'
import type { SuiteOptions, SuiteOutput } from './node-suite.ts'

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // A software (SwiftShader) WebGPU adapter, so the WebGPU path can run without a GPU.
  '--enable-unsafe-webgpu',
]

async function startServer(): Promise<PreviewServer> {
  if (!existsSync('dist/demo/harness.html')) throw new Error('dist/demo/harness.html is missing: run `npm run build` first')
  // vite.config.ts's preview settings apply too: the pages are cross-origin isolated.
  return preview({
    logLevel: 'warn',
    preview: { host: '127.0.0.1', port: 4300 + Math.floor(Math.random() * 600), strictPort: false, open: false },
  })
}

/** The built harness served on 127.0.0.1 and a headless Chromium to drive it; `close()` stops both. */
export async function launchBench(extraArgs: readonly string[] = []): Promise<{ origin: string; browser: Browser; close(): Promise<void> }> {
  const server = await startServer()
  const closeServer = () => new Promise<void>((done) => server.httpServer.close(() => done()))
  try {
    const origin = (server.resolvedUrls?.local[0] ?? '').replace(/\/$/, '')
    if (!origin) throw new Error('vite preview did not report a URL')
    const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, ...extraArgs] })
    return {
      origin,
      browser,
      close: async () => {
        await browser.close()
        await closeServer()
      },
    }
  } catch (error) {
    await closeServer()
    throw error
  }
}

export async function openHarness(context: BrowserContext, origin: string): Promise<Page> {
  const page = await context.newPage()
  page.on('pageerror', (error) => console.error(`page error: ${error.message}`))
  page.on('response', (response) => {
    if (response.status() >= 400 || process.env.BENCH_DEBUG) console.error(`HTTP ${response.status()} ${response.url()}`)
  })
  page.on('console', (message) => {
    // Chromium asks for /favicon.ico, which the harness does not have.
    if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) {
      console.error(`console: ${message.text()} (${message.location().url})`)
    }
  })
  await page.goto(`${origin}/harness.html`)
  await page.waitForFunction(() => window.engramHarnessReady === true)
  return page
}

/** recordTurn latency in the worker, durable on the given storage, measured on the page. */
async function recordTurnLatencies(
  page: Page,
  turns: RecordTurnInput[],
  warmup: number,
  storage: 'opfs' | 'idb',
  indexing: 'auto' | 'manual',
  busy: boolean,
): Promise<{ timings: number[]; embedded: string }> {
  // Passed as JSON: Playwright's argument types cannot unfold the turn schema's type.
  return page.evaluate(
    async ({ json, warmup, storage, indexing, busy }) => {
      const memory = await window.engram.createMemory({
        name: `bench-turns-${storage}-${indexing}${busy ? '-busy' : ''}`,
        storage,
        workspace: { mode: 'local', root: '/bench/repo' },
        // WASM, as on a machine without a GPU (the bench's Chromium has a software WebGPU adapter).
        embedder: { kind: 'bundled', device: 'wasm' },
        indexing,
        ...(busy ? { indexingPause: { quietMs: 0 } } : {}),
      })
      const turns = JSON.parse(json) as Parameters<typeof memory.recordTurn>[0][]
      // Timed once the model has loaded: its start (compiling the runtime, reading the weights)
      // takes the CPU for a few seconds once per memory, and is what the cold starts measure.
      for (let i = 0; i < 600 && (await memory.embedderInfo()).state === 'loading'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      if ((await memory.embedderInfo()).state !== 'ready') throw new Error('recordTurn bench: the model did not load')
      const timings: number[] = []
      try {
        for (const [i, turn] of turns.entries()) {
          const t0 = performance.now()
          await memory.recordTurn(turn)
          if (i >= warmup) timings.push(performance.now() - t0)
        }
        // Right after the last write, before anything could catch up.
        const status = await memory.indexing()
        return { timings, embedded: `${status.done} of ${status.done + status.pending}` }
      } finally {
        await memory.close()
      }
    },
    { json: JSON.stringify(turns), warmup, storage, indexing, busy },
  )
}

/**
 * What sealing costs a turn (docs/privacy.md, "Encryption at rest"): two memories in one page,
 * the same turns recorded in each in turn: every turn `high` in a memory with a vault, and
 * `none` in one without. Alternating keeps the machine's noise off the ratio; timed once both
 * models have loaded.
 */
async function sealedTurnLatencies(
  page: Page,
  turns: RecordTurnInput[],
  warmup: number,
): Promise<{ sealed: number[]; plain: number[] }> {
  return page.evaluate(
    async ({ json, warmup }) => {
      const base = {
        storage: 'opfs',
        workspace: { mode: 'local', root: '/bench/repo' },
        embedder: { kind: 'bundled', device: 'wasm' },
      } as const
      const sealed = await window.engram.createMemory({ ...base, name: 'bench-turns-sealed', vault: { passphrase: 'bench vault passphrase' } })
      const plain = await window.engram.createMemory({ ...base, name: 'bench-turns-beside-sealed' })
      const turns = JSON.parse(json) as Parameters<typeof sealed.recordTurn>[0][]
      for (const memory of [sealed, plain]) {
        for (let i = 0; i < 600 && (await memory.embedderInfo()).state === 'loading'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }
      const timings = { sealed: [] as number[], plain: [] as number[] }
      try {
        for (const [i, turn] of turns.entries()) {
          for (const [name, memory, sensitivity] of [
            ['sealed', sealed, 'high'],
            ['plain', plain, 'none'],
          ] as const) {
            const t0 = performance.now()
            await memory.recordTurn({ ...turn, sensitivity })
            if (i >= warmup) timings[name].push(performance.now() - t0)
          }
        }
        return timings
      } finally {
        await Promise.all([sealed.close(), plain.close()])
      }
    },
    { json: JSON.stringify(turns), warmup },
  )
}

/** Worker creation → first answer (createMemory + ping). */
async function coldStart(page: Page, name: string, storage: 'opfs' | 'idb') {
  return page.evaluate(
    async ({ name, storage }) => {
      const t0 = performance.now()
      const memory = await window.engram.createMemory({ name, storage })
      await memory.ping()
      const ms = performance.now() - t0
      const info = await memory.ready
      await memory.close()
      return { ms, created: info.created, fromTemplate: info.fromTemplate }
    },
    { name, storage },
  )
}

/**
 * Several tabs: the owner tab closes, and a following tab's next write waits for it to take
 * the database over. Timed in Node from the owner's close to that write's acknowledgement.
 * The memory exists already: the owner of a new one, closed within seconds of making it, first
 * finishes writing the template's files, which is not a takeover's cost.
 */
async function takeover(context: BrowserContext, origin: string, name: string): Promise<number> {
  const owner = await openHarness(context, origin)
  const follower = await openHarness(context, origin)
  const options = { name, storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 } as const
  await owner.evaluate(async (options) => {
    await (await window.engram.createMemory(options)).close()
  }, options)
  for (const page of [owner, follower]) {
    await page.evaluate(async (options) => {
      Object.assign(window, { benchMemory: await window.engram.createMemory(options) })
    }, options)
  }
  const write = (page: Page) =>
    page.evaluate(async () => {
      type Writer = { record(event: unknown): Promise<unknown> }
      const memory = (window as unknown as { benchMemory: Writer }).benchMemory
      const event = { kind: 'message', scope: { conversationId: 'c' }, actor: { type: 'human', id: 'u' }, content: { text: 'takeover' } }
      for (;;) {
        try {
          return await memory.record(event)
        } catch (error) {
          // A write the closing owner took and never answered: the follower sends it again.
          if ((error as { code?: string }).code !== 'WORKER_TERMINATED') throw error
        }
      }
    })
  return timeTakeover(owner, follower, write, 'benchMemory')
}

/**
 * The follower writes once, the owner tab closes, and the follower writes again: the time from
 * the close to that write acknowledged. Then the follower closes what it opened (`handle`).
 */
async function timeTakeover(owner: Page, follower: Page, write: (page: Page) => Promise<unknown>, handle: string): Promise<number> {
  await write(follower)
  const started = performance.now()
  await owner.close()
  await write(follower)
  const ms = performance.now() - started
  await follower.evaluate((handle) => (window as unknown as Record<string, { close(): Promise<void> }>)[handle]?.close(), handle)
  await follower.close()
  return ms
}

/**
 * The same takeover with PGlite's own tab election (`PGliteWorker`) in place of the host's:
 * each tab's worker opens the memory's OPFS folder as the host does, and the follower's write
 * is a plain INSERT (the host's is a `record`, through the engine). Timed the same way.
 */
async function pgliteWorkerTakeover(context: BrowserContext, origin: string, name: string): Promise<number> {
  const owner = await openHarness(context, origin)
  const follower = await openHarness(context, origin)
  await owner.evaluate(async (name) => {
    await (await window.engram.createMemory({ name, storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 })).close()
  }, name)
  for (const page of [owner, follower]) {
    await page.evaluate(async (name) => {
      const peer = await window.engramPgliteWorker(name)
      await peer.exec('CREATE TABLE IF NOT EXISTS peer_writes (n int)')
      Object.assign(window, { benchPeer: peer })
    }, name)
  }
  const write = (page: Page) =>
    page.evaluate(async () => {
      const peer = (window as unknown as { benchPeer: { query(sql: string): Promise<unknown> } }).benchPeer
      for (;;) {
        try {
          return void (await peer.query('INSERT INTO peer_writes VALUES (1)'))
        } catch (error) {
          // A query the closing leader never answered: PGliteWorker rejects it, and it is sent again.
          if (!/Leader changed/.test((error as Error).message)) throw error
        }
      }
    })
  return timeTakeover(owner, follower, write, 'benchPeer')
}

/** What one first-minute run measured, each in ms on the page. */
interface FirstMinute {
  /** `connectMemory` → `ready` resolved. */
  ready: number
  /** The first `recordTurn`, right after ready. */
  firstWrite: number
  /** The next few `recordTurn`s, each. */
  nextWrites: number[]
  /** The first keyword search, right after the first writes. */
  firstKeyword: number
  /** `connectMemory` → `embedderInfo()` says ready (or unavailable). */
  modelReady: number
  /** The first vector search once the model is ready. */
  firstVector: number
  created: boolean
}

/** Turns a first-minute run records: the first, then the next ones. */
const FIRST_MINUTE_TURNS = 5

/**
 * What a user meets in the first minute, in order, timed on the page from the moment the page
 * asks for the memory: ready, the first write, a keyword search, the model ready, and the
 * first vector search. Everything runs as an app would, with the default settings.
 */
async function firstMinute(page: Page, name: string, turns: RecordTurnInput[]): Promise<FirstMinute> {
  return page.evaluate(
    async ({ name, json }) => {
      const t0 = performance.now()
      const memory = window.engram.connectMemory({ name, storage: 'opfs', workspace: { mode: 'local', root: '/bench/repo' } })
      try {
        const info = await memory.ready
        const ready = performance.now() - t0
        const turns = JSON.parse(json) as Parameters<typeof memory.recordTurn>[0][]
        const writes: number[] = []
        for (const turn of turns) {
          const t = performance.now()
          await memory.recordTurn(turn)
          writes.push(performance.now() - t)
        }
        let t = performance.now()
        await memory.search('which file did the parser change touch', { mode: 'keyword' })
        const firstKeyword = performance.now() - t
        for (let i = 0; i < 3000 && (await memory.embedderInfo()).state === 'loading'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
        const modelReady = performance.now() - t0
        if ((await memory.embedderInfo()).state !== 'ready') throw new Error('first minute: the model did not load')
        t = performance.now()
        await memory.search('where is the code that reads the input', { mode: 'vector' })
        const firstVector = performance.now() - t
        return { ready, firstWrite: writes[0]!, nextWrites: writes.slice(1), firstKeyword, modelReady, firstVector, created: info.created }
      } finally {
        await memory.close()
      }
    },
    { name, json: JSON.stringify(turns) },
  )
}

/** Turns the first visit of a returning-visit run records before it closes. */
const RETURNING_FIRST_TURNS = 40

/**
 * Cold starts on a returning visit, in a browser profile kept on disk as a user's is: a first
 * page creates `name`, records turns and closes; a second page opens `name` again (`existing`),
 * a third creates another memory (`fresh`). Chromium serves the second and third pages' scripts
 * and WASM from its HTTP cache and keeps, for a module compiled from a cached response, the
 * machine code of the functions it optimised: they start without compiling it again. Fresh
 * contexts (`browser.newContext()`, the other cold starts) keep neither on disk.
 */
async function returningStarts(origin: string, name: string): Promise<{ existing: number; fresh: number }> {
  const profile = mkdtempSync(join(tmpdir(), 'engram-bench-profile-'))
  const turns = makeTurns(sessionShape(4 * RETURNING_FIRST_TURNS), 99)
  try {
    const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS })
    try {
      let page = await openHarness(context, origin)
      await page.evaluate(
        async ({ name, json }) => {
          const memory = await window.engram.createMemory({ name, storage: 'opfs', workspace: { mode: 'local', root: '/bench/repo' } })
          for (const turn of JSON.parse(json) as Parameters<typeof memory.recordTurn>[0][]) await memory.recordTurn(turn)
          await memory.close()
        },
        { name, json: JSON.stringify(turns) },
      )
      await page.close()
      page = await openHarness(context, origin)
      const again = await coldStart(page, name, 'opfs')
      if (again.created) throw new Error('returning cold start: the existing memory was created again')
      await page.close()
      page = await openHarness(context, origin)
      const other = await coldStart(page, `${name}-new`, 'opfs')
      if (!other.created || !other.fromTemplate) throw new Error('returning cold start: the second memory was not new from the template')
      await page.close()
      return { existing: again.ms, fresh: other.ms }
    } finally {
      await context.close()
    }
  } finally {
    rmSync(profile, { recursive: true, force: true })
  }
}

/**
 * Sentences per second through `memory.embed` in the memory worker (comlink round trip
 * included), with the bundled model the worker loads from beside its script.
 */
async function embedRate(page: Page, device: 'wasm' | 'webgpu', threads: number | undefined, sentences: string[], passes: number) {
  return page.evaluate(
    async ({ device, threads, sentences, passes }) => {
      const memory = await window.engram.createMemory({
        storage: 'memory',
        embedder: { kind: 'bundled', device, ...(threads === undefined ? {} : { threads }) },
      })
      try {
        await memory.waitForIndex({ timeoutMs: 180_000 })
        // Loading already ran the model once; one more batch warms the kernels for this batch size.
        await memory.embed(sentences.slice(0, 32))
        const rates: number[] = []
        for (let pass = 0; pass < passes; pass++) {
          const t0 = performance.now()
          await memory.embed(sentences)
          rates.push(sentences.length / ((performance.now() - t0) / 1000))
        }
        return { rates, info: await memory.embedderInfo(), isolated: crossOriginIsolated }
      } finally {
        await memory.close()
      }
    },
    { device, threads, sentences, passes },
  )
}

/** The first minute in a fresh context, then on a returning visit (`--first-minute` runs only these). */
export { FIRST_MINUTE_METRICS }

export const BROWSER_METRICS = [
  ...FIRST_MINUTE_METRICS,
  'record_turn_ms',
  'record_turn_no_index_ms',
  'record_turn_model_busy_ms',
  'record_turn_idb_ms',
  'record_turn_sealed_ms',
  'record_turn_beside_sealed_ms',
  'cold_start_new_ms',
  'cold_start_existing_ms',
  'cold_start_existing_returning_ms',
  'cold_start_new_returning_ms',
  'embed_wasm_per_s',
  'embed_wasm_one_thread_per_s',
  'embed_webgpu_per_s',
  'takeover_ms',
  'takeover_pglite_worker_ms',
]

export async function chromiumVersion(): Promise<string> {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS })
  const version = browser.version()
  await browser.close()
  return version
}

export async function runBrowserSuite(options: SuiteOptions & { coldRuns: number; webgpuSentences: number }): Promise<SuiteOutput> {
  const out: SuiteOutput = { metrics: {}, skipped: {} }
  if (!BROWSER_METRICS.some(options.wants)) return out
  const bench = await launchBench()
  const { origin, browser } = bench
  try {
    options.log(`Chromium ${browser.version()} on ${origin}`)

    if (FIRST_MINUTE_METRICS.some(options.wants)) {
      options.log('Chromium: the first minute (OPFS), in a fresh context and on a returning visit')
      const runs: { fresh: FirstMinute; returning: FirstMinute }[] = []
      for (let run = 0; run < options.coldRuns; run++) {
        const turns = makeTurns(sessionShape(4 * 2 * FIRST_MINUTE_TURNS), 500 + run)
        const context = await browser.newContext()
        try {
          const page = await openHarness(context, origin)
          const fresh = await firstMinute(page, `bench-first-minute-${run}`, turns.slice(0, FIRST_MINUTE_TURNS))
          if (!fresh.created) throw new Error('first minute: the new memory already existed')
          // A returning visit: the same context (its storage and HTTP cache), the page reloaded.
          await page.reload()
          await page.waitForFunction(() => window.engramHarnessReady === true)
          const returning = await firstMinute(page, `bench-first-minute-${run}`, turns.slice(FIRST_MINUTE_TURNS, 2 * FIRST_MINUTE_TURNS))
          if (returning.created) throw new Error('first minute: the returning visit created the memory again')
          runs.push({ fresh, returning })
        } finally {
          await context.close()
        }
      }
      const each = (values: number[]) => `runs: ${values.map((v) => Math.round(v)).join(', ')} ms`
      const what = (visit: 'fresh' | 'returning') =>
        visit === 'fresh'
          ? 'a new memory in a fresh browser context (empty storage and HTTP cache), OPFS, default settings'
          : 'the same memory on a returning visit (the same context, the page reloaded), OPFS, default settings'
      for (const visit of ['fresh', 'returning'] as const) {
        const prefix = visit === 'fresh' ? 'first_minute' : 'first_minute_returning'
        const pick = (key: 'ready' | 'firstWrite' | 'firstKeyword' | 'modelReady' | 'firstVector') => runs.map((r) => r[visit][key])
        const figures = [
          ['ready', pick('ready'), 'connectMemory → ready resolved'],
          ['first_write', pick('firstWrite'), `the first recordTurn (3 procedures) right after ready`],
          ['keyword_search', pick('firstKeyword'), `the first keyword search, after ${FIRST_MINUTE_TURNS} turns`],
          ['model_ready', pick('modelReady'), 'connectMemory → embedderInfo() ready (polled every 20 ms), the writes and search meanwhile'],
          ['vector_search', pick('firstVector'), "the first search({ mode: 'vector' }) once the model is ready"],
        ] as const
        for (const [key, values, how] of figures) {
          const name = `${prefix}_${key}_ms`
          if (options.wants(name)) out.metrics[name] = latency(values, `${how}; ${what(visit)}; ${each(values)}`)
        }
      }
      if (options.wants('first_minute_next_writes_ms')) {
        out.metrics.first_minute_next_writes_ms = latency(
          runs.flatMap((r) => r.fresh.nextWrites),
          `recordTurn (3 procedures) 2nd to ${FIRST_MINUTE_TURNS}th in a new memory, right after the first; ${what('fresh')}`,
        )
      }
    }

    // Each takeover in a fresh context (empty storage), at least five times.
    const takeovers = [
      ['takeover_ms', takeover, 'Chromium: the owner tab closes, a following tab takes over', 'two tabs on one existing memory (OPFS, no model); the owner tab closes, then the follower writes: from the close to that write acknowledged'],
      ['takeover_pglite_worker_ms', pgliteWorkerTakeover, "Chromium: the same takeover with PGlite's own tab election (PGliteWorker)", 'as takeover_ms, with PGliteWorker electing the tab and forwarding queries; the write is one INSERT'],
    ] as const
    for (const [metric, run, log, what] of takeovers) {
      if (!options.wants(metric)) continue
      options.log(log)
      const runs: number[] = []
      for (let n = 0; n < Math.max(options.coldRuns, 5); n++) {
        const context = await browser.newContext()
        try {
          runs.push(await run(context, origin, `bench-${metric}-${n}`))
        } finally {
          await context.close()
        }
      }
      out.metrics[metric] = latency(runs, `${what}; runs: ${runs.map((v) => Math.round(v)).join(', ')} ms`)
    }

    // The same turns on each storage, each in a fresh context (empty storage).
    // `model busy`: background indexing without waiting for a pause in the writes, so the
    // model embeds beside them (what the default does when a write comes mid-batch).
    const turnRuns = [
      ['record_turn_ms', 'opfs', 'auto', false],
      ['record_turn_no_index_ms', 'opfs', 'manual', false],
      ['record_turn_model_busy_ms', 'opfs', 'auto', true],
      ['record_turn_idb_ms', 'idb', 'auto', false],
    ] as const
    for (const [name, storage, indexing, busy] of turnRuns) {
      if (!options.wants(name)) continue
      const turns = makeTurns(sessionShape(4 * (options.warmup + options.ops)), 4242)
      options.log(`Chromium: recordTurn in the worker (${storage}, indexing ${indexing})`)
      const context = await browser.newContext()
      const page = await openHarness(context, origin)
      const run = await recordTurnLatencies(page, turns, options.warmup, storage, indexing, busy)
      out.metrics[name] = latency(
        run.timings,
        `recordTurn with 3 procedures, worker, ${storage === 'opfs' ? 'OPFS' : 'IndexedDB'}, acknowledged after the flush; timed on the page; ` +
          (indexing === 'manual'
            ? 'indexing: manual (no embedding meanwhile)'
            : busy
              ? `the bundled model (WASM, its own worker) indexing at once (indexingPause quietMs 0), ${run.embedded} chunks embedded when the last turn returned`
              : `the bundled model (WASM, its own worker) indexing in the background after a pause in the writes (the default), ${run.embedded} chunks embedded when the last turn returned`) +
          '; timed once the model has loaded',
      )
      await context.close()
    }

    if (options.wants('record_turn_sealed_ms') || options.wants('record_turn_beside_sealed_ms')) {
      options.log('Chromium: recordTurn sealed at rest, beside a memory without a vault')
      const turns = makeTurns(sessionShape(4 * (options.warmup + options.ops)), 4242)
      const context = await browser.newContext()
      const page = await openHarness(context, origin)
      const run = await sealedTurnLatencies(page, turns, options.warmup)
      const what =
        'recordTurn with 3 procedures, worker, OPFS, acknowledged after the flush; timed on the page; two memories in one page, ' +
        'the same turns in each in turn, the bundled model (WASM) indexing in the background'
      out.metrics.record_turn_sealed_ms = latency(run.sealed, `${what}; this one: every turn 'high', in a memory with a vault (sealed at rest, no chunks)`)
      out.metrics.record_turn_beside_sealed_ms = latency(run.plain, `${what}; this one: every turn 'none', in a memory without a vault`)
      await context.close()
    }

    if (options.wants('cold_start_new_ms') || options.wants('cold_start_existing_ms')) {
      for (const storage of ['opfs', 'idb'] as const) {
        options.log(`Chromium: cold starts (${storage})`)
        const fresh: number[] = []
        const existing: number[] = []
        for (let run = 0; run < options.coldRuns; run++) {
          // A new context has empty storage; the page is reloaded so each start spawns a new worker.
          const context = await browser.newContext()
          let page = await openHarness(context, origin)
          const first = await coldStart(page, `bench-cold-${run}`, storage)
          if (!first.created) throw new Error('cold start: the new memory already existed')
          if (!first.fromTemplate) throw new Error('cold start: the new memory did not start from the bundled template')
          fresh.push(first.ms)
          await page.close()
          page = await openHarness(context, origin)
          const again = await coldStart(page, `bench-cold-${run}`, storage)
          if (again.created) throw new Error('cold start: the existing memory was created again')
          existing.push(again.ms)
          await context.close()
        }
        const suffix = storage === 'opfs' ? '' : '_idb'
        const what = `createMemory({ storage: '${storage}' }) + ping, timed on the page; a fresh page for each start`
        out.metrics[`cold_start_new${suffix}_ms`] = latency(fresh, `${what}; new memory from the bundled template`)
        out.metrics[`cold_start_existing${suffix}_ms`] = latency(existing, what)
      }
    }

    if (options.wants('cold_start_existing_returning_ms') || options.wants('cold_start_new_returning_ms')) {
      options.log('Chromium: cold starts on a returning visit (OPFS, a browser profile on disk)')
      const existing: number[] = []
      const fresh: number[] = []
      for (let run = 0; run < options.coldRuns; run++) {
        const starts = await returningStarts(origin, `bench-return-${run}`)
        existing.push(starts.existing)
        fresh.push(starts.fresh)
      }
      const what =
        "createMemory({ storage: 'opfs' }) + ping, timed on the page; a returning visit: a browser profile on disk " +
        '(its HTTP cache and the code cache Chromium keeps for the WASM it compiled) that an earlier page of the ' +
        `harness used to create a memory and record ${RETURNING_FIRST_TURNS} turns; a fresh profile and browser for each run`
      out.metrics.cold_start_existing_returning_ms = latency(existing, `${what}; that memory opened again`)
      out.metrics.cold_start_new_returning_ms = latency(fresh, `${what}; a second memory made from the bundled template`)
    }

    const sentences = embeddingSentences(options.embedSentences, 17)
    const runs = [
      ['embed_wasm_per_s', 'wasm', undefined],
      ['embed_wasm_one_thread_per_s', 'wasm', 1],
      ['embed_webgpu_per_s', 'webgpu', undefined],
    ] as const
    for (const [name, device, threads] of runs) {
      if (!options.wants(name)) continue
      options.log(`Chromium: embedding throughput (${device}${threads === 1 ? ', one thread' : ''})`)
      const context = await browser.newContext()
      const page = await openHarness(context, origin)
      try {
        // Software WebGPU (SwiftShader) manages a few sentences per second here: a
        // small sample, one pass, so the whole run stays within minutes.
        const sample = device === 'webgpu' ? sentences.slice(0, options.webgpuSentences) : sentences
        const passes = device === 'webgpu' ? 1 : options.embedPasses
        const result = await embedRate(page, device, threads, sample, passes)
        if (result.info.device !== device) {
          out.skipped[name] = `not available: ${device} fell back to ${result.info.device ?? result.info.state} (${result.info.fallbackReason ?? result.info.error ?? 'no reason given'})`
        } else {
          const how =
            device === 'webgpu'
              ? 'WebGPU (SwiftShader, software)'
              : `WASM, ${result.info.threads} thread${result.info.threads === 1 ? '' : 's'}${result.isolated ? ' (cross-origin isolated page)' : ''}`
          out.metrics[name] = median(
            result.rates,
            'per_s',
            `${result.info.model} in the memory worker through memory.embed, ${how}, ${sample.length} sentences of ${await meanTokens(sample)} tokens on average, batches of ${result.info.batchSize ?? '?'}`,
          )
        }
      } finally {
        await context.close()
      }
    }
  } finally {
    await bench.close()
  }
  return out
}
