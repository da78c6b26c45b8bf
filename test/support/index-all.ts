import type { Db } from '../../src/core/db.ts'
import type { Embedder } from '../../src/core/embedder.ts'
import { lookupVectorOid, vectorQueryOptions } from '../../src/embed/vectors.ts'

/**
 * Embeds every chunk that has no vector from `embedder` yet and stores the vectors, the way
 * the background indexer does. Returns how many chunks it embedded.
 */
export async function indexAll(db: Db, embedder: Embedder, batchSize = 64): Promise<number> {
  const options = vectorQueryOptions(await lookupVectorOid(db))
  let done = 0
  for (;;) {
    const { rows } = await db.query<{ id: string; text: string }>(
      `SELECT id, text FROM chunks WHERE embed_model IS DISTINCT FROM $1 ORDER BY id LIMIT $2`,
      [embedder.id, batchSize],
    )
    if (rows.length === 0) return done
    const vectors = await embedder.embed(rows.map((r) => r.text))
    await db.transaction(async (tx) => {
      for (const [i, row] of rows.entries()) {
        await tx.query('UPDATE chunks SET embedding = $1, embed_model = $2 WHERE id = $3', [vectors[i], embedder.id, row.id], options)
      }
    })
    done += rows.length
  }
}
