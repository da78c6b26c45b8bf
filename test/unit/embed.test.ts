import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { cosineSimilarity } from '../../src/embed/embedder.ts'
import { chooseDevice, chooseWasmThreads, detectEmbedEnvironment } from '../../src/embed/environment.ts'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import {
  createTransformersEmbedder,
  DEFAULT_BATCH_SIZE,
  type ModelLoadProgress,
  type TransformersEmbedder,
  withLength,
} from '../../src/embed/transformers-embedder.ts'

const run = promisify(execFile)
const repoRoot = join(import.meta.dirname, '../..')
const buildScript = join(repoRoot, 'scripts/build-model.mjs')
const modelDir = join(repoRoot, 'models/all-MiniLM-L6-v2')
const MODEL_FILES = [
  'config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'onnx/model.onnx',
  'onnx/model_quantized.onnx',
]

const SENTENCES = [
  'This is an example sentence',
  'Each sentence is converted',
  'fix the login bug',
  'resolve authentication issue',
  'buy groceries',
  'The quick brown fox jumps over the lazy dog.',
  'How do I configure the database connection pool?',
  'Paris is the capital of France.',
  'I prefer tabs over spaces in TypeScript files',
  'The build failed because of a missing semicolon in main.ts',
  'What is the weather like tomorrow?',
  'Refactor the payment service to use async/await',
  'She sells sea shells by the sea shore',
  'Deploy the staging environment after the tests pass',
  'The mitochondria is the powerhouse of the cell',
  'Use pgvector for similarity search in Postgres',
  'a',
  'Hello, world!',
  '1234 5678 90',
  'Quantum computers use qubits that can be in superposition, unlike classical bits which are either zero or one.',
]

let q8: TransformersEmbedder
let fp32: TransformersEmbedder

beforeAll(async () => {
  await run(process.execPath, [buildScript, '--quiet'])
  q8 = await createTransformersEmbedder()
  fp32 = await createTransformersEmbedder({ quantized: false })
})

afterAll(async () => {
  await q8?.dispose()
  await fp32?.dispose()
})

describe('the bundled MiniLM embedder', () => {
  it('names the model and its precision, and runs on the native CPU runtime in Node', () => {
    expect(q8.id).toBe('all-MiniLM-L6-v2/q8')
    expect(fp32.id).toBe('all-MiniLM-L6-v2/fp32')
    expect([q8.dims, fp32.dims]).toEqual([384, 384])
    expect([q8.device, fp32.device]).toEqual(['cpu', 'cpu'])
    expect(q8.fallbackReason).toBeUndefined()
    // Batches of 16 are the WASM default; Node's CPU runtime keeps 32.
    expect(q8.batchSize).toBe(DEFAULT_BATCH_SIZE)
    expect(DEFAULT_BATCH_SIZE).toBe(32)
  })

  it('reproduces the reference sentence-transformers vectors at fp32', async () => {
    const [example, converted] = await fp32.embed(['This is an example sentence', 'Each sentence is converted'])
    expect(example).toHaveLength(384)
    expect(example![0]).toBeCloseTo(0.06766, 4)
    expect(example![1]).toBeCloseTo(0.06356, 4)
    expect(example![2]).toBeCloseTo(0.04873, 4)
    expect(converted![0]).toBeCloseTo(0.08642, 4)
    expect(converted![1]).toBeCloseTo(0.10279, 4)
  })

  it('places related requests close together and unrelated ones apart', async () => {
    const [bug, auth, groceries] = await fp32.embed([
      'fix the login bug',
      'resolve authentication issue',
      'buy groceries',
    ])
    expect(Math.abs(cosineSimilarity(bug!, auth!) - 0.588)).toBeLessThan(0.01)
    expect(Math.abs(cosineSimilarity(bug!, groceries!) - -0.033)).toBeLessThan(0.01)
  })

  it('returns unit-length vectors, and the int8 model agrees with fp32 at cosine ≥ 0.99 on every sentence', async () => {
    const [quantized, full] = await Promise.all([q8.embed(SENTENCES), fp32.embed(SENTENCES)])
    expect(quantized).toHaveLength(SENTENCES.length)
    for (let i = 0; i < SENTENCES.length; i++) {
      expect(Math.hypot(...quantized[i]!)).toBeCloseTo(1, 5)
      expect(cosineSimilarity(quantized[i]!, full[i]!)).toBeGreaterThanOrEqual(0.99)
    }
  })

  it('gives a text the same vector whatever batch it is embedded in, in input order', async () => {
    // Lengths vary, so batching by length reorders the texts inside a call.
    const texts = Array.from(
      { length: 70 },
      (_, i) => `${SENTENCES[i % SENTENCES.length]} ${'and then the build ran again '.repeat(i % 9)}(${i})`,
    )
    const small = await createTransformersEmbedder({ batchSize: 7 })
    expect(small.batchSize).toBe(7)
    try {
      const batched = await q8.embed(texts)
      const inSevens = await small.embed(texts)
      const alone = await Promise.all([0, 8, 41, 69].map(async (i) => (await q8.embed([texts[i]!]))[0]!))
      expect(batched).toHaveLength(70)
      expect(inSevens).toHaveLength(70)
      for (let i = 0; i < texts.length; i++) {
        expect(cosineSimilarity(batched[i]!, inSevens[i]!)).toBeGreaterThan(0.99999)
      }
      for (const [k, i] of [0, 8, 41, 69].entries()) {
        expect(cosineSimilarity(batched[i]!, alone[k]!), `text ${i}`).toBeGreaterThan(0.99999)
      }
      // Neighbours in the input differ in length, so a shuffled result would not pass.
      expect(cosineSimilarity(batched[8]!, batched[9]!)).toBeLessThan(0.99)
    } finally {
      await small.dispose()
    }
  })

  it('embeds nothing to nothing and truncates texts longer than 256 tokens', async () => {
    expect(await q8.embed([])).toEqual([])
    const long = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' ')
    const [vector] = await q8.embed([long])
    expect(Math.hypot(...vector!)).toBeCloseTo(1, 5)
  })

  it('falls back from WebGPU to the CPU runtime in Node when WebGPU cannot start, and says why', async () => {
    const embedder = await createTransformersEmbedder({ device: 'webgpu' })
    try {
      if (embedder.device === 'webgpu') expect(embedder.fallbackReason).toBeUndefined()
      else {
        expect(embedder.device).toBe('cpu')
        expect(embedder.fallbackReason).toMatch(/\w/)
      }
      const [vector] = await embedder.embed(['This is an example sentence'])
      const [reference] = await q8.embed(['This is an example sentence'])
      expect(cosineSimilarity(vector!, reference!)).toBeGreaterThan(0.99)
    } finally {
      await embedder.dispose()
    }
  })

  it('stops with ABORTED when the signal has fired', async () => {
    const controller = new AbortController()
    controller.abort()
    const error = await q8.embed(['never embedded'], { signal: controller.signal }).catch((e: unknown) => e)
    expect(MemoryError.is(error, 'ABORTED')).toBe(true)
  })

  it('reports loading progress per file and ends with ready', async () => {
    const events: ModelLoadProgress[] = []
    const embedder = await createTransformersEmbedder({ onProgress: (p) => events.push(p) })
    await embedder.dispose()
    const done = events.filter((e) => e.stage === 'done').map((e) => e.file)
    expect(done).toContain('onnx/model_quantized.onnx')
    expect(done).toContain('tokenizer.json')
    expect(events.at(-1)).toEqual({ stage: 'ready', loaded: 0, total: 0, file: 'all-MiniLM-L6-v2' })
    const weights = events.find((e) => e.stage === 'done' && e.file === 'onnx/model_quantized.onnx')!
    expect(weights.total).toBeGreaterThan(20_000_000)
  })
})

describe('loading failures', () => {
  it('a missing model folder is MODEL_UNAVAILABLE with a message that says what to do', async () => {
    const missing = join(tmpdir(), 'engram-no-such-model', 'all-MiniLM-L6-v2')
    const error = await createTransformersEmbedder({ modelPath: missing }).catch((e: unknown) => e)
    expect(MemoryError.is(error, 'MODEL_UNAVAILABLE')).toBe(true)
    const memoryError = error as MemoryError
    expect(memoryError.message).toContain(missing)
    expect(memoryError.message).toContain('build-model.mjs')
    expect(memoryError.cause).toBeInstanceOf(Error)
    expect(memoryError.details).toEqual({ model: 'all-MiniLM-L6-v2', where: missing, device: 'cpu' })
  })

  it('a corrupt weights file is MODEL_UNAVAILABLE', async () => {
    const root = await mkdtemp(join(tmpdir(), 'engram-corrupt-model-'))
    try {
      const folder = join(root, 'all-MiniLM-L6-v2')
      await mkdir(join(folder, 'onnx'), { recursive: true })
      for (const file of MODEL_FILES.slice(0, 3)) {
        await writeFile(join(folder, file), await readFile(join(modelDir, file)))
      }
      await writeFile(join(folder, 'onnx/model_quantized.onnx'), 'not an onnx model')
      const error = await createTransformersEmbedder({ modelPath: folder }).catch((e: unknown) => e)
      expect(MemoryError.is(error, 'MODEL_UNAVAILABLE')).toBe(true)
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })

  it('a Hub model id is not downloaded unless remote loading is allowed', async () => {
    const error = await createTransformersEmbedder({ modelId: 'engram-test/not-cached' }).catch((e: unknown) => e)
    expect(MemoryError.is(error, 'MODEL_UNAVAILABLE')).toBe(true)
    expect((error as MemoryError).message).toContain('allowRemote')
  })
})

describe('the model build', () => {
  it('writes byte-identical files on every run and skips a folder that is up to date', async () => {
    const out = await mkdtemp(join(tmpdir(), 'engram-model-build-'))
    try {
      const first = join(out, 'first')
      await run(process.execPath, [buildScript, '--out', first, '--force', '--quiet'])
      // The model folder the suite runs on was built by an earlier run of the same script.
      for (const file of MODEL_FILES) {
        const a = await readFile(join(first, file))
        expect(a.equals(await readFile(join(modelDir, file))), file).toBe(true)
      }
      const quantized = await readFile(join(first, 'onnx/model_quantized.onnx'))
      expect(quantized.length).toBeGreaterThan(23_000_000)
      expect(quantized.length).toBeLessThan(24_000_000)
      const tokenizer = JSON.parse(await readFile(join(first, 'tokenizer.json'), 'utf8')) as {
        padding: unknown
        truncation: { max_length: number }
      }
      expect(tokenizer.padding).toBeNull()
      expect(tokenizer.truncation.max_length).toBe(256)

      const again = await run(process.execPath, [buildScript], { env: { ...process.env, ENGRAM_MODEL_OUT: first } })
      expect(again.stdout).toContain('is up to date')
    } finally {
      await rm(out, { recursive: true, force: true })
    }
   }, 120_000)

  it('the int8 graph runs in onnxruntime-web (WASM) and matches the native runtime', async () => {
    const ort = await import('onnxruntime-web')
    ort.env.wasm.numThreads = 1
    // "This is an example sentence" as BERT token ids.
    const ids = [101, 2023, 2003, 2019, 2742, 6251, 102]
    const shape = [1, ids.length]
    const session = await ort.InferenceSession.create(
      new Uint8Array(await readFile(join(modelDir, 'onnx/model_quantized.onnx'))),
    )
    try {
      const outputs = await session.run({
        input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), shape),
        attention_mask: new ort.Tensor('int64', new BigInt64Array(ids.length).fill(1n), shape),
        token_type_ids: new ort.Tensor('int64', new BigInt64Array(ids.length), shape),
      })
      const hidden = outputs.last_hidden_state!.data as Float32Array
      const pooled = new Float32Array(384)
      for (let t = 0; t < ids.length; t++) {
        for (let d = 0; d < 384; d++) pooled[d]! += hidden[t * 384 + d]! / ids.length
      }
      const norm = Math.hypot(...pooled)
      const web = pooled.map((v) => v / norm)
      const [native] = await q8.embed(['This is an example sentence'])
      expect(cosineSimilarity(web, native!)).toBeGreaterThan(0.9999)
    } finally {
      await session.release()
    }
  })
})

describe('reading model files', () => {
  it('reads a response without a length once, and hands it on with its length', async () => {
    const bytes = new Uint8Array(300_000).map((_, i) => i % 251)
    const chunked = new Response(new Blob([bytes]).stream(), { headers: { 'content-type': 'application/octet-stream' } })
    expect(chunked.headers.has('content-length')).toBe(false)
    const read = (await withLength(chunked)) as Response
    expect(read.headers.get('content-length')).toBe(String(bytes.length))
    expect(new Uint8Array(await read.arrayBuffer())).toEqual(bytes)
  })

  it('leaves alone a response that states its length, or failed, or is not a response', async () => {
    const sized = new Response('{}', { headers: { 'content-length': '2' } })
    expect(await withLength(sized)).toBe(sized)
    const missing = new Response('not found', { status: 404 })
    expect(await withLength(missing)).toBe(missing)
    expect(await withLength('file.json')).toBe('file.json')
  })
})

describe('device choice', () => {
  it('Node uses the CPU runtime; browsers use WebGPU when a hardware adapter was granted, else WASM', async () => {
    const here = await detectEmbedEnvironment()
    expect(here).toEqual({ runtime: 'node', webgpu: false, softwareWebgpu: false, crossOriginIsolated: false })
    expect(chooseDevice(here)).toBe('cpu')
    expect(chooseDevice({ runtime: 'worker', webgpu: true, crossOriginIsolated: false })).toBe('webgpu')
    expect(chooseDevice({ runtime: 'worker', webgpu: true, softwareWebgpu: false, crossOriginIsolated: false })).toBe('webgpu')
    expect(chooseDevice({ runtime: 'window', webgpu: false, crossOriginIsolated: true })).toBe('wasm')
    // A software fallback adapter (SwiftShader) runs the model on the CPU, slower than WASM.
    expect(chooseDevice({ runtime: 'worker', webgpu: true, softwareWebgpu: true, crossOriginIsolated: true })).toBe('wasm')
  })

  it('WASM runs on several threads only where the page is cross-origin isolated, every core up to four by default', () => {
    const worker = { runtime: 'worker', webgpu: false, crossOriginIsolated: true } as const
    expect(chooseWasmThreads(worker, 2)).toBe(2)
    expect(chooseWasmThreads(worker, 16)).toBe(4)
    expect(chooseWasmThreads(worker, 16, 8)).toBe(8)
    expect(chooseWasmThreads(worker, Number.NaN)).toBe(1)
    expect(chooseWasmThreads({ ...worker, runtime: 'window' }, 8, 2)).toBe(2)
    expect(chooseWasmThreads({ ...worker, crossOriginIsolated: false }, 8, 4)).toBe(1)
    expect(chooseWasmThreads({ ...worker, runtime: 'window', crossOriginIsolated: false }, 8)).toBe(1)
    expect(chooseWasmThreads({ ...worker, runtime: 'node' }, 8, 4)).toBe(1)
    expect(q8.threads).toBeUndefined() // Node's CPU runtime picks its own
  })

  it('refuses a thread count that is not a whole number from 1 to 16, before loading anything', async () => {
    for (const threads of [0, 17, 1.5, Number.NaN]) {
      await expect(createTransformersEmbedder({ threads }), String(threads)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringContaining('threads must be a whole number from 1 to 16'),
      })
    }
  })
})

describe('the hash embedder (tests only, not semantic)', () => {
  it('is deterministic, normalised, case-insensitive and sized by dims', async () => {
    const embedder = createHashEmbedder()
    expect(embedder.id).toBe('hash/384')
    const [a, b, c, empty] = await embedder.embed(['Fix the login bug', 'fix THE login bug', 'buy groceries', ''])
    const [again] = await embedder.embed(['Fix the login bug'])
    expect(Array.from(a!)).toEqual(Array.from(again!))
    expect(Array.from(a!)).toEqual(Array.from(b!))
    expect(Math.hypot(...a!)).toBeCloseTo(1, 6)
    expect(Math.hypot(...c!)).toBeCloseTo(1, 6)
    expect(Array.from(empty!).every((v) => v === 0)).toBe(true)
    expect(cosineSimilarity(a!, c!)).toBeLessThan(cosineSimilarity(a!, b!))
    const small = createHashEmbedder({ dims: 8 })
    expect((await small.embed(['one two three']))[0]).toHaveLength(8)
    expect(small.id).toBe('hash/8')
  })

  it('texts sharing words are closer than texts sharing none', async () => {
    const [login, loginAgain, groceries] = await createHashEmbedder().embed([
      'the login bug is back',
      'login bug again',
      'buy groceries today',
    ])
    expect(cosineSimilarity(login!, loginAgain!)).toBeGreaterThan(0.5)
    expect(cosineSimilarity(login!, groceries!)).toBe(0)
  })
})
