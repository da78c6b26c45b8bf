import type { Params } from '../db/params.ts'
import { indexedVector, vectorScanSettings } from '../db/vectors.ts'
import type { Db, Queryable } from '../kernel/db.ts'
import { toVectorParam } from '../kernel/embedder.ts'
import { DEFAULT_SCORING, Z_WINDOW, zFused, zListStats, zOf } from '../kernel/scoring.ts'
import type { MemoryFusion, MemoryHit } from './records.ts'
import { COLUMNS, type MemoryRow, toRecord } from './rows.ts'

/** Memories rank with search's default constants: rrfK, zShift, BM25's k1 and b. */
const { rrfK: RRF_K, zShift: Z_SHIFT, bm25K1: BM25_K1, bm25B: BM25_B } = DEFAULT_SCORING

/** What `rankMemories` ranks, by what, and how many. */
export interface RankArgs {
  /** The selection, over columns of `memories` aliased `m`. */
  where: string
  /**
   * Whether `where` names only columns `memory_stats` groups by (no filter expression): the
   * pool's size and mean length are then summed from those groups, not counted row by row.
   */
  grouped: boolean
  /**
   * Memories that have not expired: a condition on the hits, not on the pool BM25 counts
   * (`memory_stats` keeps no expiry), so expired memories weigh in the keyword statistics
   * until they are deleted.
   */
  live: string
  text: string
  vector: { value: Float32Array; model: string } | null
  limit: number
  minSimilarity: number
  fusion: MemoryFusion
  /** When set, the hits' use counters are bumped in the same statement. */
  touchAt: Date | null
  /**
   * The memories as they were at a time: a CTE named `past`, with the columns of `memories`,
   * ranked in their place (`pastMemories`, read in the ranking's transaction). Nothing is
   * touched then.
   */
  past?: (q: Queryable) => Promise<string>
}

/**
 * Hybrid retrieval in one statement: cosine similarity and BM25 (any query word matches), each
 * list's best `candidates`, fused (`MemoryScores.fused`), ties by id. The z's are taken over
 * each list's best `Z_WINDOW`, whatever the limit, so a larger limit only adds hits below the
 * ones a smaller one gives. It runs in a transaction of its own whose filtered HNSW scans go
 * on until they have the candidates (`vectorScanSettings`).
 */
export async function rankMemories(db: Db, p: Params, a: RankArgs): Promise<MemoryHit[]> {
  const candidateCount = Math.min(Math.max(a.limit * 5, Z_WINDOW), 1000)
  return db.transaction(async (q) => {
    if (a.vector) await q.exec(vectorScanSettings(candidateCount))
    const past = a.past ? await a.past(q) : undefined
    return rankStatement(q, p, { ...a, candidates: candidateCount, past })
  })
}

/** `RankArgs` as the statement takes them: the candidates per list, and `past` already read. */
type StatementArgs = Omit<RankArgs, 'past'> & { candidates: number; past: string | undefined }

/** The ranking's one statement; with `touchAt`, it also counts each hit as a use. */
async function rankStatement(q: Queryable, p: Params, a: StatementArgs): Promise<MemoryHit[]> {
  const table = a.past === undefined ? 'memories' : 'past'
  const candidates = p.add(a.candidates)
  const textParam = p.add(a.text)
  const vec = vectorList(p, a, table, candidates)
  const limit = p.add(a.limit)
  const { fused, stats } = fusion(p, a)
  const source = a.touchAt && a.past === undefined
    ? `(UPDATE memories u SET use_count = u.use_count + 1, last_used_at = ${p.add(a.touchAt)}
        FROM fused f WHERE u.id = f.id RETURNING u.*)`
    : table
  const { rows } = await q.query<
    MemoryRow & { similarity: number | null; krank: number | null; fused: number }
  >(
    `WITH ${a.past === undefined ? '' : `${a.past},`} vec AS MATERIALIZED (${vec}),
     kwq AS (
       SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | ' ORDER BY lexeme)::tsquery AS q,
              coalesce(array_agg(lexeme), '{}') AS lexemes
       FROM unnest(to_tsvector('english', ${textParam}))
     ),
     -- BM25 over the memories the call may see: those holding any query word (found through
     -- the GIN index), each query word's count in them (marked with weight A and filtered out
     -- of the tsvector), its document frequency among them, and the pool's size and mean length.
     kw_tf AS MATERIALIZED (
       SELECT m.id, greatest(length(m.tsv), 1)::float8 AS dl, u.lexeme,
              coalesce(array_length(u.positions, 1), 1)::float8 AS tf
       FROM ${table} m, kwq
       CROSS JOIN LATERAL unnest(ts_filter(setweight(m.tsv, 'A', kwq.lexemes), '{a}')) u
       WHERE m.tsv @@ kwq.q AND ${a.where} AND ${a.live}
     ),
     corpus AS (${
       a.grouped && a.past === undefined
         ? `SELECT coalesce(sum(m.memories), 0)::float8 AS n,
                   coalesce(sum(m.lexemes)::float8 / nullif(sum(m.memories), 0), 1)::float8 AS avgdl
            FROM memory_stats m WHERE ${a.where}`
         : `SELECT count(*)::float8 AS n, coalesce(avg(greatest(length(m.tsv), 1)), 1)::float8 AS avgdl
            FROM ${table} m WHERE ${a.where}`
     }),
     kw AS MATERIALIZED (
       SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rnk
       FROM (SELECT t.id,
                    sum(ln(1 + (c.n - d.df + 0.5) / (d.df + 0.5)) * t.tf * (${BM25_K1} + 1)
                        / (t.tf + ${BM25_K1} * (1 - ${BM25_B} + ${BM25_B} * t.dl / c.avgdl)))::float8 AS score
             FROM kw_tf t
             JOIN (SELECT lexeme, count(*)::float8 AS df FROM kw_tf GROUP BY lexeme) d ON d.lexeme = t.lexeme
             CROSS JOIN corpus c
             GROUP BY t.id) s
       ORDER BY rnk LIMIT ${candidates}
     ),
     ${stats.cte}
     fused AS (
       SELECT coalesce(vec.id, kw.id) AS id, vec.score AS similarity, kw.score AS krank, (${fused})::float8 AS fused
       FROM vec FULL JOIN kw ON kw.id = vec.id
       ${stats.join}
       ORDER BY fused DESC, id
       LIMIT ${limit}
     ),
     hit AS ${source === table ? `(SELECT * FROM ${table})` : source}
     SELECT ${COLUMNS}, f.similarity, f.krank, f.fused::float8 AS fused
     FROM fused f JOIN hit m ON m.id = f.id
     ORDER BY f.fused DESC, m.id`,
    p.values,
  )
  return rows.map((r) => ({
    ...toRecord(r),
    scores: { fused: r.fused, vector: r.similarity, keyword: r.krank },
  }))
}

/**
 * The nearest memories by the expression and predicate of the HNSW index for this length
 * (ensureVectorIndex), which the planner walks when that beats reading the pool; then those
 * above minSimilarity, ranked by similarity and id. No rows without a query vector.
 */
function vectorList(p: Params, a: StatementArgs, table: string, candidates: string): string {
  if (!a.vector) return 'SELECT NULL::text AS id, NULL::float8 AS score, NULL::bigint AS rnk WHERE false'
  const indexed = indexedVector('m.vector', a.vector.value.length)
  const distance = indexed.distanceTo(p.add(toVectorParam(a.vector.value)))
  return `SELECT id, similarity AS score, row_number() OVER (ORDER BY similarity DESC, id) AS rnk
       FROM (
         SELECT m.id, 1 - (${distance}) AS similarity
         FROM ${table} m
         WHERE ${a.where} AND ${a.live} AND ${indexed.predicate} AND m.embed_model = ${p.add(a.vector.model)}
         ORDER BY ${distance}
         LIMIT ${candidates}
       ) scored
       WHERE similarity > ${p.add(a.minSimilarity)}`
}

/** The fused score's expression, and the list statistics it needs (a CTE and its join). */
function fusion(p: Params, a: StatementArgs): { fused: string; stats: { cte: string; join: string } } {
  // Without a query vector only the keyword list counts. Reciprocal rank needs no list statistics.
  const rrf = a.fusion === 'rrf'
  const fused = rrf
    ? `coalesce(1.0 / (${RRF_K} + vec.rnk), 0) + coalesce(1.0 / (${RRF_K} + kw.rnk), 0)`
    : zFused(`(${zOf('vec.score', 'vs')} + ${zOf('kw.score', 'ks')}) / ${a.vector ? 2 : 1}`, String(Z_SHIFT))
  // Each list's mean and spread over its best Z_WINDOW, and its floor (zListStats).
  const stats = rrf
    ? { cte: '', join: '' }
    : {
        cte: `stats AS (${zListStats([{ list: 'k', from: 'kw' }, { list: 'v', from: 'vec' }], p.add(Z_WINDOW))}),`,
        join: `LEFT JOIN stats ks ON ks.list = 'k' LEFT JOIN stats vs ON vs.list = 'v'`,
      }
  return { fused, stats }
}
