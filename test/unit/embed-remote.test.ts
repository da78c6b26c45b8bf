import { expose } from 'comlink'
import { describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { createWorkerEmbedder } from '../../src/browser/host/embed-remote.ts'

/**
 * A stand-in for the embedding worker: the same comlink protocol over a MessageChannel, with a
 * tiny deterministic "model" on the other end, and the `error` event a dying worker fires.
 */
function fakeWorker(options: { failLoad?: boolean } = {}) {
  const { port1, port2 } = new MessageChannel()
  const calls: string[] = []
  expose(
    {
      async load() {
        calls.push('load')
        if (options.failLoad) throw new MemoryError('MODEL_UNAVAILABLE', 'no such model')
        return { id: 'fake/q8', dims: 2, device: 'wasm', fallbackReason: undefined, threads: 1, batchSize: 16 }
      },
      async embed(texts: string[]) {
        calls.push(`embed:${texts.length}`)
        return texts.map((t) => Float32Array.from([t.length, 1]))
      },
      async dispose() {
        calls.push('dispose')
      },
    },
    port2,
  )
  const worker = Object.assign(port1, {
    terminated: false,
    terminate() {
      worker.terminated = true
      port1.close()
      port2.close()
    },
    /** Stops answering, as a dead worker does, and fires its `error` event. */
    die(message: string) {
      port2.close()
      port1.dispatchEvent(Object.assign(new Event('error'), { message }))
    },
  })
  return { worker, calls }
}

describe('the embedder in a worker of its own', () => {
  it('loads there, embeds there in input order, and is terminated on dispose', async () => {
    const { worker, calls } = fakeWorker()
    const embedder = await createWorkerEmbedder({ modelPath: '/m' }, () => worker as unknown as Worker)
    expect(embedder).toMatchObject({ id: 'fake/q8', dims: 2, device: 'wasm', threads: 1, batchSize: 16 })
    const vectors = await embedder.embed(['a', 'abc'])
    expect(vectors.map((v) => Array.from(v))).toEqual([[1, 1], [3, 1]])
    await embedder.dispose()
    expect(calls).toEqual(['load', 'embed:2', 'dispose'])
    expect(worker.terminated).toBe(true)
    await expect(embedder.embed(['x'])).rejects.toMatchObject({ code: 'CLOSED' })
  })

  it('a model that fails to load rejects with its own error and the worker is stopped', async () => {
    const { worker } = fakeWorker({ failLoad: true })
    const loading = createWorkerEmbedder({ modelPath: '/m' }, () => worker as unknown as Worker)
    await expect(loading).rejects.toThrow('no such model')
    expect(worker.terminated).toBe(true)
  })

  it('a worker that dies rejects the calls after it with MODEL_UNAVAILABLE instead of hanging', async () => {
    const { worker } = fakeWorker()
    const embedder = await createWorkerEmbedder({ modelPath: '/m' }, () => worker as unknown as Worker)
    worker.die('out of memory')
    const error = await embedder.embed(['x']).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(MemoryError)
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE', message: expect.stringContaining('out of memory') })
    // Disposing of it does not wait for an answer that will never come.
    await expect(embedder.dispose()).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(worker.terminated).toBe(true)
  })
})
