// Sentences per second for the bundled model in Node (onnxruntime-node, CPU), int8 and fp32:
// 200 sentences of ~17 words, batches of 32, after one warm-up batch.
//
//   node scripts/build-model.mjs && node bench/run.mjs bench/embed-node.ts
import { createTransformersEmbedder } from '../src/embed/transformers-embedder.ts'

const WORDS = (
  'the agent recorded a decision about the login flow while fixing flaky tests in the payment ' +
  'service and asked the user whether the staging database should be migrated before friday'
).split(' ')

const sentences = Array.from({ length: 200 }, (_, i) =>
  Array.from({ length: 17 }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' '),
)

for (const quantized of [true, false]) {
  const embedder = await createTransformersEmbedder({ quantized, batchSize: 32 })
  await embedder.embed(sentences.slice(0, 32))
  const runs: number[] = []
  for (let run = 0; run < 3; run++) {
    const started = performance.now()
    await embedder.embed(sentences)
    runs.push(sentences.length / ((performance.now() - started) / 1000))
  }
  const best = Math.max(...runs)
  const median = runs.sort((a, b) => a - b)[1]!
  process.stdout.write(`${embedder.id} on ${embedder.device}: median ${median.toFixed(0)}/s, best ${best.toFixed(0)}/s\n`)
  await embedder.dispose()
}
