// Filling N 384-d vectors into rows that wait for them (one UPDATE per row, 32 per
// transaction, binary parameters, as the indexer writes) with the HNSW index in place, against
// the same fill with the index dropped and built once afterwards (maintenance_work_mem 512MB).
//
//   N=10000 node bench/run.mjs bench/vector-bulk.ts
import type { Db } from '../src/core/kernel/db.ts'
import { lookupVectorOid, vectorQueryOptions } from '../src/embed/vectors.ts'
import { openPGlite } from '../src/runtime/pglite.ts'
import { seededRandom } from './lib/data.ts'

const N = Number(process.env.N ?? 10_000)
const random = seededRandom(1)
const vectors = Array.from({ length: N }, () => Float32Array.from({ length: 384 }, () => random() - 0.5))
const INDEX = `CREATE INDEX fill_hnsw ON fill USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384`

const result: Record<string, unknown> = { vectors: N }
for (const mode of ['insert', 'build'] as const) {
  const pg = await openPGlite()
  const db: Db = pg
  await pg.exec('CREATE EXTENSION IF NOT EXISTS vector; CREATE TABLE fill (id int PRIMARY KEY, embedding vector)')
  await pg.query('INSERT INTO fill SELECT g, NULL FROM generate_series(0, $1::int - 1) g', [N])
  if (mode === 'insert') await pg.exec(INDEX)
  const options = vectorQueryOptions(await lookupVectorOid(db))
  const started = performance.now()
  for (let from = 0; from < N; from += 32) {
    await db.transaction(async (tx) => {
      for (let i = from; i < Math.min(N, from + 32); i++) {
        await tx.query('UPDATE fill SET embedding = $1::vector WHERE id = $2', [vectors[i], i], options)
      }
    })
  }
  const filled = performance.now()
  if (mode === 'build') {
    await pg.transaction(async (tx) => {
      await tx.exec(`SET LOCAL maintenance_work_mem = '512MB'`)
      await tx.exec(INDEX)
    })
  }
  const done = performance.now()
  result[mode] = {
    fillMs: Math.round(filled - started),
    buildMs: Math.round(done - filled),
    totalMs: Math.round(done - started),
    perSecond: Math.round(N / ((done - started) / 1000)),
  }
  await pg.close()
}
process.stdout.write(`${JSON.stringify(result)}\n`)
