import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
})
