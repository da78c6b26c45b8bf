import type { Db, Queryable } from '../kernel/db.ts'
import { MemoryError } from '../kernel/errors.ts'

/** The tables with an HNSW index per vector length, and their vector column. */
const VECTOR_COLUMNS = { chunks: 'embedding', memories: 'vector' } as const
export type VectorTable = keyof typeof VECTOR_COLUMNS

/** The name of the HNSW index over a table's vectors of `dims` dimensions. */
function hnswIndexName(table: VectorTable, dims: number): string {
  return `${table}_${VECTOR_COLUMNS[table]}_hnsw_${dims}`
}

function checkDims(dims: number): number {
  if (!Number.isInteger(dims) || dims < 1 || dims > 2000) {
    throw new MemoryError('INVALID_INPUT', `An HNSW index takes 1 to 2000 dimensions; the embedder has ${dims}`)
  }
  return dims
}

/**
 * Creates (once) the HNSW indexes search and memory recall use for vectors of the embedder's
 * length, on chunks and on memories. The vector columns have no fixed length, so each index is
 * over `column::vector(dims)` for the rows of that length; the searches order by the same
 * expression under the same predicate.
 */
export async function ensureVectorIndex(db: Queryable, dims: number): Promise<void> {
  for (const [table, column] of Object.entries(VECTOR_COLUMNS) as [VectorTable, string][]) {
    const indexed = indexedVector(column, dims)
    await db.exec(
      `CREATE INDEX IF NOT EXISTS ${hnswIndexName(table, dims)} ON ${table}
         USING hnsw (${indexed.expression} vector_cosine_ops)
         WHERE ${indexed.predicate}`,
    )
  }
}

/**
 * The expression and predicate the HNSW index over `column` (a vector column, qualified as
 * the query names it) has for vectors of `dims`, and the cosine distance from that expression
 * to `query` (a vector parameter): a query orders by `distanceTo` under `predicate` for the
 * planner to walk the index.
 */
export function indexedVector(column: string, dims: number) {
  const d = checkDims(dims)
  const expression = `(${column}::vector(${d}))`
  return {
    expression,
    predicate: `vector_dims(${column}) = ${d}`,
    distanceTo: (query: string) => `${expression} <=> ${query}::vector(${d})`,
  }
}

/**
 * The settings of a transaction whose filtered nearest-neighbour scans must return
 * `candidates` rows: a filtered HNSW scan stops at `ef_search` rows unless it may keep
 * scanning (`iterative_scan`), up to `max_scan_tuples`.
 */
export function vectorScanSettings(candidates: number): string {
  return `SET LOCAL hnsw.iterative_scan = relaxed_order;
    SET LOCAL hnsw.ef_search = ${Math.min(1000, Math.max(100, Math.trunc(candidates)))};
    SET LOCAL hnsw.max_scan_tuples = 100000`
}

/**
 * Vectors written in one go from which the HNSW index is dropped and built again afterwards.
 * A build beats inserting the same vectors one by one from a few hundred vectors on, and the
 * gap grows with size (docs/BENCHMARKS.md, "Bulk vector index builds").
 */
export const BULK_VECTOR_ROWS = 256

/**
 * Whether writing `incoming` vectors into chunks that already hold `indexed` of them should
 * drop the HNSW index and build it afterwards: many vectors, and no fewer than are indexed.
 */
export function bulkWorthIt(incoming: number, indexed: number): boolean {
  return incoming >= BULK_VECTOR_ROWS && incoming >= indexed
}

/** Chunks without a vector, counted through `chunks_unembedded`. */
export const MISSING_VECTORS_SQL = `(SELECT count(*) FROM chunks WHERE embedding IS NULL)`

/** Every chunk, from the counts the keyword-statistics triggers keep (no scan). */
export const ALL_CHUNKS_SQL = `(SELECT coalesce(sum(chunks), 0) FROM chunk_stats)`

/** Chunks with a vector (of any model): what their HNSW index holds, for `bulkWorthIt`. */
export const INDEXED_CHUNKS_SQL = `(${ALL_CHUNKS_SQL} - ${MISSING_VECTORS_SQL})`

/** Memories with a vector (of any model): what their HNSW index holds, for `bulkWorthIt`. */
export const INDEXED_MEMORIES_SQL = `(SELECT count(*) FROM memories WHERE vector IS NOT NULL)`

/** Memory an index build may use; the graph of 100,000 384-d vectors fits (the WASM heap is 2 GiB). */
const INDEX_BUILD_MEMORY = '512MB'

/**
 * Drops a table's HNSW indexes (the chunks' unless said) before a bulk vector write and
 * returns their definitions for `buildVectorIndexes`. Meanwhile vector search is exact (a
 * scan), never wrong. An engine opened on a memory whose build never happened creates the
 * index again.
 */
export async function dropVectorIndexes(db: Queryable, table: VectorTable = 'chunks'): Promise<string[]> {
  const { rows } = await db.query<{ name: string; definition: string }>(
    `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
     WHERE schemaname = current_schema() AND tablename = $1 AND indexdef LIKE '% USING hnsw %'
     ORDER BY indexname`,
    [table],
  )
  for (const r of rows) await db.exec(`DROP INDEX IF EXISTS "${r.name.replaceAll('"', '""')}"`)
  return rows.map((r) => r.definition)
}

/**
 * Builds indexes dropped by `dropVectorIndexes`, inside the caller's transaction. A chunks
 * index built anew holds no deleted vectors: their count (`vector_debt`) starts again.
 */
export async function buildVectorIndexes(tx: Queryable, definitions: readonly string[]): Promise<void> {
  if (definitions.length === 0) return
  await tx.exec(`SET LOCAL maintenance_work_mem = '${INDEX_BUILD_MEMORY}'`)
  for (const definition of definitions) {
    await tx.exec(definition.replace(/^CREATE INDEX /, 'CREATE INDEX IF NOT EXISTS '))
  }
  if (definitions.some((d) => / ON (public\.)?chunks /.test(d))) await tx.exec(`UPDATE vector_debt SET chunks = 0`)
}

/** Deleted vectors below which VACUUM repairs the chunks' HNSW index rather than it being built again. */
export const VECTOR_DEBT_MIN = 100

/**
 * Builds the chunks' HNSW index again when at least one indexed vector in a hundred (and at
 * least `VECTOR_DEBT_MIN`) has been deleted since it was built, so that the VACUUM after it
 * has nothing to repair: a repair that reaches nearly every vector takes about 3.5 times as
 * long as the build (docs/indexing-and-embeddings.md, "Deleted vectors"). Returns whether it
 * built.
 */
export async function payVectorDebt(db: Db): Promise<boolean> {
  const { rows } = await db.query<{ debt: number; indexed: number }>(
    `SELECT (SELECT chunks FROM vector_debt)::float8 AS debt, ${INDEXED_CHUNKS_SQL}::float8 AS indexed`,
  )
  const debt = rows[0]?.debt ?? 0
  if (debt < Math.max(VECTOR_DEBT_MIN, (rows[0]?.indexed ?? 0) / 100)) return false
  await db.transaction(async (tx) => {
    const dropped = await dropVectorIndexes(tx)
    if (dropped.length > 0) await buildVectorIndexes(tx, dropped)
    else await tx.exec(`UPDATE vector_debt SET chunks = 0`)
  })
  return true
}

/**
 * True when pgvector is installed. A PostgreSQL server without it gets a stand-in `vector` type
 * that holds none (schema/0001-base.ts): its memory is keyword-only.
 */
export const PGVECTOR_SQL = `EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')`
