import { execFile } from 'node:child_process'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { cosineSimilarity } from '../../src/embed/embedder.ts'
import { createTransformersEmbedder, type TransformersEmbedder } from '../../src/node/index.ts'

const buildScript = join(import.meta.dirname, '../../scripts/build-model.mjs')
const TEXTS = ['fix the login bug', 'buy groceries', 'a', 'Deploy the staging environment after the tests pass']
/** Long enough that 48 of them keep one model thread busy for a second or more. */
const LONG = Array.from({ length: 48 }, (_, i) => `${i} ${'the indexer embeds every chunk of the log in the background '.repeat(8)}`)

let embedder: TransformersEmbedder

beforeAll(async () => {
  await promisify(execFile)(process.execPath, [buildScript, '--quiet'])
  embedder = await createTransformersEmbedder()
})

afterAll(async () => {
  await embedder?.dispose()
})

describe("Node's embedder", () => {
  it('embeds for the background on a second session, with the vectors embed gives', async () => {
    const background = await embedder.background!(TEXTS)
    const foreground = await embedder.embed(TEXTS)
    expect(background).toHaveLength(TEXTS.length)
    for (const [i, vector] of background.entries()) {
      expect(vector).toBeInstanceOf(Float32Array)
      expect(vector.length).toBe(embedder.dims)
      expect(cosineSimilarity(vector, foreground[i]!)).toBeGreaterThan(0.9999)
    }
  })

  it("answers a caller's embed while a background call runs", async () => {
    let backgroundDone = false
    const background = embedder.background!(LONG).then((vectors) => {
      backgroundDone = true
      return vectors
    })
    const [query] = await embedder.embed(['where is the login bug'])
    // On one session the query would queue behind all 48 texts.
    expect(backgroundDone).toBe(false)
    expect(query!.length).toBe(embedder.dims)
    expect(await background).toHaveLength(LONG.length)
  })

  it('keeps indexing on its one copy when told to, and refuses a bad setting', async () => {
    const one = await createTransformersEmbedder({ backgroundThread: false })
    try {
      expect('background' in one).toBe(false)
      expect(one.id).toBe(embedder.id)
    } finally {
      await one.dispose()
    }
    await expect(createTransformersEmbedder({ backgroundThread: 'no' as never })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('indexes on its first copy, with a warning, when the thread cannot load the model', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'engram-model-'))
    await cp(join(import.meta.dirname, '../../models/all-MiniLM-L6-v2'), folder, { recursive: true })
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const copy = await createTransformersEmbedder({ modelPath: folder })
    try {
      // The thread loads its copy on its first call: gone by then.
      await rm(join(folder, 'onnx'), { recursive: true })
      const background = await copy.background!(TEXTS)
      const foreground = await copy.embed(TEXTS)
      for (const [i, vector] of background.entries()) expect(cosineSimilarity(vector, foreground[i]!)).toBeGreaterThan(0.9999)
      await copy.background!(TEXTS)
      expect(warn).toHaveBeenCalledTimes(1)
      expect(String(warn.mock.calls[0]![0])).toContain('indexing embeds on the main thread')
    } finally {
      warn.mockRestore()
      await copy.dispose()
      await rm(folder, { recursive: true, force: true })
    }
  })
})
