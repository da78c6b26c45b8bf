// A memory's chunks embedded the first time, then again after the memory is opened with
// another model: `indexNow()` over the bench's memory of SIZE events (default 10,000; see
// bench/lib/data.ts), with a hash embedder whose vectors cost next to nothing, so what is
// timed is the indexer's own work: finding each batch, writing it, building the HNSW index.
// Re-embedding should cost about what the first embedding did. The two models are hash
// embedders under two names (the same vectors), so both runs write the same rows. With
// PROGRESS=1 a progress listener is attached to each run, as a page showing a progress bar has.
//
//   SIZE=10000 [PROGRESS=1] node bench/run.mjs bench/model-switch.ts
import type { Embedder } from '../src/core/kernel/embedder.ts'
import { createEngine } from '../src/core/engine.ts'
import { createHashEmbedder } from '../src/embed/hash-embedder.ts'
import { durableDb, openPGlite } from '../src/runtime/pglite.ts'
import { makeTurns, sessionShape } from './lib/data.ts'

const SIZE = Number(process.env.SIZE ?? 10_000)
const PROGRESS = process.env.PROGRESS === '1'
const hash = createHashEmbedder({ dims: 384 })
const named = (id: string): Embedder => ({ id, dims: hash.dims, embed: (texts, options) => hash.embed(texts, options) })

const pg = await openPGlite()
const db = durableDb(pg)
const workspace = { mode: 'local', root: '/bench/repo' } as const
const writer = await createEngine({ db, embedder: named('first/384'), workspace, indexing: 'manual' })
const shape = sessionShape(SIZE)
for (const turn of makeTurns(shape, 42)) await writer.recordTurn(turn)
const { rows } = await pg.query<{ n: number }>('SELECT count(*)::int AS n FROM chunks')
const chunks = rows[0]?.n ?? 0

const result: Record<string, unknown> = { events: SIZE, chunks, progressListener: PROGRESS }
for (const [step, model] of [
  ['first', 'first/384'],
  ['switched', 'second/384'],
  ['switched back', 'first/384'],
] as const) {
  const engine = step === 'first' ? writer : await createEngine({ db, embedder: named(model), workspace, indexing: 'manual' })
  let events = 0
  const stop = PROGRESS ? engine.onIndexProgress(() => events++) : () => {}
  const started = performance.now()
  const status = await engine.indexNow()
  const seconds = (performance.now() - started) / 1000
  stop()
  if (status.pending !== 0) throw new Error(`${step}: ${status.pending} rows still wait`)
  const { rows: models } = await pg.query<{ model: string; n: number }>(
    'SELECT embed_model AS model, count(*)::int AS n FROM chunks GROUP BY 1',
  )
  if (models.length !== 1 || models[0]?.model !== model || models[0]?.n !== chunks) {
    throw new Error(`${step}: chunks hold ${JSON.stringify(models)}`)
  }
  result[step] = { seconds: Number(seconds.toFixed(2)), chunksPerSecond: Math.round(chunks / seconds), progressEvents: events }
  process.stderr.write(`${step} (${model}): ${seconds.toFixed(2)} s, ${Math.round(chunks / seconds)} chunks/s, ${events} progress events\n`)
}
const first = (result.first as { seconds: number }).seconds
for (const step of ['switched', 'switched back']) {
  result[`${step} / first`] = Number(((result[step] as { seconds: number }).seconds / first).toFixed(2))
}
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
await pg.close()
