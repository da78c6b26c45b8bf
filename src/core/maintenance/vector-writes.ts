import type { Db, QueryOptions } from '../kernel/db.ts'
import { MemoryError } from '../kernel/errors.ts'
import type { LanedEmbedder } from './embed-lanes.ts'
import type { PendingRow } from './pending-vectors.ts'

/** Refuses vectors that do not match the texts sent: one per row, each of the embedder's dimensions. */
export function checkVectors(embedder: LanedEmbedder, rows: readonly PendingRow[], vectors: readonly Float32Array[]): void {
  if (vectors.length !== rows.length || vectors.some((v) => v.length !== embedder.dims)) {
    throw new MemoryError(
      'MODEL_UNAVAILABLE',
      `The embedder "${embedder.id}" returned ${vectors.length} vectors of ${vectors[0]?.length ?? 0} dimensions ` +
        `for ${rows.length} texts; expected ${embedder.dims} dimensions each.`,
    )
  }
}

/**
 * Stores `vectors[i]` of `model` on `rows[i]`, in one transaction; returns how many rows took
 * their vector (a memory edited meanwhile keeps its edit's vector).
 */
export function writeVectors(
  db: Db,
  rows: readonly PendingRow[],
  vectors: readonly Float32Array[],
  model: string,
  opts: QueryOptions,
): Promise<number> {
  return db.transaction(async (tx) => {
    let n = 0
    for (const [i, row] of rows.entries()) {
      // A memory edited meanwhile keeps the vector its edit gave it (the hash tells).
      const result =
        row.kind === 'memory'
          ? await tx.query(
              `UPDATE memories SET vector = $1::vector, embed_model = $2 WHERE id = $3 AND hash = $4`,
              [vectors[i], model, row.id, row.hash],
              opts,
            )
          : await tx.query(`UPDATE chunks SET embedding = $1::vector, embed_model = $2 WHERE id = $3`, [
              vectors[i],
              model,
              row.id,
            ], opts)
      n += result.affectedRows ?? 0
    }
    return n
  })
}

/** Drops every vector of chunks and memories, so that all are embedded again; returns how many rows lost one. */
export function clearVectors(db: Db): Promise<{ chunks: number; memories: number }> {
  return db.transaction(async (tx) => {
    // Every vector cleared leaves its entry in the HNSW index (schema/0015-vector-debt.ts).
    await tx.query(`UPDATE vector_debt SET chunks = chunks + (SELECT count(*) FROM chunks WHERE embedding IS NOT NULL)`)
    const chunks = await tx.query(
      `UPDATE chunks SET embedding = NULL, embed_model = NULL WHERE embedding IS NOT NULL OR embed_model IS NOT NULL`,
    )
    const memories = await tx.query(
      `UPDATE memories SET vector = NULL, embed_model = NULL WHERE vector IS NOT NULL OR embed_model IS NOT NULL`,
    )
    return { chunks: chunks.affectedRows ?? 0, memories: memories.affectedRows ?? 0 }
  })
}
