import { describe, expect, it, vi } from 'vitest'

describe('the Node embedder without @huggingface/transformers installed', () => {
  it('is MODEL_UNAVAILABLE and names the package to install', async () => {
    vi.doMock('@huggingface/transformers', () => {
      throw new Error("Cannot find package '@huggingface/transformers'")
    })
    const { createTransformersEmbedder } = await import('../../src/embed/transformers-embedder.ts')
    const loading = createTransformersEmbedder({ modelPath: '/nowhere/all-MiniLM-L6-v2', device: 'cpu' })
    await expect(loading).rejects.toMatchObject({
      name: 'MemoryError',
      code: 'MODEL_UNAVAILABLE',
      message: expect.stringContaining('npm install @huggingface/transformers'),
    })
  })
})
