// Sentences per second for the bundled model in Node (onnxruntime-node, CPU), int8 and fp32:
// 200 sentences of 17 words, batches of 32, after one warm-up batch.
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

// Both models are loaded and measured in alternating passes, so a busy machine slows both alike.
const embedders = [
  await createTransformersEmbedder({ quantized: true, batchSize: 32 }),
  await createTransformersEmbedder({ quantized: false, batchSize: 32 }),
]
const rates = embedders.map(() => [] as number[])
for (const embedder of embedders) await embedder.embed(sentences.slice(0, 32))
for (let pass = 0; pass < 5; pass++) {
  for (const [i, embedder] of embedders.entries()) {
    const started = performance.now()
    await embedder.embed(sentences)
    rates[i]!.push(sentences.length / ((performance.now() - started) / 1000))
  }
}
for (const [i, embedder] of embedders.entries()) {
  const sorted = rates[i]!.sort((a, b) => a - b)
  const median = sorted[2]!.toFixed(0)
  const best = sorted[4]!.toFixed(0)
  process.stdout.write(`${embedder.id} on ${embedder.device}: median ${median}/s, best ${best}/s (5 passes)\n`)
  await embedder.dispose()
}
