import { type Browser, expect, type Page, test } from '@playwright/test'
import { cosineSimilarity } from '../../src/embed/embedder.ts'
import { createTransformersEmbedder, DEFAULT_BATCH_SIZE, WASM_BATCH_SIZE } from '../../src/embed/transformers-embedder.ts'
import { openHarness } from './support.ts'

const SENTENCES = [
  'This is an example sentence',
  'fix the login bug',
  'resolve authentication issue',
  'The build failed because of a missing semicolon in main.ts',
]

interface Outcome {
  info: { state: string; model?: string; device?: string; fallbackReason?: string; threads?: number; batchSize?: number; dedicatedWorker?: boolean }
  isolated: boolean
  cores: number
  vectors: number[][]
  stages: string[]
  indexed: { pending: number; done: number; model: string | null }
  indexEvents: number
}

/** Opens a memory with the bundled model, embeds SENTENCES and indexes one message, all in the worker. */
function embedInWorker(page: Page, device: 'auto' | 'webgpu' | 'wasm', threads?: number): Promise<Outcome> {
  return page.evaluate(
    async ({ sentences, device, threads }) => {
      const stages: string[] = []
      let indexEvents = 0
      const memory = await window.engram.createMemory({
        storage: 'memory',
        embedder: { kind: 'bundled', device, ...(threads === undefined ? {} : { threads }) },
      })
      memory.onProgress((p) => stages.push(`${p.stage}:${p.file}`))
      memory.onIndexProgress(() => indexEvents++)
      try {
        await memory.record({
          kind: 'message',
          scope: { conversationId: 'c1' },
          actor: { type: 'human', id: 'u1' },
          content: { text: 'the login page throws after the upgrade' },
        })
        const indexed = await memory.waitForIndex({ timeoutMs: 45_000 })
        const vectors = await memory.embed(sentences)
        return {
          info: await memory.embedderInfo(),
          isolated: crossOriginIsolated,
          cores: navigator.hardwareConcurrency,
          vectors: vectors.map((v) => Array.from(v)),
          stages,
          indexed: { pending: indexed.pending, done: indexed.done, model: indexed.model },
          indexEvents,
        }
      } finally {
        await memory.close()
      }
    },
    { sentences: SENTENCES, device, threads },
  )
}

let reference: number[][]

test.beforeAll(async () => {
  // The same int8 model through onnxruntime in Node: the values the browser must reproduce.
  const node = await createTransformersEmbedder()
  try {
    reference = (await node.embed(SENTENCES)).map((v) => Array.from(v))
  } finally {
    await node.dispose()
  }
})

function expectClose(actual: number[][], expected: number[][], maxDiff: number, minCosine: number) {
  expect(actual).toHaveLength(expected.length)
  for (const [i, vector] of actual.entries()) {
    const want = expected[i]!
    expect(vector).toHaveLength(384)
    const worst = Math.max(...vector.map((x, j) => Math.abs(x - want[j]!)))
    expect(worst, `sentence ${i}: largest component difference`).toBeLessThan(maxDiff)
    expect(cosineSimilarity(Float32Array.from(vector), Float32Array.from(want))).toBeGreaterThan(minCosine)
  }
}

test('the worker embeds with WASM, indexes in the background, and every request stays on 127.0.0.1', async ({
  page,
  context,
  baseURL,
}) => {
  expect(baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
  const requests: string[] = []
  context.on('request', (request) => requests.push(request.url()))
  await openHarness(page)
  const outcome = await embedInWorker(page, 'auto')

  // The harness is served cross-origin isolated: WASM runs on every core, up to four.
  expect(outcome.isolated).toBe(true)
  expect(outcome.info).toEqual({
    state: 'ready',
    model: 'all-MiniLM-L6-v2/q8',
    device: 'wasm',
    threads: Math.min(4, outcome.cores),
    batchSize: WASM_BATCH_SIZE,
    dedicatedWorker: true,
  })
  expect(outcome.indexed).toEqual({ pending: 0, done: 1, model: 'all-MiniLM-L6-v2/q8' })
  expect(outcome.indexEvents).toBeGreaterThan(0)
  expect(outcome.stages).toContain('done:onnx/model_quantized.onnx')
  expectClose(outcome.vectors, reference, 5e-3, 0.999)
  const [, login, auth] = outcome.vectors.map((v) => Float32Array.from(v))
  expect(cosineSimilarity(login!, auth!)).toBeCloseTo(0.588, 1)

  const foreign = requests.filter((url) => !url.startsWith(`${baseURL}/`) && !/^(blob|data):/.test(url))
  expect(foreign).toEqual([])
  // The WASM device loads onnxruntime-web's WASM-only runtime, not the larger WebGPU one.
  expect(requests.some((url) => url.endsWith('/assets/ort/ort-wasm-simd-threaded.wasm'))).toBe(true)
  expect(requests.some((url) => url.includes('asyncify'))).toBe(false)
  expect(requests.some((url) => url.endsWith('/assets/models/all-MiniLM-L6-v2/onnx/model_quantized.onnx'))).toBe(true)
})

test('threads: 1 runs the model on one thread with the same vectors; a count out of range fails the boot', async ({
  page,
}) => {
  await openHarness(page)
  const outcome = await embedInWorker(page, 'wasm', 1)
  expect(outcome.info).toMatchObject({ state: 'ready', device: 'wasm', threads: 1 })
  expectClose(outcome.vectors, reference, 5e-3, 0.999)
  const code = await page.evaluate(async () => {
    try {
      await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'bundled', threads: 0 } })
      return 'opened'
    } catch (error) {
      return String((error as { code?: string }).code)
    }
  })
  expect(code).toBe('INVALID_INPUT')
})

test('on the page itself (no worker), cross-origin isolated, the model runs on the threads asked for', async ({
  page,
}) => {
  await openHarness(page)
  const outcome = await page.evaluate(async (sentences) => {
    const model = await window.engramEmbed.createTransformersEmbedder({
      modelPath: 'assets/models/all-MiniLM-L6-v2',
      wasmPaths: `${location.origin}/assets/ort/`,
      device: 'wasm',
      threads: 2,
    })
    try {
      const vectors = await model.embed(sentences)
      return { isolated: crossOriginIsolated, threads: model.threads, batchSize: model.batchSize, vectors: vectors.map((v) => Array.from(v)) }
    } finally {
      await model.dispose()
    }
  }, SENTENCES)
  expect(outcome.isolated).toBe(true)
  expect(outcome.threads).toBe(2)
  expect(outcome.batchSize).toBe(WASM_BATCH_SIZE)
  expectClose(outcome.vectors, reference, 5e-3, 0.999)
})

test('the model runs in a worker of its own, so a write does not wait for an embedding in progress', async ({ page }) => {
  // Two memories, each loading the model: more than the default budget.
  test.setTimeout(150_000)
  await openHarness(page)
  // A long batch is embedded and a turn is written just after it was asked for. With the model
  // in its own worker the write is acknowledged first; in the memory worker
  // (dedicatedWorker: false) inference holds the thread, so the write waits for the batch.
  const order = (dedicatedWorker: boolean) =>
    page.evaluate(async (dedicatedWorker) => {
      const memory = await window.engram.createMemory({
        storage: 'memory',
        embedder: { kind: 'bundled', device: 'wasm', dedicatedWorker },
      })
      try {
        await memory.embed(['warm up'])
        const words = 'the indexer embeds every chunk of the conversation in the background while the agent works'
        const texts = Array.from({ length: 16 }, (_, i) => `${i} ${words.repeat(8)}`)
        const done: string[] = []
        const embedding = memory.embed(texts).then(() => done.push('embed'))
        const writing = memory.recordTurn({ conversationId: 'c1', user: 'is the build green?', agent: 'Yes.' }).then(() => done.push('write'))
        await Promise.all([embedding, writing])
        return { done, info: await memory.embedderInfo() }
      } finally {
        await memory.close()
      }
    }, dedicatedWorker)
  const dedicated = await order(true)
  expect(dedicated.info).toMatchObject({ state: 'ready', dedicatedWorker: true })
  expect(dedicated.done).toEqual(['write', 'embed'])
  const inline = await order(false)
  expect(inline.info).toMatchObject({ state: 'ready', dedicatedWorker: false })
  expect(inline.done).toEqual(['embed', 'write'])
})

test('WebGPU that cannot start falls back to WASM with the reason', async ({ page }) => {
  await openHarness(page)
  // Without --enable-unsafe-webgpu this Chromium grants no adapter.
  const outcome = await embedInWorker(page, 'webgpu')
  expect(outcome.info).toMatchObject({ state: 'ready', device: 'wasm' })
  expect(outcome.info.fallbackReason).toEqual(expect.any(String))
  expectClose(outcome.vectors, reference, 5e-3, 0.999)
})

test('a model that cannot load is a MODEL_UNAVAILABLE event, and the memory keeps working on keywords', async ({
  page,
}) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({
      storage: 'memory',
      embedder: { kind: 'bundled', modelPath: new URL('/no-such-model', location.href).href },
    })
    const errors: string[] = []
    memory.onError((e) => errors.push(e.code))
    try {
      const written = await memory.record({
        kind: 'message',
        scope: { conversationId: 'c1' },
        actor: { type: 'human', id: 'u1' },
        content: { text: 'the login page throws after the upgrade' },
      })
      let waited = 'resolved'
      try {
        await memory.waitForIndex({ timeoutMs: 30_000 })
      } catch (error) {
        waited = (error as { code: string }).code
      }
      const remembered = await memory.remember({ content: 'Login uses SSO', category: 'fact' })
      const hits = await memory.recall('SSO login')
      return {
        chunks: written.chunkIds.length,
        waited,
        errors,
        info: (await memory.embedderInfo()).state,
        recalled: hits.map((h) => h.id === remembered.id),
        status: await memory.indexing(),
      }
    } finally {
      await memory.close()
    }
  })
  expect(outcome).toMatchObject({
    chunks: 1,
    waited: 'MODEL_UNAVAILABLE',
    errors: ['MODEL_UNAVAILABLE'],
    info: 'unavailable',
    recalled: [true],
    status: { embedder: 'unavailable', pending: 2, done: 0, running: false },
  })
})

test.describe('with WebGPU enabled (SwiftShader)', () => {
  let browser: Browser
  test.beforeAll(async ({ playwright, launchOptions }) => {
    // The configured Chromium and flags, plus a software (SwiftShader) WebGPU adapter.
    browser = await playwright.chromium.launch({
      ...launchOptions,
      args: [...(launchOptions.args ?? []), '--enable-unsafe-webgpu'],
    })
  })
  test.afterAll(async () => {
    await browser?.close()
  })

  test('auto leaves the software adapter for WASM', async ({ baseURL }) => {
    const page = await browser.newPage(baseURL ? { baseURL } : {})
    await openHarness(page)
    // The premise: this browser grants an adapter, and it is a software fallback.
    const adapter = await page.evaluate(async () => {
      const gpu = (navigator as Navigator & { gpu?: { requestAdapter(): Promise<{ info?: { isFallbackAdapter?: boolean } } | null> } }).gpu
      const granted = await gpu?.requestAdapter()
      return granted ? { fallback: granted.info?.isFallbackAdapter ?? null } : null
    })
    expect(adapter).toEqual({ fallback: true })
    const outcome = await embedInWorker(page, 'auto')
    expect(outcome.info).toMatchObject({ state: 'ready', model: 'all-MiniLM-L6-v2/q8', device: 'wasm' })
    expect(outcome.info.fallbackReason).toBeUndefined()
    expectClose(outcome.vectors, reference, 5e-3, 0.999)
    await page.close()
  })

  test('asked for, the worker runs WebGPU on it and its vectors agree with WASM', async ({ baseURL }) => {
    const page = await browser.newPage(baseURL ? { baseURL } : {})
    await openHarness(page)
    const outcome = await embedInWorker(page, 'webgpu')
    expect(outcome.info).toEqual({
      state: 'ready',
      model: 'all-MiniLM-L6-v2/q8',
      device: 'webgpu',
      batchSize: DEFAULT_BATCH_SIZE, // WASM's smaller batches are for WASM only
      dedicatedWorker: true,
    })
    expect(outcome.indexed).toEqual({ pending: 0, done: 1, model: 'all-MiniLM-L6-v2/q8' })
    expectClose(outcome.vectors, reference, 1e-2, 0.999)
    await page.close()
  })
})
