import type { EventKind } from './kinds.ts'
import { parseInput, z } from './validate.ts'

/** How the vector and keyword rankings are combined. */
export const FUSIONS = ['zscore', 'rrf', 'weighted'] as const
export type Fusion = (typeof FUSIONS)[number]

/** Each list's scores are standardised over its best this many events (`zscore` fusion). */
export const Z_WINDOW = 200

/**
 * SQL of z-score fusion, shared by event search and curated memories. `zListStats` selects, per
 * list, the mean and spread of the scores of its best `window` rows and the z of the lowest of
 * them (`floor`: what an entry missing from the list, or below the window, counts); each source
 * is a relation with `score` and `rnk` columns.
 */
export function zListStats(sources: { list: string; from: string }[], window: string): string {
  const union = sources.map((x) => `SELECT '${x.list}' AS list, score FROM ${x.from} WHERE rnk <= ${window}`).join(' UNION ALL ')
  return `SELECT list, mean, sd, coalesce((lowest - mean) / sd, 0)::float8 AS floor
    FROM (SELECT l.list, avg(l.score)::float8 AS mean, nullif(stddev_pop(l.score), 0)::float8 AS sd, min(l.score) AS lowest
          FROM (${union}) l
          GROUP BY l.list) s`
}

/**
 * SQL: the z of `score` in the list whose `zListStats` row is `stats`. greatest() passes over a
 * NULL, so a missing entry (or a list without spread) gets the floor, and no list at all 0.
 */
export function zOf(score: string, stats: string): string {
  return `coalesce(greatest((${score} - ${stats}.mean) / ${stats}.sd, ${stats}.floor), 0)`
}

/** SQL: the fused score of a mean z, max(0, z̄ + zShift) / (zShift + 3). */
export function zFused(meanZ: string, zShift: string): string {
  return `greatest(${meanZ} + ${zShift}, 0) / (${zShift} + 3)`
}

/**
 * Every knob of retrieval and ranking, in one place. `createEngine({ scoring })` replaces
 * any of them for an engine; `search(q, { weights })` for one call.
 *
 * A hit's final score is
 *
 *   search · S + recency · R + importance · I + familiarity · F − staleness · P
 *
 * where S is the fused search score, about 1 for a strong match in both lists (times
 * 1 + actorMatch when the query names the event's actor, and 1 + dateMatch when the event is
 * from a date the query names),
 * R = 0.5^(age / half-life), I the importance of the event's kind, F = ln(1 + conversations
 * that touched the hit's documents) / ln(1 + familiarityScale) capped at 1, and
 * P = 1 − 1 / (1 + versions since the hit saw its documents). Relevance dominates by default:
 * the other signals reorder hits of similar relevance, they do not pull irrelevant ones up.
 */
export interface Scoring {
  /**
   * How the vector and keyword rankings are combined.
   *
   * - `zscore` (default): each list's score is standardised per query over the list's best
   *   `Z_WINDOW` events, z = (score − mean) / standard deviation. An event missing from a list,
   *   or below that window, counts as the window's lowest. S = max(0, z̄ + zShift) /
   *   (zShift + 3), z̄ the weighted mean of the two z's: 1 for a hit 3 standard deviations
   *   above the mean in both lists. A list whose best match stands far above the rest
   *   counts for more than one whose scores are all alike; ranks alone cannot say that.
   * - `rrf`: reciprocal rank, S = Σ weight / (rrfK + rank), scaled so rank 1 in both is 1.
   * - `weighted`: each list's score divided by its best, then the weighted mean.
   */
  fusion: Fusion
  /** Reciprocal-rank constant (`rrf`): a hit at rank r counts 1 / (rrfK + r). */
  rrfK: number
  /**
   * Added to z̄ (`zscore`) before the actorMatch and dateMatch factors apply: the larger it
   * is, the more those factors weigh against a difference in z.
   */
  zShift: number
  /**
   * Weight of the vector ranking in fusion, as much as the keyword ranking by default: each
   * list's z already says how sure it is of its best matches.
   */
  vector: number
  /** Weight of the keyword ranking in fusion. */
  keyword: number
  /**
   * Share of an event's match score passed to the events just before and after it in its
   * conversation, so an answer is found by the words of the question it answers (and the
   * other way round). 0 turns it off.
   */
  neighbour: number
  /**
   * How many of each list's best events pass their share to their neighbours. The neighbours
   * of weak matches far down a list crowd the fused ranking more than they help it, and each
   * one spread costs a few index lookups.
   */
  neighbourDepth: number
  /**
   * How many events on each side receive it: the next one over gets `neighbour` squared (a
   * question answered two turns later, a reply that continues the one before).
   */
  neighbourReach: number
  /** BM25 term-frequency saturation. */
  bm25K1: number
  /** BM25 length normalisation. */
  bm25B: number
  /**
   * Fraction added to the fused search score of an event whose actor the query names
   * ("what did Ann say", "where did Tim travel"): a word of the query is a word of the
   * actor's id. Questions about a person are mostly answered by that person's own turns.
   */
  actorMatch: number
  /**
   * Fraction added to the fused search score of an event from the period the query's dates
   * name ("on 3 June 2023", "June 3, 2023", "in May 2023", "2023-06-03", "yesterday", "3 days
   * ago", "last week"; a day either side).
   * 1 doubles it: a question that names a day is mostly about that day. To keep only that
   * period, pass `since` / `until` instead.
   */
  dateMatch: number
  /**
   * Weight, as a keyword term, of a query word that is the whole id of a person or agent in
   * the memory (case aside): 0 leaves it out of the keyword ranking, 1 counts it like any
   * other term. A question that names a person is mostly answered by that person's own turns
   * (`actorMatch`); the name as a keyword ranks up the turns of others that address them by
   * name. A query made only of such words keeps them. Tools' names are always terms.
   */
  actorNameTerm: number
  /**
   * Whether such a word stays in the text embedded for the vector ranking. Left out (false),
   * the query's vector is what the question asks about, not whom: with the name in, it lies
   * near the turns that address that person by name, mostly someone else's. A query with
   * no other words is embedded whole.
   */
  actorNamesEmbedded: boolean
  /** Weight of the fused search score in the final score. */
  search: number
  /** Weight of recency decay. */
  recency: number
  /** Half-life of recency decay in days. */
  recencyHalfLifeDays: number
  /** Weight of the event kind's importance. */
  importance: number
  /** Importance of each kind of event, 0–1: decisions first, tool traffic last. */
  importanceByKind: Record<EventKind, number>
  /** Weight of familiarity (how many conversations touched the hit's documents). */
  familiarity: number
  /** Conversations at which the familiarity bonus is full. */
  familiarityScale: number
  /** Weight of the staleness penalty (versions added since the hit saw its documents). */
  staleness: number
}

/** The deepest `neighbourDepth`: a list never ranks more candidates than this. */
export const MAX_NEIGHBOUR_DEPTH = 2000

export const DEFAULT_SCORING: Readonly<Scoring> = Object.freeze({
  fusion: 'zscore',
  rrfK: 60,
  zShift: 6,
  vector: 1,
  keyword: 1,
  neighbour: 0.5,
  neighbourDepth: 30,
  neighbourReach: 2,
  bm25K1: 1.2,
  bm25B: 0.75,
  actorMatch: 0.3,
  dateMatch: 1,
  actorNameTerm: 0,
  actorNamesEmbedded: false,
  search: 1,
  recency: 0.1,
  recencyHalfLifeDays: 30,
  importance: 0.05,
  importanceByKind: Object.freeze({
    decision: 1,
    task_update: 0.75,
    message: 0.5,
    artifact: 0.25,
    tool_result: 0.25,
    tool_call: 0.25,
  }),
  familiarity: 0.05,
  familiarityScale: 10,
  staleness: 0.15,
})

const weight = z.number().finite().min(0).max(1000)
const kindWeights = z
  .object({
    decision: weight,
    task_update: weight,
    message: weight,
    artifact: weight,
    tool_result: weight,
    tool_call: weight,
  })
  .partial()
  .strict()

export const scoringInput = z
  .object({
    fusion: z.enum(FUSIONS),
    rrfK: z.number().finite().min(1).max(10_000),
    zShift: z.number().finite().min(0).max(1000),
    vector: weight,
    keyword: weight,
    neighbour: z.number().finite().min(0).max(1),
    neighbourDepth: z.number().int().min(1).max(MAX_NEIGHBOUR_DEPTH),
    neighbourReach: z.number().int().min(1).max(3),
    bm25K1: z.number().finite().min(0).max(10),
    bm25B: z.number().finite().min(0).max(1),
    actorMatch: weight,
    dateMatch: weight,
    actorNameTerm: z.number().finite().min(0).max(1),
    actorNamesEmbedded: z.boolean(),
    search: weight,
    recency: weight,
    recencyHalfLifeDays: z.number().finite().positive().max(1e6),
    importance: weight,
    importanceByKind: kindWeights,
    familiarity: weight,
    familiarityScale: z.number().finite().min(1).max(1e6),
    staleness: weight,
  })
  .partial()
  .strict()

export type ScoringInput = z.input<typeof scoringInput>

/**
 * Lays `overrides` over `base`, validating them.
 *
 * @example
 * resolveScoring(DEFAULT_SCORING, { recency: 0 }).recency // → 0
 */
export function resolveScoring(base: Readonly<Scoring>, overrides: unknown): Scoring {
  if (overrides === undefined) return { ...base, importanceByKind: { ...base.importanceByKind } }
  const o = parseInput(scoringInput, overrides, 'scoring weights')
  const { importanceByKind, ...rest } = o
  const merged: Scoring = { ...base, importanceByKind: { ...base.importanceByKind } }
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) (merged as unknown as Record<string, unknown>)[k] = v
  for (const [k, v] of Object.entries(importanceByKind ?? {})) {
    if (v !== undefined) merged.importanceByKind[k as EventKind] = v
  }
  return merged
}

/** Recency decay: 1 now, 0.5 one half-life ago. */
export function recencyOf(ageMs: number, halfLifeDays: number): number {
  return Math.pow(0.5, Math.max(0, ageMs) / (halfLifeDays * 86_400_000))
}

/** Familiarity bonus for `conversations` that touched a hit's documents, 0–1. */
export function familiarityOf(conversations: number, scale: number): number {
  if (conversations <= 0) return 0
  return Math.min(1, Math.log1p(conversations) / Math.log1p(scale))
}

/** Staleness penalty for `versionsSince` newer versions, 0–1. */
export function stalenessOf(versionsSince: number): number {
  return versionsSince <= 0 ? 0 : 1 - 1 / (1 + versionsSince)
}
