import type { Db } from '../kernel/db.ts'
import { ALL_CHUNKS_SQL, buildVectorIndexes, bulkWorthIt, dropVectorIndexes } from '../db/vectors.ts'
import { WAITING_CHUNKS_SQL, WAITING_MEMORIES_SQL } from './pending-vectors.ts'

/**
 * After a full first batch: for chunks and for memories each, when `bulkWorthIt` (many
 * wait, no fewer than already hold a vector of this model), the table's HNSW index is
 * dropped now and built once at the end of the run. Another model's vectors are not
 * counted: every one of them waits to be replaced, so a memory opened with a new model
 * builds its index once instead of inserting each new vector into the old graph.
 * Returns the definitions of the indexes dropped.
 */
export async function startBulk(db: Db, model: string): Promise<string[]> {
  // The chunks of this model are every chunk (the kept total) but those that wait, as in
  // `status`: no count reads them.
  const { rows } = await db.query<{ chunks: number; chunks_indexed: number; memories: number; memories_indexed: number }>(
    `WITH backlog AS (SELECT ${WAITING_CHUNKS_SQL}::int AS chunks, ${ALL_CHUNKS_SQL}::int AS total)
       SELECT b.chunks, b.total - b.chunks AS chunks_indexed,
              ${WAITING_MEMORIES_SQL}::int AS memories,
              (SELECT count(*) FROM memories WHERE vector IS NOT NULL AND embed_model = $1::text)::int AS memories_indexed
       FROM backlog b`,
    [model],
  )
  const r = rows[0]
  return [
    ...(bulkWorthIt(r?.chunks ?? 0, r?.chunks_indexed ?? 0) ? await dropVectorIndexes(db) : []),
    ...(bulkWorthIt(r?.memories ?? 0, r?.memories_indexed ?? 0) ? await dropVectorIndexes(db, 'memories') : []),
  ]
}

/** Builds the indexes a bulk run dropped (`startBulk`), in one transaction. */
export async function endBulk(db: Db, definitions: readonly string[]): Promise<void> {
  await db.transaction((tx) => buildVectorIndexes(tx, definitions))
}
