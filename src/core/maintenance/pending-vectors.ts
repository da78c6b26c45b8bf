import type { Db } from '../kernel/db.ts'
import { ALL_CHUNKS_SQL, MISSING_VECTORS_SQL } from '../db/vectors.ts'
import { SEALED_SQL } from '../privacy/vault.ts'

/** A chunk or an active memory waiting for a vector of the current model. */
export interface PendingRow {
  kind: 'memory' | 'chunk'
  id: string
  text: string
  hash: string | null
}

/**
 * Chunks with a vector of another model than `$1` (all of them when `$1` is null), written so
 * the `chunks_embed_model` index can find them: a scan of every chunk per batch would make
 * indexing slower the larger the memory.
 */
export const otherModel = (c = 'chunks') =>
  `${c}.embedding IS NOT NULL AND ($1::text IS NULL OR ${c}.embed_model < $1::text OR ${c}.embed_model > $1::text OR ${c}.embed_model IS NULL)`

/** Chunks waiting for a vector of model `$1`: none yet, or another model's (two index reads). */
export const WAITING_CHUNKS_SQL = `(${MISSING_VECTORS_SQL} + (SELECT count(*) FROM chunks WHERE ${otherModel()}))`

/**
 * Active memories with another model's vector than `$1` (every vector when `$1` is null), as
 * a predicate over `m` that `memories_embed_model` answers.
 */
const OTHER_MODEL_MEMORY = `m.status = 'active' AND m.vector IS NOT NULL
  AND (($1::text IS NULL AND m.embed_model IS NOT NULL) OR m.embed_model < $1::text OR m.embed_model > $1::text
       OR ($1::text IS NOT NULL AND m.embed_model IS NULL))`

/** A memory sealed at rest (src/core/privacy/vault.ts) keeps no vector: the indexer never waits for one. */
const UNSEALED = `NOT starts_with(m.content, ${SEALED_SQL})`

/**
 * Active memories without a vector of the current model (`$1`): none yet (`memories_unembedded`)
 * or another model's (`memories_embed_model`), counted through the two indexes.
 */
export const WAITING_MEMORIES_SQL = `((SELECT count(*) FROM memories m WHERE ${UNSEALED} AND m.status = 'active' AND m.vector IS NULL)
  + (SELECT count(*) FROM memories m WHERE ${OTHER_MODEL_MEMORY}))`

/**
 * The rows of `from` (aliased `t`) that wait for a vector of model `$1`, as four walks of its
 * two partial indexes, each in the index's order and of at most `$2` rows: no vector yet
 * (`vector` IS NULL), then another model's below `$1`, above it, and with no model name.
 */
function waitingWalks(columns: string, from: string, vector: string, t: string): string {
  const walk = (where: string, order: string) =>
    `(SELECT ${columns} FROM ${from} WHERE ${where} ORDER BY ${order} LIMIT $2)`
  return [
    walk(`${vector} IS NULL`, `${t}.created_at, ${t}.id`),
    walk(`${vector} IS NOT NULL AND ${t}.embed_model < $1::text`, `${t}.embed_model, ${t}.created_at, ${t}.id`),
    walk(`${vector} IS NOT NULL AND ${t}.embed_model > $1::text`, `${t}.embed_model, ${t}.created_at, ${t}.id`),
    walk(`${vector} IS NOT NULL AND ${t}.embed_model IS NULL`, `${t}.created_at, ${t}.id`),
  ].join('\n    UNION ALL\n    ')
}

/**
 * The next batch to embed for model `$1`, at most `$2` rows: memories first, then chunks,
 * each without a vector or with another model's, oldest first. Another model's rows are read
 * as one walk of `memories_embed_model` or `chunks_embed_model` on each side of `$1` (and one
 * over those with no model name), each in the index's order (model, then time) and stopping at
 * `$2` rows. Read as one range ordered by time alone, every waiting chunk was read and sorted
 * for each batch (34 ms a batch with 10,000 waiting), so the batches of a switch to a new
 * model cost in all about the square of the number of chunks.
 */
export const PENDING_BATCH_SQL = `SELECT kind, id, text, hash FROM (
    ${waitingWalks(`'memory' AS kind, 0 AS rank, m.id, m.content AS text, m.hash, m.created_at`, 'memories m', `${UNSEALED} AND m.status = 'active' AND m.vector`, 'm')}
    UNION ALL
    ${waitingWalks(`'chunk' AS kind, 1 AS rank, c.id, c.text, NULL AS hash, c.created_at`, 'chunks c', 'c.embedding', 'c')}
  ) pending
  ORDER BY rank, created_at, id
  LIMIT $2`

/** The next batch to embed for `model`, at most `limit` rows (`PENDING_BATCH_SQL`). */
export async function readPendingBatch(db: Db, model: string, limit: number): Promise<PendingRow[]> {
  const { rows } = await db.query<PendingRow>(PENDING_BATCH_SQL, [model, limit])
  return rows
}

/**
 * Rows with and without a vector of `model` (every row waits when it is null), and how many
 * of those waiting are chunks.
 */
export async function countVectors(db: Db, model: string | null): Promise<{ pending: number; done: number; chunks: number }> {
  // Chunks are counted by what waits (two index scans) against the kept total: the cost
  // follows the backlog, not the size of the memory.
  const { rows } = await db.query<{ done: number; pending: number; chunks: number }>(
    `WITH waiting AS (SELECT ${WAITING_CHUNKS_SQL} AS chunks, ${ALL_CHUNKS_SQL} AS total)
       SELECT w.total - w.chunks
            + (SELECT count(*) FROM memories
               WHERE status = 'active' AND vector IS NOT NULL AND embed_model = $1::text) AS done,
              w.chunks
            + ${WAITING_MEMORIES_SQL} AS pending,
              w.chunks
       FROM waiting w`,
    [model],
  )
  return { pending: Number(rows[0]?.pending ?? 0), done: Number(rows[0]?.done ?? 0), chunks: Number(rows[0]?.chunks ?? 0) }
}
