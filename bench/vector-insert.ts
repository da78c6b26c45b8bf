// Rows per second inserting 2,000 384-d vectors in one transaction, one INSERT per row,
// with the vector sent as pgvector text versus binary (vector_recv) parameters.
//
//   node bench/run.mjs bench/vector-insert.ts
import { openPGlite } from '../src/runtime/pglite.ts'
import type { Db } from '../src/core/kernel/db.ts'
import { lookupVectorOid, vectorQueryOptions } from '../src/embed/vectors.ts'

const ROWS = 2000
const vectors = Array.from({ length: ROWS }, (_, r) =>
  Float32Array.from({ length: 384 }, (_, i) => Math.sin(r * 131 + i * 7)),
)

const pg = await openPGlite()
const db: Db = pg
await db.exec('CREATE EXTENSION IF NOT EXISTS vector')
await db.exec('CREATE TABLE bench_vectors (id int PRIMARY KEY, embedding vector(384))')
const options = vectorQueryOptions(await lookupVectorOid(db))

async function insertAll(label: string, toParam: (v: Float32Array) => unknown) {
  await db.exec('TRUNCATE bench_vectors')
  const started = performance.now()
  await db.transaction(async (tx) => {
    for (const [id, vector] of vectors.entries()) {
      await tx.query('INSERT INTO bench_vectors (id, embedding) VALUES ($1, $2)', [id, toParam(vector)], options)
    }
  })
  const seconds = (performance.now() - started) / 1000
  process.stdout.write(`${label}: ${(ROWS / seconds).toFixed(0)} rows/s (${(seconds * 1000).toFixed(0)} ms)\n`)
}

for (let round = 0; round < 2; round++) {
  await insertAll('text  ', (v) => `[${Array.from(v).join(',')}]`)
  await insertAll('binary', (v) => v)
}
await pg.close()
