// The background lane of Node's embedder (src/node/embed-thread.ts starts it): a second
// session of the same model in a thread of its own, so background indexing never holds the
// event loop, and a caller's embed never waits behind it. onnxruntime-node runs a model call
// synchronously on the thread that makes it. Plain JavaScript: Node runs it as it is, from
// the sources and from the published package alike.
import { parentPort, workerData } from 'node:worker_threads'
import { env, pipeline } from '@huggingface/transformers'

const { name, localModelPath, remote, dtype, batchSize } = workerData
env.allowRemoteModels = remote
env.allowLocalModels = localModelPath !== null
if (localModelPath !== null) env.localModelPath = localModelPath
const loading = pipeline('feature-extraction', name, {
  dtype,
  device: 'cpu',
  local_files_only: !remote,
  // One core for the background: the other stays with the engine and the callers' embeds.
  session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
})

parentPort.on('message', async ({ id, texts }) => {
  try {
    const extractor = await loading
    const vectors = await embedAll(extractor, texts)
    parentPort.postMessage({ id, vectors }, vectors.map((v) => v.buffer))
  } catch (error) {
    parentPort.postMessage({ id, error: String(error?.message ?? error) })
  }
})

/** One vector per text, in batches of like length (a batch pads every text to its longest). */
async function embedAll(extractor, texts) {
  const vectors = new Array(texts.length)
  const order = texts.map((_, i) => i).sort((a, b) => texts[b].length - texts[a].length || a - b)
  for (let start = 0; start < order.length; start += batchSize) {
    const batch = order.slice(start, start + batchSize)
    const output = await extractor(batch.map((i) => texts[i]), { pooling: 'mean', normalize: true })
    try {
      const dims = output.dims.at(-1)
      for (const [row, i] of batch.entries()) vectors[i] = output.data.slice(row * dims, (row + 1) * dims)
    } finally {
      output.dispose()
    }
  }
  return vectors
}
