import type { Db, Queryable } from '../kernel/db.ts'
import { type Embedder, embedderFailed, type VectorCache } from '../kernel/embedder.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { EVENT_KINDS, type ActorType, type EventKind } from '../log/events.ts'
import { compileFilter, type FilterColumn, filterExpressionSchema } from '../db/filters.ts'
import { edgeVisibleAt } from '../graph/edges.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import { namedPeriod } from './query-dates.ts'
import { CHANNELS, type Channel, identifier } from '../kernel/scope.ts'
import { FUSIONS, resolveScoring, type Scoring, scoringInput, Z_WINDOW, zFused, zListStats, zOf } from '../kernel/scoring.ts'
import { iso, timeInput, toDate } from '../kernel/time.ts'
import { planStatements } from '../db/prepared.ts'
import { Params } from '../db/params.ts'
import { indexedVector, vectorScanSettings } from '../db/vectors.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { KEYWORD_PENDING_BOUND } from '../db/schema/0009-keyword-pending.ts'

export const SEARCH_MODES = ['hybrid', 'keyword', 'vector'] as const
export type SearchMode = (typeof SEARCH_MODES)[number]

/** The most hits one search returns. */
export const MAX_SEARCH_LIMIT = 200
/** The most chunks a search ranks from each of its two lists. */
export const MAX_CANDIDATES = 2000
/**
 * The fewest chunks the vector list takes from the HNSW scan (`nearestFor`): fewer than the
 * keyword list's 200. The scan's time grows with its depth, and LoCoMo recall@10 is the same
 * at 150 as at 200 (bench/HISTORY.md, "The vector list's depth").
 */
export const MIN_NEAREST = 150
/**
 * The fewest events a search rescores by recency, importance, familiarity and staleness
 * (`rescoredFor`): the fused ranking's best, three times the hits asked for and never fewer
 * than this. Rescoring reads each one's documents and the conversations that touched them.
 */
export const MIN_RESCORED = 30
/** The most events a search rescores: three times the most hits it returns. */
export const MAX_RESCORED = 3 * MAX_SEARCH_LIMIT
/** The most query terms the keyword list looks up (the rarest are kept). */
export const MAX_QUERY_TERMS = 24

export const searchOptions = z
  .object({
    limit: z.number().int().min(1).max(MAX_SEARCH_LIMIT).default(10),
    scope: z
      .object({
        tenantId: identifier.default('default'),
        userId: identifier.optional(),
        agentId: identifier.optional(),
        conversationId: identifier.optional(),
      })
      .strict()
      .default({ tenantId: 'default' }),
    kinds: z.array(z.enum(EVENT_KINDS)).min(1).optional(),
    channel: z.enum(CHANNELS).default('private'),
    since: timeInput.optional(),
    until: timeInput.optional(),
    asOf: timeInput.optional(),
    filters: z.unknown().optional(),
    excludeConversation: identifier.optional(),
    mode: z.enum(SEARCH_MODES).default('hybrid'),
    fusion: z.enum(FUSIONS).optional(),
    weights: scoringInput.optional(),
  })
  .strict()

/**
 * Options of `search`. `channel` is the reader's: only sensitivities allowed on it are
 * returned. `filters` are filter expressions over the event's columns (`kind`, `actor_id`,
 * `turn_index`, …) and `meta.*`, `content.*`, `tags`.
 */
export type SearchOptions = z.input<typeof searchOptions>

/** Why a hit was found, part by part. */
export interface SearchExplain {
  /**
   * Its place in the vector ranking, its score there (its own best chunk's cosine similarity
   * with the share from its neighbours), that score standardised (`z`, see `Scoring.fusion`),
   * and its own chunk's cosine distance; null when vectors were not used or did not find it.
   */
  vector: { rank: number; score: number; z: number; distance: number | null; similarity: number | null } | null
  /** Its place in the keyword ranking, its BM25 score (with the share from its neighbours) and that score standardised. */
  keyword: { rank: number; score: number; z: number } | null
  /** The fused search score (see `Scoring.fusion`), times 1 + `actorMatch` when `actorNamed` and 1 + `dateMatch` when `dateNamed`. */
  fused: number
  /** Whether the query names the hit's actor ("what did Ann say"). */
  actorNamed: boolean
  /** Whether the hit is from the period the query's dates name ("on 3 June 2023", "in May 2023"), a day either side. */
  dateNamed: boolean
  recency: number
  staleness: number
  familiarity: number
  importance: number
  final: number
}

export interface SearchHit {
  chunkId: string
  eventId: string
  kind: EventKind
  conversationId: string
  turnIndex: number | null
  actor: { type: ActorType; id: string }
  text: string
  createdAt: string
  score: number
  explain: SearchExplain
}

/** Columns a search filter may name; every other field is looked up in meta, content or tags. */
export const EVENT_FILTER_COLUMNS: Record<string, FilterColumn> = Object.fromEntries(
  (
    [
      ['id', 'e.id', 'text'],
      ['kind', 'e.kind', 'text'],
      ['tenant_id', 'e.tenant_id', 'text'],
      ['user_id', 'e.user_id', 'text'],
      ['agent_id', 'e.agent_id', 'text'],
      ['conversation_id', 'e.conversation_id', 'text'],
      ['run_id', 'e.run_id', 'text'],
      ['turn_index', 'e.turn_index', 'number'],
      ['channel', 'e.channel', 'text'],
      ['actor_type', 'e.actor_type', 'text'],
      ['actor_id', 'e.actor_id', 'text'],
      ['sensitivity', 'e.sensitivity', 'text'],
      ['created_at', 'e.created_at', 'timestamp'],
    ] as const
  ).flatMap(([name, sql, type]) => {
    const column = { sql, type }
    const camel = name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
    return camel === name ? [[name, column]] : [[name, column], [camel, column]]
  }),
)

const FILTER_JSON = `jsonb_build_object('meta', e.meta, 'content', e.content, 'tags', to_jsonb(e.tags))`


interface HitRow {
  event_id: string
  chunk_id: string
  kind: EventKind
  conversation_id: string
  turn_index: number | null
  actor_type: ActorType
  actor_id: string
  text: string
  created_at: Date | string
  k_rank: number | string | null
  k_score: number | null
  k_z: number | null
  v_rank: number | string | null
  v_score: number | null
  v_z: number | null
  v_distance: number | null
  fused: number
  named: boolean
  dated: boolean
  recency: number
  staleness: number
  familiarity: number
  importance: number
  final: number
  pool_size: number | string
}

/** The keyword statistics a search ranks with (read in the search's transaction). */
export interface KeywordStats {
  /**
   * The query's terms found in the pool, rarest first, with their document frequencies and
   * their weight in BM25 (1, or `actorNameTerm` for a word that is an actor's id).
   */
  terms: KeywordTerm[]
  /** Chunks in the tenant at the sensitivities the reader may see. */
  chunks: number
  /** Their average number of distinct terms. */
  avgLength: number
  /** Chunks in the tenant at every sensitivity: what a walk of its chunks by time reads at most. */
  tenantChunks: number
}

/** A term of the query in the keyword statistics. */
export interface KeywordTerm {
  lexeme: string
  /** Chunks of the tenant at the sensitivities the reader may see that hold it. */
  df: number
  /**
   * Chunks of the whole memory that hold it, which is what the GIN index finds for it (every
   * tenant and sensitivity): `df` scaled by the memory's chunks over the reader's pool.
   */
  rows: number
  /** Its weight in BM25. */
  weight: number
}

export interface SearchPlan {
  text: string
  /** Filled by `runSearch` before the statement is built; absent → no keyword list. */
  keyword?: KeywordStats
  options: z.output<typeof searchOptions>
  scoring: Scoring
  vector: { value: Float32Array; model: string; dims: number } | null
  now: Date
  /** Candidates ranked from each list (capped at MAX_CANDIDATES). */
  candidates: number
  /** Chunks the vector list takes from the HNSW scan (`nearestFor`), at most `candidates`. */
  nearest: number
  /**
   * The query's words that are the whole id of a person or agent (lowercased), looked up once
   * by `planSearch` for the text embedded and the keyword terms.
   */
  actorWords: string[]
  /**
   * The ids of the tenant's actors that the query names (a word of the query is a word of the
   * actor's id: `actor_terms`, schema/0010-actor-terms.ts), looked up once by `planSearch`.
   */
  namedActors: string[]
}

/**
 * Builds the one statement that ranks: the reader's pool (tenant, scope, channel, kinds, time,
 * filters, excluded conversation), BM25 over the chunks' tsvectors, HNSW nearest neighbours,
 * each spread to neighbouring events, fused, then rescored by recency, importance,
 * familiarity and staleness.
 */
export function searchStatement(plan: SearchPlan): { sql: string; params: unknown[] } {
  const { options: o, scoring: s } = plan
  const p = new Params()
  const tenant = p.add(o.scope.tenantId)
  const asOf = p.add(o.asOf === undefined ? null : toDate(o.asOf))
  const filter =
    o.filters === undefined
      ? 'true'
      : (() => {
          const f = compileFilter(o.filters, {
            columns: EVENT_FILTER_COLUMNS,
            jsonColumn: FILTER_JSON,
            paramOffset: p.values.length,
          })
          p.values.push(...f.params)
          return f.sql
        })()
  const pred = `c.tenant_id = ${tenant}
      AND (${p.add(o.scope.userId ?? null)}::text IS NULL OR c.user_id = ${`$${p.values.length}`})
      AND (${p.add(o.scope.agentId ?? null)}::text IS NULL OR c.agent_id = ${`$${p.values.length}`})
      AND (${p.add(o.scope.conversationId ?? null)}::text IS NULL OR c.conversation_id = ${`$${p.values.length}`})
      AND (${p.add(o.excludeConversation ?? null)}::text IS NULL OR c.conversation_id <> ${`$${p.values.length}`})
      AND c.sensitivity = ANY(${p.add(allowedSensitivities(o.channel))}::text[])
      AND (${p.add(o.kinds ?? null)}::text[] IS NULL OR c.kind = ANY(${`$${p.values.length}`}::text[]))
      AND (${p.add(o.since === undefined ? null : toDate(o.since))}::timestamptz IS NULL OR c.created_at >= ${`$${p.values.length}`})
      AND (${p.add(o.until === undefined ? null : toDate(o.until))}::timestamptz IS NULL OR c.created_at <= ${`$${p.values.length}`})
      AND (${asOf}::timestamptz IS NULL OR c.created_at <= ${asOf})
      AND ${filter}`

  // The filter DSL reads the event's meta, content and tags; without it chunks suffice.
  const from = o.filters === undefined ? 'chunks c' : 'chunks c JOIN events e ON e.id = c.source_id'
  const keywordOn = o.mode !== 'vector'
  const vectorOn = o.mode !== 'keyword' && plan.vector !== null
  const candidates = `${p.add(plan.candidates)}::int`
  const neighbour = `${p.add(s.neighbour)}::float8`
  const depth = `${p.add(s.neighbourDepth)}::int`
  const reach = `${p.add(s.neighbourReach)}::int`

  // Spreads a per-event score to the `neighbourReach` events before and after it in its
  // conversation (by time, then insertion order), `neighbour` to the power of the step. Each
  // neighbour comes with the columns the filters read (a chunk holds its event's scope, kind,
  // sensitivity and time), so `spread` keeps those the reader may see without a look-up.
  const nbColumns =
    o.filters === undefined
      ? 'x.id, x.tenant_id, x.user_id, x.agent_id, x.conversation_id, x.sensitivity, x.kind, x.created_at'
      : 'x.*'
  const neighbours = (name: string, from: string) => `${name} AS MATERIALIZED (
      SELECT nb.*, power(${neighbour}, nb.step) * f.score AS score
      FROM (SELECT * FROM ${from} ORDER BY score DESC, event_id LIMIT ${depth}) f
      CROSS JOIN LATERAL (
        SELECT e0.tenant_id, e0.conversation_id, e0.created_at, e0.seq FROM events e0 WHERE e0.id = f.event_id OFFSET 0
      ) e0
      CROSS JOIN LATERAL (
        (SELECT ${nbColumns}, row_number() OVER (ORDER BY x.created_at DESC, x.seq DESC) AS step FROM events x
         WHERE x.tenant_id = e0.tenant_id AND x.conversation_id = e0.conversation_id
           AND (x.created_at, x.seq) < (e0.created_at, e0.seq)
         ORDER BY x.created_at DESC, x.seq DESC LIMIT ${reach})
        UNION ALL
        (SELECT ${nbColumns}, row_number() OVER (ORDER BY x.created_at, x.seq) AS step FROM events x
         WHERE x.tenant_id = e0.tenant_id AND x.conversation_id = e0.conversation_id
           AND (x.created_at, x.seq) > (e0.created_at, e0.seq)
         ORDER BY x.created_at, x.seq LIMIT ${reach})
      ) nb
      WHERE ${neighbour} > 0
    )`
  // A neighbour counts when it passes the filters, read from its own row (named `c` as a
  // chunk is, and `e` as well for the filter DSL). One without a chunk is never a hit (`best`).
  const spread = (list: string, nbs: string) => `
      SELECT event_id, score FROM ${list}
      UNION ALL
      SELECT c.id, c.score
      FROM ${nbs} c
      ${o.filters === undefined ? '' : 'CROSS JOIN LATERAL (SELECT c.*) e'}
      WHERE ${pred}`

  const keyword = keywordOn ? keywordCtes(plan, p, pred, from, candidates, neighbours, spread) : `kw_event AS (SELECT NULL::text AS event_id, NULL::text AS chunk_id, NULL::float8 AS score WHERE false),
    kw_ranked AS (SELECT NULL::text AS event_id, NULL::float8 AS score, NULL::bigint AS rnk WHERE false)`

  let vector = `vec_event AS (SELECT NULL::text AS event_id, NULL::text AS chunk_id, NULL::float8 AS dist WHERE false),
    vec_ranked AS (SELECT NULL::text AS event_id, NULL::float8 AS score, NULL::bigint AS rnk WHERE false)`
  let ownDistance = 'NULL::float8'
  if (vectorOn && plan.vector) {
    const v = p.add(`[${Array.from(plan.vector.value).join(',')}]`)
    const chunk = indexedVector('c.embedding', plan.vector.dims)
    const own = indexedVector('ch.embedding', plan.vector.dims)
    const model = p.add(plan.vector.model)
    const nearest = `${p.add(plan.nearest)}::int`
    vector = `vec_knn AS MATERIALIZED (
      SELECT c.id, c.source_id, ${chunk.distanceTo(v)} AS dist
      FROM ${from}
      WHERE ${chunk.predicate} AND c.embed_model = ${model} AND ${pred}
      ORDER BY ${chunk.distanceTo(v)}
      LIMIT ${nearest}
    ), vec_event AS MATERIALIZED (
      SELECT DISTINCT ON (source_id) source_id AS event_id, id AS chunk_id, dist, 1 - dist AS score
      FROM vec_knn ORDER BY source_id, dist, id
    ), ${neighbours('vec_nb', 'vec_event')}, vec_ranked AS (
      SELECT event_id, sum(score)::float8 AS score, row_number() OVER (ORDER BY sum(score) DESC, event_id) AS rnk
      FROM (${spread('vec_event', 'vec_nb')}) x
      GROUP BY event_id
      ORDER BY rnk LIMIT ${candidates}
    )`
    ownDistance = `CASE WHEN ch.embed_model = ${model} AND ${own.predicate} THEN ${own.distanceTo(v)} END`
  }

  const rrfK = `${p.add(s.rrfK)}::float8`
  const period = namedPeriod(plan.text, plan.now)
  const periodFrom = p.add(period?.from ?? null)
  const periodTo = p.add(period?.to ?? null)
  const named = `${p.add(plan.namedActors)}::text[]`
  // With no actor and no period named (or their bonuses weighed 0), the bonuses are left out
  // of the statement: no fused score would change. Each hit still says what it names.
  const bonuses = (plan.namedActors.length > 0 && s.actorMatch !== 0) || (period !== null && s.dateMatch !== 0)
  // A listed event's actor and time, for the bonuses, and the columns the hits need later.
  const lookUp = (list: string) => `
        SELECT e.actor_id = ANY(${named}) AS named,
               coalesce(e.created_at >= ${periodFrom}::timestamptz AND e.created_at < ${periodTo}::timestamptz, false) AS dated,
               e.kind, e.created_at, e.conversation_id, e.turn_index, e.actor_type, e.actor_id
        FROM events e WHERE e.id = ${list}.event_id OFFSET 0
      `
  const wv = `${p.add(vectorOn ? s.vector : 0)}::float8`
  const wk = `${p.add(keywordOn ? s.keyword : 0)}::float8`
  const fusion = `${p.add(o.fusion ?? s.fusion)}::text`
  const zShift = `${p.add(s.zShift)}::float8`
  const zWindow = `${p.add(Z_WINDOW)}::int`
  const now = p.add(plan.now)
  const halfLife = `${p.add(s.recencyHalfLifeDays * 86_400)}::float8`
  const importance = p.add(JSON.stringify(s.importanceByKind))
  const famScale = `${p.add(s.familiarityScale)}::float8`
  const top = `${p.add(rescoredFor(o.limit))}::int`
  const limit = `${p.add(o.limit)}::int`
  const weights = {
    search: `${p.add(s.search)}::float8`,
    recency: `${p.add(s.recency)}::float8`,
    importance: `${p.add(s.importance)}::float8`,
    familiarity: `${p.add(s.familiarity)}::float8`,
    staleness: `${p.add(s.staleness)}::float8`,
  }

  // The lists' events with their bonuses, and the best `top` of them with their events' columns.
  const fusedAndTop = bonuses
    ? `fused AS (
      -- An event whose actor the query names ("what did Ann say") gets actorMatch more, one
      -- from the period its dates name ("on 3 June 2023") dateMatch more. Each event is looked
      -- up by key behind OFFSET 0 (joined freely, the planner hashes every event), once: the
      -- columns the hits need later come along.
      SELECT l.event_id, l.k_rank, l.k_score, l.k_z, l.v_rank, l.v_score, l.v_z, a.named, a.dated, a.kind, a.created_at,
             a.conversation_id, a.turn_index, a.actor_type, a.actor_id,
             (l.fused * (1 + CASE WHEN a.named THEN ${p.add(s.actorMatch)}::float8 ELSE 0 END)
                      * (1 + CASE WHEN a.dated THEN ${p.add(s.dateMatch)}::float8 ELSE 0 END))::float8 AS fused
      FROM lists l
      CROSS JOIN LATERAL (${lookUp('l')}) a
    ), top AS (
      SELECT * FROM fused ORDER BY fused DESC, event_id LIMIT ${top}
`
    : `fused AS (
      -- No event gets actorMatch or dateMatch (the query names no actor and no period, or
      -- they weigh 0): the fused order is final here, and only the events that can be hits
      -- are looked up.
      SELECT l.event_id, l.k_rank, l.k_score, l.k_z, l.v_rank, l.v_score, l.v_z, l.fused FROM lists l
    ), top AS (
      SELECT f.*, a.*
      FROM (SELECT * FROM fused ORDER BY fused DESC, event_id LIMIT ${top}) f
      CROSS JOIN LATERAL (${lookUp('f')}) a
`

  const sql = `WITH ${keyword},
    ${vector},
    list_stats AS (
      -- Each list's mean and spread over its best zWindow events, and its floor (zListStats).
      ${zListStats([{ list: 'k', from: 'kw_ranked' }, { list: 'v', from: 'vec_ranked' }], zWindow)}
    ), zs AS (
      SELECT coalesce(k.event_id, v.event_id) AS event_id, k.rnk AS k_rank, k.score AS k_score, v.rnk AS v_rank,
             v.score AS v_score, ${zOf('k.score', 'ks')}::float8 AS k_z, ${zOf('v.score', 'vs')}::float8 AS v_z
      FROM kw_ranked k FULL JOIN vec_ranked v ON v.event_id = k.event_id
      LEFT JOIN list_stats ks ON ks.list = 'k'
      LEFT JOIN list_stats vs ON vs.list = 'v'
    ), lists AS (
      SELECT z.*,
             CASE ${fusion}
               WHEN 'zscore'
               THEN ${zFused(`(${wv} * z.v_z + ${wk} * z.k_z) / greatest(${wv} + ${wk}, 1e-9)`, zShift)}
               WHEN 'rrf'
               THEN (${wv} * coalesce(1.0 / (${rrfK} + z.v_rank), 0) + ${wk} * coalesce(1.0 / (${rrfK} + z.k_rank), 0))
                    * (${rrfK} + 1) / greatest(${wv} + ${wk}, 1e-9)
               ELSE (${wv} * coalesce(z.v_score / nullif(max(z.v_score) OVER (), 0), 0)
                     + ${wk} * coalesce(z.k_score / nullif(max(z.k_score) OVER (), 0), 0)) / greatest(${wv} + ${wk}, 1e-9)
             END::float8 AS fused
      FROM zs z
    ), ${fusedAndTop}    ), seen AS (
      -- The documents that each event's edges reach, or those of the event its MESSAGE edge
      -- leads to (a question's reply): one join for all, not a subquery per event.
      SELECT t.event_id, array_agg(DISTINCT dv.document_id) AS docs, max(lv.latest - dv.version) AS versions_since
      FROM (
        SELECT t.event_id, t.event_id AS src FROM top t
        UNION ALL
        SELECT t.event_id, m.dst FROM top t
        JOIN edges m ON m.src = t.event_id AND m.rel = (SELECT id FROM relations WHERE name = 'MESSAGE')
      ) t
      JOIN edges ed ON ed.src = t.src
      JOIN doc_versions dv ON dv.id = ed.dst
      CROSS JOIN LATERAL (
        SELECT max(version) AS latest FROM doc_versions
        WHERE document_id = dv.document_id AND (${asOf}::timestamptz IS NULL OR created_at <= ${asOf})
      ) lv
      WHERE ed.tenant_id = ${tenant} AND ${edgeVisibleAt(asOf, 'ed')}
      GROUP BY t.event_id
    ), doc_conversations AS MATERIALIZED (
      -- Per document, once: the conversations whose edges reach any of its versions (one
      -- index range per document, edges_document) or that wrote one of them. At most familiarityScale of them: a hit
      -- whose documents were touched in that many conversations has the full bonus whichever
      -- they are, and one whose documents were touched in fewer has every one counted.
      SELECT d.document_id, x.conversations
      FROM (SELECT DISTINCT unnest(docs) AS document_id FROM seen) d
      CROSS JOIN LATERAL (
        SELECT array_agg(c.conversation_id) AS conversations FROM (
          SELECT DISTINCT t.conversation_id FROM (
            SELECT x.conversation_id FROM edges x
            WHERE x.document_id = d.document_id AND x.conversation_id IS NOT NULL AND ${edgeVisibleAt(asOf, 'x')}
            UNION ALL
            -- A conversation that observed a new version without an event to link it from
            -- (doc_versions_observed holds those versions alone; the others have edges).
            SELECT v.conversation_id FROM doc_versions v
            WHERE v.document_id = d.document_id AND v.event_id IS NULL AND v.conversation_id IS NOT NULL
              AND (${asOf}::timestamptz IS NULL OR v.created_at <= ${asOf})
          ) t
          LIMIT ceil(${famScale})::bigint
        ) c
      ) x
    ), familiar AS (
      -- One join for all hits (a subquery per hit scanned every document's row again).
      SELECT s.event_id, count(DISTINCT c.conversation_id) AS n
      FROM seen s
      CROSS JOIN LATERAL unnest(s.docs) AS d(document_id)
      JOIN doc_conversations dc ON dc.document_id = d.document_id
      CROSS JOIN LATERAL unnest(dc.conversations) AS c(conversation_id)
      GROUP BY s.event_id
    ), scored AS (
      SELECT t.event_id, t.k_rank, t.k_score, t.k_z, t.v_rank, t.v_score, t.v_z, t.fused, t.named, t.dated, t.kind, t.created_at,
             t.conversation_id, t.turn_index, t.actor_type, t.actor_id,
             coalesce(kc.chunk_id, vc.chunk_id,
                      (SELECT id FROM chunks WHERE source_id = t.event_id ORDER BY ord LIMIT 1)) AS chunk_id,
             -- 0 past 1,000 half-lives (0.5^1000 < 1e-301): past about 1,023 power() raises an underflow.
             (CASE WHEN extract(epoch FROM (${now}::timestamptz - t.created_at)) / ${halfLife} > 1000 THEN 0
                   ELSE power(0.5, greatest(extract(epoch FROM (${now}::timestamptz - t.created_at)), 0) / ${halfLife}) END)::float8 AS recency,
             coalesce((${importance}::jsonb ->> t.kind)::float8, 0) AS importance,
             CASE WHEN coalesce(se.versions_since, 0) <= 0 THEN 0
                  ELSE 1 - 1.0 / (1 + se.versions_since) END::float8 AS staleness,
             least(1, ln(1 + coalesce(fa.n, 0)) / ln(1 + ${famScale}))::float8 AS familiarity
      FROM top t
      LEFT JOIN kw_event kc ON kc.event_id = t.event_id
      LEFT JOIN vec_event vc ON vc.event_id = t.event_id
      LEFT JOIN seen se ON se.event_id = t.event_id
      LEFT JOIN familiar fa ON fa.event_id = t.event_id
    ), best AS (
      SELECT s.*,
             (${weights.search} * s.fused + ${weights.recency} * s.recency + ${weights.importance} * s.importance
              + ${weights.familiarity} * s.familiarity - ${weights.staleness} * s.staleness)::float8 AS final
      FROM scored s
      WHERE s.chunk_id IS NOT NULL
      ORDER BY final DESC, s.event_id
      LIMIT ${limit}
    )
    SELECT s.event_id, s.chunk_id, s.kind, s.conversation_id, s.turn_index, s.actor_type, s.actor_id, ch.text,
           s.created_at, s.k_rank, s.k_score, s.k_z, s.v_rank, s.v_score, s.v_z, (${ownDistance})::float8 AS v_distance,
           s.fused, s.named, s.dated, s.recency, s.staleness, s.familiarity, s.importance, (SELECT count(*) FROM fused) AS pool_size,
           s.final
    FROM best s
    -- The hits' chunks by key (OFFSET 0): for a few hundred rows the planner would hash the table.
    CROSS JOIN LATERAL (SELECT * FROM chunks ch WHERE ch.id = s.chunk_id OFFSET 0) ch
    ORDER BY s.final DESC, s.event_id`
  return { sql, params: p.values }
}

/** A lexeme as a tsquery operand: quoted, so no lexeme is read as an operator. */
function tsqueryTerm(lexeme: string): string {
  return `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`
}

/**
 * The keyword list: BM25 over the chunks that hold the query's terms. Candidates are found
 * through the GIN index by the branches of `keywordBranches`, at most `candidates` each (the
 * newest), and each candidate is then scored exactly. A term in at most `candidates` chunks
 * brings in all of them, so small memories and rare terms are ranked exactly. A term in more
 * brings in the chunks that also hold another of the query's terms; its own newest only when
 * every term is in more and it is the rarest, and then only if it is alone or too few chunks
 * hold two of them, because finding those meant reading every chunk that holds it. Document
 * frequencies and the average chunk length come from `term_stats` (with the chunks it has not
 * counted yet) and `chunk_stats` for the sensitivities the reader may see.
 */
function keywordCtes(
  plan: SearchPlan,
  p: Params,
  pred: string,
  from: string,
  candidates: string,
  neighbours: (name: string, from: string) => string,
  spread: (from: string, nbs: string) => string,
): string {
  const stats = plan.keyword ?? { terms: [], chunks: 0, avgLength: 1, tenantChunks: 0 }
  const s = plan.scoring
  const terms = stats.terms.slice(0, MAX_QUERY_TERMS)
  const ranked = `${neighbours('kw_nb', 'kw_event')}, kw_ranked AS (
      SELECT event_id, sum(score)::float8 AS score, row_number() OVER (ORDER BY sum(score) DESC, event_id) AS rnk
      FROM (${spread('kw_event', 'kw_nb')}) x
      GROUP BY event_id
      ORDER BY rnk LIMIT ${candidates}
    )`
  if (terms.length === 0) {
    // No term of the query is in the pool: an empty list, same shape (and parameters) as a full one.
    return `kw_event AS MATERIALIZED (
      SELECT c.source_id AS event_id, c.id AS chunk_id, NULL::float8 AS score FROM ${from} WHERE false AND ${pred}
    ), ${ranked}`
  }
  const branch = ({ queries, most }: KeywordBranch, when?: string) => {
    const matches = queries.map((q) => `c.tsv @@ ${p.add(q)}::tsquery`).join(' OR ')
    const where = `(${matches}) AND ${pred}${when ? ` AND ${when}` : ''}`
    return `(${newestMatches(from, where, candidates, readsEveryMatch(most, plan.candidates, stats.tenantChunks))})`
  }
  const { always, fallback } = keywordBranches(terms, plan.candidates)
  const alwaysRows = always.map((q) => branch(q)).join(' UNION ALL ')
  // The fallback's condition has no reference to its rows: an initplan that gates its scan,
  // which never starts when the other branches found enough.
  const [found, candidateRows] =
    fallback === null
      ? ['', alwaysRows]
      : [
          `kw_found AS MATERIALIZED (SELECT * FROM (${alwaysRows}) c),`,
          `SELECT * FROM kw_found UNION ALL ${branch(fallback, `(SELECT count(DISTINCT id) FROM kw_found) < ${candidates}`)}`,
        ]
  const lexemes = p.add(terms.map((t) => t.lexeme))
  const dfs = p.add(terms.map((t) => t.df))
  const termWeights = p.add(terms.map((t) => t.weight))
  const n = `${p.add(Math.max(stats.chunks, 1))}::float8`
  const avgdl = `${p.add(stats.avgLength > 0 ? stats.avgLength : 1)}::float8`
  const k1 = `${p.add(s.bm25K1)}::float8`
  const b = `${p.add(s.bm25B)}::float8`
  return `kw_terms AS (
      SELECT * FROM unnest(${lexemes}::text[], ${dfs}::float8[], ${termWeights}::float8[]) AS t(lexeme, df, weight)
    ), ${found} kw_chunks AS MATERIALIZED (
      -- Each branch reads its chunks' rows anyway (to filter and order them): they bring
      -- what BM25 needs along instead of each candidate being fetched again by key.
      SELECT DISTINCT ON (c.id) c.id, c.source_id, c.tsv, greatest(length(c.tsv), 1)::float8 AS dl
      FROM (${candidateRows}) c
      ORDER BY c.id
    ), kw_chunk AS (
      SELECT k.id, k.source_id,
             sum(t.weight * ln(1 + (${n} - t.df + 0.5) / (t.df + 0.5)) * tf.tf * (${k1} + 1)
                 / (tf.tf + ${k1} * (1 - ${b} + ${b} * k.dl / ${avgdl}))) AS score
      FROM kw_chunks k
      -- Only the query's lexemes are unnested: they are marked (weight A) and filtered out of the
      -- chunk's tsvector, instead of unnesting every lexeme of every candidate.
      CROSS JOIN LATERAL unnest(ts_filter(setweight(k.tsv, 'A', ${lexemes}::text[]), '{a}')) u
      JOIN kw_terms t ON t.lexeme = u.lexeme
      CROSS JOIN LATERAL (SELECT coalesce(array_length(u.positions, 1), 1)::float8 AS tf) tf
      GROUP BY k.id, k.source_id
    ), kw_event AS MATERIALIZED (
      SELECT DISTINCT ON (k.source_id) k.source_id AS event_id, k.id AS chunk_id, k.score
      FROM kw_chunk k
      ORDER BY k.source_id, k.score DESC, k.id
    ), ${ranked}`
}

/** The most terms in more chunks than a list ranks whose pairs bring candidates (the rarest of them). */
export const MAX_PAIRED_TERMS = 8

/** A branch of the keyword candidates: its tsqueries, and the most chunks of the memory they can match. */
export interface KeywordBranch {
  /** A chunk is the branch's when it matches any of them. */
  queries: string[]
  /** An upper bound from its terms' `rows`: what a bitmap scan of the GIN index reads at most. */
  most: number
}

/** The tsqueries of the keyword candidates' branches (`keywordBranches`). */
export interface KeywordBranches {
  /** Each brings its newest `candidates` chunks. */
  always: KeywordBranch[]
  /** Brings its newest `candidates` chunks only when `always` brought fewer than that. */
  fallback: KeywordBranch | null
}

/**
 * The tsqueries whose chunks are the keyword candidates, each branch keeping its newest
 * `candidates`, for `terms` sorted rarest first. A term is common when more than `candidates`
 * chunks hold it.
 *
 * - Each term that is not common brings all its chunks.
 * - The common ones (the rarest `MAX_PAIRED_TERMS` of them) bring, in one branch, the chunks
 *   that hold two of them or more: an OR of every pair. When every term is common, so do all
 *   the terms together.
 * - When every term is common, the rarest brings its own newest chunks: always when it is the
 *   only one, otherwise as the fallback, when fewer chunks than `candidates` hold two of them.
 *
 * A chunk that holds a single common term of the query, and no other, is a weak match for
 * BM25. Finding the newest of those cost a read of every chunk that holds the term (a GIN
 * bitmap has no order): thousands of rows in a large memory. A chunk that holds every term
 * holds a rare one, or two common ones, so no branch of its own is needed unless all are
 * common.
 *
 * Each branch says how many chunks of the memory it can match at most: a term, its own `rows`;
 * the pairs, the sum of the terms' other than the most common (a chunk that holds two of them
 * holds one of those); all the terms together, the rarest's.
 */
export function keywordBranches(terms: readonly Omit<KeywordTerm, 'weight'>[], candidates: number): KeywordBranches {
  if (terms.length === 0) return { always: [], fallback: null }
  const one = (t: Omit<KeywordTerm, 'weight'>): KeywordBranch => ({ queries: [tsqueryTerm(t.lexeme)], most: t.rows })
  const rare = terms.filter((t) => t.df <= candidates)
  const common = terms.filter((t) => t.df > candidates).slice(0, MAX_PAIRED_TERMS)
  const always = rare.map(one)
  if (common.length > 1) {
    // Every pair as one tsquery per term with the terms after it: each has a term every match
    // holds, whose entries the GIN scan follows, where one OR of all the pairs has none and
    // reads every entry of every term (the bitmaps are ORed instead).
    const pairs = common.slice(0, -1).map((a, i) => {
      const after = common.slice(i + 1).map((b) => tsqueryTerm(b.lexeme))
      return `${tsqueryTerm(a.lexeme)} & ${after.length > 1 ? `(${after.join(' | ')})` : after[0]}`
    })
    const rows = common.map((t) => t.rows).sort((x, y) => x - y)
    always.push({ queries: pairs, most: rows.slice(0, -1).reduce((sum, n) => sum + n, 0) })
  }
  if (rare.length === 0 && terms.length > 2) {
    always.push({ queries: [terms.map((t) => tsqueryTerm(t.lexeme)).join(' & ')], most: Math.min(...terms.map((t) => t.rows)) })
  }
  if (rare.length > 0) return { always, fallback: null }
  const rarest = one(terms[0]!)
  return terms.length === 1 ? { always: [rarest], fallback: null } : { always, fallback: rarest }
}

/**
 * Whether a branch that matches at most `most` chunks finds its newest `candidates` faster by
 * reading every chunk it matches (a bitmap scan of the GIN index, then a sort) than by walking
 * the tenant's `tenantChunks` by time until enough match. The walk reads about `candidates`
 * over the share of chunks that match, so the two meet near the square root of `candidates`
 * times `tenantChunks` (4,472 chunks of 100,000 for 200 candidates). Under it, the branch is
 * kept from the walk: the planner takes a term's share of a walk from its statistics and
 * chose the walk for terms in 2% of the chunks, which read 9,000 rows where the bitmap read
 * 2,200 (bench/HISTORY.md, "Common terms' newest chunks").
 */
export function readsEveryMatch(most: number, candidates: number, tenantChunks: number): boolean {
  return most <= Math.max(candidates, Math.sqrt(candidates * tenantChunks))
}

/**
 * A keyword branch's newest `limit` chunks (id, source_id, tsv) of `from` (aliased `c`) that
 * match `where`. With `everyMatch` they are behind OFFSET 0, so the order cannot come from a
 * walk of the tenant's chunks by time: the matches are found first, then sorted
 * (`readsEveryMatch`); without it the planner chooses.
 */
export function newestMatches(from: string, where: string, limit: string, everyMatch: boolean): string {
  const newest = `ORDER BY c.created_at DESC, c.id LIMIT ${limit}`
  return everyMatch
    ? `SELECT c.id, c.source_id, c.tsv FROM (SELECT c.id, c.source_id, c.tsv, c.created_at FROM ${from}
          WHERE ${where} OFFSET 0) c
        ${newest}`
    : `SELECT c.id, c.source_id, c.tsv FROM ${from}
        WHERE ${where}
        ${newest}`
}

/**
 * The words of the query `$1` that are the whole id of a person or agent of tenant `$2`,
 * lowercased (`w`): one probe of `events_actor_names` per word. Tools' names are not among them.
 */
const ACTOR_WORDS = `SELECT DISTINCT q.w
  FROM (SELECT DISTINCT btrim(w, '._-') AS w FROM regexp_split_to_table(lower($1), '[^[:alnum:]_.@-]+') AS w) q
  WHERE q.w <> '' AND EXISTS (
    SELECT 1 FROM events e WHERE e.tenant_id = $2 AND lower(e.actor_id) = q.w AND e.actor_type <> 'tool')`

/** Reads the keyword statistics for a query's terms: their document frequencies, the sizes of the pool, the tenant and the memory. */
async function keywordStats(db: Queryable, plan: SearchPlan): Promise<KeywordStats> {
  const allowed = allowedSensitivities(plan.options.channel)
  const asOf = plan.options.asOf === undefined ? null : toDate(plan.options.asOf)
  // As of a time, the statistics leave out what the reader's chunks created since add: the
  // counts are the memory's then, so the scores are those a search then gave.
  const since = asOf
    ? {
        ctes: `since AS MATERIALIZED (
            SELECT c.tsv FROM chunks c
            WHERE c.tenant_id = $2 AND c.created_at > $5 AND c.sensitivity = ANY($3::text[])
          ),
          since_corpus AS (SELECT count(*)::float8 AS chunks, coalesce(sum(length(tsv)), 0)::float8 AS lexemes FROM since),
          since_df AS (
            SELECT u.lexeme, count(*)::float8 AS df
            FROM since c CROSS JOIN LATERAL unnest(ts_filter(setweight(c.tsv, 'A', (SELECT array_agg(lexeme) FROM q)), '{a}')) u
            GROUP BY u.lexeme
          ),`,
        df: ` - coalesce((SELECT d.df FROM since_df d WHERE d.lexeme = q.lexeme), 0)`,
        chunks: ' - (SELECT chunks FROM since_corpus)',
        lexemes: ' - (SELECT lexemes FROM since_corpus)',
      }
    : { ctes: '', df: '', chunks: '', lexemes: '' }
  const { rows } = await db.query<{
    lexeme: string | null
    df: number
    chunks: number
    lexemes: number
    tenant_chunks: number
    all_chunks: number
    actor: boolean
  }>(
    `WITH q AS (SELECT DISTINCT t.lexeme FROM unnest(to_tsvector('english', $1)) t),
          -- Words of the query that are the whole id of a person or agent (plan.actorWords).
          actor_words AS (
            SELECT DISTINCT n.lexeme FROM unnest($4::text[]) a(w) CROSS JOIN LATERAL unnest(to_tsvector('english', a.w)) n
          ),
          -- The reader's pool, the tenant and the whole memory (a row per tenant and sensitivity).
          corpus AS (SELECT coalesce(sum(chunks) FILTER (WHERE tenant_id = $2 AND sensitivity = ANY($3::text[])), 0)::float8 AS chunks,
                            coalesce(sum(lexemes) FILTER (WHERE tenant_id = $2 AND sensitivity = ANY($3::text[])), 0)::float8 AS lexemes,
                            coalesce(sum(chunks) FILTER (WHERE tenant_id = $2), 0)::float8 AS tenant_chunks,
                            coalesce(sum(chunks), 0)::float8 AS all_chunks
                     FROM chunk_stats),
          -- The chunks whose terms term_stats has not counted yet (numbered past keyword_counted,
          -- fewer than KEYWORD_PENDING_BOUND after any write): what they hold of the query's terms.
          -- Once (MATERIALIZED), not once per term; only the query's lexemes are unnested.
          ${since.ctes}
          pending AS MATERIALIZED (
            SELECT u.lexeme, count(*)::float8 AS df
            FROM (SELECT c.tenant_id, c.sensitivity, c.tsv FROM chunks c
                  WHERE c.stats_seq > (SELECT upto FROM keyword_counted)
                  ORDER BY c.stats_seq DESC LIMIT ${KEYWORD_PENDING_BOUND}) c
            CROSS JOIN LATERAL unnest(ts_filter(setweight(c.tsv, 'A', (SELECT array_agg(lexeme) FROM q)), '{a}')) u
            WHERE c.tenant_id = $2 AND c.sensitivity = ANY($3::text[])
            GROUP BY u.lexeme
          )
     SELECT q.lexeme,
            (coalesce((SELECT sum(s.df) FROM term_stats s
                       WHERE s.tenant_id = $2 AND s.lexeme = q.lexeme AND s.sensitivity = ANY($3::text[])), 0)
             + coalesce((SELECT p.df FROM pending p WHERE p.lexeme = q.lexeme), 0)${since.df})::float8 AS df,
            (corpus.chunks${since.chunks})::float8 AS chunks, (corpus.lexemes${since.lexemes})::float8 AS lexemes,
            corpus.tenant_chunks, corpus.all_chunks,
            coalesce(q.lexeme IN (SELECT lexeme FROM actor_words), false) AS actor
     FROM corpus LEFT JOIN q ON true`,
    [plan.text, plan.options.scope.tenantId, allowed, plan.actorWords, ...(asOf ? [asOf] : [])],
    { prepare: true },
  )
  const chunks = Number(rows[0]?.chunks ?? 0)
  const allChunks = Number(rows[0]?.all_chunks ?? 0)
  const found = rows.filter((r): r is typeof r & { lexeme: string } => r.lexeme !== null && Number(r.df) > 0)
  // A query made only of actors' names keeps them as terms: there is nothing else to match.
  const actorWeight = found.every((r) => r.actor) ? 1 : plan.scoring.actorNameTerm
  const terms = found
    .map((r) => ({ lexeme: r.lexeme, df: Number(r.df), rows: (Number(r.df) * allChunks) / Math.max(chunks, 1), weight: r.actor ? actorWeight : 1 }))
    .filter((t) => t.weight > 0)
    // Rarest first: when a long query is cut to MAX_QUERY_TERMS, the telling terms stay.
    .sort((x, y) => x.df - y.df || (x.lexeme < y.lexeme ? -1 : 1))
  return {
    terms,
    chunks,
    avgLength: chunks > 0 ? Number(rows[0]?.lexemes ?? 0) / chunks : 1,
    tenantChunks: Number(rows[0]?.tenant_chunks ?? 0),
  }
}

function toHit(r: HitRow): SearchHit {
  const distance = r.v_distance === null ? null : Number(r.v_distance)
  return {
    chunkId: r.chunk_id,
    eventId: r.event_id,
    kind: r.kind,
    conversationId: r.conversation_id,
    turnIndex: r.turn_index,
    actor: { type: r.actor_type, id: r.actor_id },
    text: r.text,
    createdAt: iso(r.created_at),
    score: r.final,
    explain: {
      vector:
        r.v_rank === null
          ? null
          : {
              rank: Number(r.v_rank),
              score: Number(r.v_score),
              z: Number(r.v_z),
              distance,
              similarity: distance === null ? null : 1 - distance,
            },
      keyword: r.k_rank === null ? null : { rank: Number(r.k_rank), score: Number(r.k_score), z: Number(r.k_z) },
      fused: r.fused,
      actorNamed: r.named,
      dateNamed: r.dated,
      recency: r.recency,
      staleness: r.staleness,
      familiarity: r.familiarity,
      importance: r.importance,
      final: r.final,
    },
  }
}

/** Runs a search statement with HNSW settings that keep filtered nearest-neighbour scans complete. */
export async function runSearch(db: Db, plan: SearchPlan): Promise<SearchHit[]> {
  return (await runSearchWithPool(db, plan)).hits
}

/** `runSearch`, also saying how many events were ranked before the cut. */
export async function runSearchWithPool(db: Db, plan: SearchPlan): Promise<{ hits: SearchHit[]; poolSize: number }> {
  // The transaction ends with the search: its settings need no reset.
  return db.transaction((tx) => searchInTransaction(tx, plan, false))
}

/**
 * `runSearchWithPool` inside the caller's transaction (`buildContext` reads all it needs in
 * one). Its HNSW settings are `SET LOCAL`: they hold for the rest of that transaction. Custom
 * plans hold for its own two statements only when `statementsFollow`: the statements run
 * after it in the transaction are planned as any other (Postgres' default), and those of
 * `buildContext`, lookups by key and by conversation, keep a generic plan once it is as cheap.
 */
export async function searchInTransaction(
  tx: Queryable,
  plan: SearchPlan,
  statementsFollow = true,
): Promise<{ hits: SearchHit[]; poolSize: number }> {
  // The search's statement is kept prepared, but planned for its own values every time: the
  // best plan for a search depends on them. The keyword statistics read a few rows by key
  // whatever the query: their generic plan is kept (Postgres' automatic choice plans them
  // anew each time), except as of a time, when they also count the chunks created since, and
  // how to read those depends on the time.
  const settings = plan.vector ? `; ${vectorScanSettings(plan.nearest)}` : ''
  const keyword = plan.options.mode !== 'vector'
  const generic = keyword && plan.options.asOf === undefined
  await tx.exec(`${planStatements(generic ? 'generic' : 'custom')}${settings}`)
  const planned = keyword ? { ...plan, keyword: await keywordStats(tx, plan) } : plan
  if (generic) await tx.exec(planStatements('custom'))
  const { sql, params } = searchStatement(planned)
  const { rows } = await tx.query<HitRow>(sql, params, { prepare: true })
  if (statementsFollow) await tx.exec(planStatements('default'))
  return { hits: rows.map(toHit), poolSize: Number(rows[0]?.pool_size ?? 0) }
}

/**
 * The query's words that are the whole id of a person or agent of the tenant (`ACTOR_WORDS`),
 * whether any other word of it would be left without them, and the ids of the tenant's actors
 * it names (a word of the query is a word of the id: `actor_terms`).
 */
async function lookUpActors(
  ctx: EngineContext,
  text: string,
  tenantId: string,
): Promise<{ words: string[]; others: boolean; named: string[] }> {
  // In a transaction of its own, where the statement is kept prepared (src/core/db/prepared.ts)
  // with its generic plan: index probes by key whatever the query, which Postgres' automatic
  // choice would plan anew each time.
  const { rows } = await ctx.db.transaction(async (tx) => {
    await tx.exec(planStatements('generic'))
    return tx.query<{ names: string[] | null; others: boolean; named: string[] | null }>(
      `WITH names AS (${ACTOR_WORDS}),
            -- The query's lexemes, once.
            q AS MATERIALIZED (SELECT tsvector_to_array(to_tsvector('english', $1)) AS lexemes)
       SELECT (SELECT array_agg(w) FROM names) AS names,
              EXISTS (SELECT 1 FROM q, unnest(q.lexemes) t(lexeme)
                      WHERE t.lexeme NOT IN (SELECT n.lexeme FROM names, unnest(to_tsvector('english', names.w)) n)) AS others,
              (SELECT array_agg(DISTINCT a.actor_id ORDER BY a.actor_id) FROM q, actor_terms a
               WHERE a.tenant_id = $2 AND a.lexeme = ANY(q.lexemes)) AS named`,
      [text, tenantId],
      { prepare: true },
    )
  })
  return { words: rows[0]?.names ?? [], others: rows[0]?.others ?? false, named: rows[0]?.named ?? [] }
}

/**
 * `text` without the words in `names` (lowercased, as `ACTOR_WORDS` gives them) and the "'s"
 * after one.
 *
 * @example
 * withoutNames("What did Bo's sister say?", new Set(['bo'])) // → "What did sister say?"
 */
export function withoutNames(text: string, names: ReadonlySet<string>): string {
  return text
    .replace(/[\p{L}\p{N}_.@-]+(?:['’]s\b)?/gu, (word) =>
      names.has(word.replace(/['’]s$/, '').toLowerCase().replace(/^[._-]+|[._-]+$/g, '')) ? '' : word,
    )
    .replace(/\s+/g, ' ')
    .replace(/\s+([?.!,;:])/g, '$1')
    .trim()
}

async function embedQuery(vectors: VectorCache, embedder: Embedder, text: string): Promise<Float32Array> {
  try {
    return await vectors.embed(embedder, text)
  } catch (cause) {
    throw embedderFailed(embedder, cause)
  }
}

/** Validates and plans a search: the embedded query, the scoring in force, the clock. */
export async function planSearch(ctx: EngineContext, query: unknown, options: unknown): Promise<SearchPlan> {
  const text = parseInput(z.string().trim().min(1).max(20_000), query, 'search query')
  const o = parseInput(searchOptions, options ?? {}, 'search options')
  if (o.filters !== undefined) parseInput(filterExpressionSchema, o.filters, 'search filter', 'INVALID_FILTER')
  const scoring = resolveScoring(ctx.scoring, o.weights)
  if (o.mode === 'vector' && !ctx.embedder) {
    if (ctx.embedderLoading) {
      throw new MemoryError(
        'MODEL_LOADING',
        'Vector search needs the embedding model, which is still loading: retry once it is ready, or search in hybrid mode meanwhile',
      )
    }
    throw new MemoryError('MODEL_UNAVAILABLE', 'Vector search needs an embedder; this memory has none, or its model failed to load')
  }
  await ctx.beforeRead()
  const embedder = o.mode === 'keyword' ? null : ctx.embedder
  // The keyword terms need the actors' names, and so does the text embedded (it leaves them
  // out, unless actorNamesEmbedded or nothing but names and stop words would be left); the
  // actor bonus needs the actors the query names.
  const namesOut = embedder !== null && !scoring.actorNamesEmbedded
  const actors = await lookUpActors(ctx, text, o.scope.tenantId)
  const embedded = namesOut && actors.words.length > 0 && actors.others ? withoutNames(text, new Set(actors.words)) : text
  const vector = embedder
    ? { value: await embedQuery(ctx.vectors, embedder, embedded), model: embedder.id, dims: embedder.dims }
    : null
  return {
    text,
    options: o,
    scoring,
    vector,
    now: o.asOf === undefined ? ctx.now() : toDate(o.asOf),
    candidates: candidatesFor(o.limit),
    nearest: nearestFor(o.limit),
    actorWords: actors.words,
    namedActors: actors.named,
  }
}

/**
 * Each list is ranked three times as deep as the hits asked for, and never shallower than the
 * window its scores are standardised over.
 */
function candidatesFor(limit: number): number {
  return Math.min(MAX_CANDIDATES, Math.max(Z_WINDOW, limit * 3))
}

/** The events rescored for a top `limit`: three times the hits, at least `MIN_RESCORED`, at most `MAX_RESCORED`. */
export function rescoredFor(limit: number): number {
  return Math.min(MAX_RESCORED, Math.max(MIN_RESCORED, limit * 3))
}

/** The vector list's HNSW depth: three times the hits asked for, at least `MIN_NEAREST`, at most `candidatesFor`. */
function nearestFor(limit: number): number {
  return Math.min(candidatesFor(limit), Math.max(MIN_NEAREST, limit * 3))
}

/** The same search asking for `limit` hits: the query is not validated or embedded again. */
export function withLimit(plan: SearchPlan, limit: number): SearchPlan {
  const checked = parseInput(searchOptions.shape.limit, limit, 'search limit')
  return { ...plan, options: { ...plan.options, limit: checked }, candidates: candidatesFor(checked), nearest: nearestFor(checked) }
}

/** The conversations a retrieval returned, for `archives.create` (in memory: a search never writes). */
export function noteHits(ctx: EngineContext, plan: SearchPlan, hits: readonly { conversationId: string }[]): void {
  if (hits.length > 0) ctx.hits.note(plan.options.scope.tenantId, new Set(hits.map((h) => h.conversationId)), ctx.now())
}

/** `search`: hybrid retrieval over the event log. */
export function createSearch(ctx: EngineContext) {
  return {
    /**
     * Finds past events by meaning and by words in one SQL statement: BM25 keyword ranking
     * and pgvector nearest neighbours (for chunks embedded by the current model), each
     * spread to neighbouring turns, fused by z-scores (or reciprocal rank, or weights),
     * then rescored by recency, importance, familiarity and staleness. One hit per event,
     * best first; ties by id. Chunks not yet embedded are found by keywords; without an
     * embedder search is keyword only.
     *
     * @example
     * const hits = await memory.search('login bug', { scope: { userId: 'ann' }, limit: 5, channel: 'team' })
     * hits[0].explain // { vector: { rank, score, z, distance, similarity }, keyword: { rank, score, z }, fused, … }
     */
    async search(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
      const plan = await planSearch(ctx, query, options)
      const hits = await runSearch(ctx.db, plan)
      noteHits(ctx, plan, hits)
      return hits
    },
  }
}

export type { Channel }

