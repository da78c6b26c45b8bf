// The evidence section's read: search over other conversations, in one or two passes, plus
// past turns that touched a document this conversation touched; each hit shown as its turn.
import { edgeVisibleAt } from '../graph/edges.ts'
import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { recencyOf } from '../kernel/scoring.ts'
import { iso } from '../kernel/time.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import type { Candidate, ContextOmission } from './context-bundle.ts'
import type { ContextInput } from './context-input.ts'
import { pack, tokenCounter } from './context-packing.ts'
import { PREPARED } from './context-sections.ts'
import { DOCUMENTS_LINE, expandTurns, renderTurn, type TurnRow } from './context-turns.ts'
import { noteHits, type SearchExplain, type SearchHit, type SearchPlan, planSearch, searchInTransaction, withLimit } from './search.ts'

/** The most events `buildContext` retrieves by search before packing. */
export const MAX_RETRIEVED = 200
/**
 * The fewest tokens a retrieved turn takes once rendered (its header line, question and
 * reply): the evidence section's cap over this is the most hits that could fit, so search
 * asks for no more than that (at least 20, at most MAX_RETRIEVED).
 */
export const MIN_TOKENS_PER_HIT = 50
/**
 * Tokens a retrieved turn is taken to need on a first pass: search is first asked for the
 * section's cap over this (at least 10), three times fewer hits than could fit. Only when
 * those leave MIN_TOKENS_PER_HIT or more of the section unfilled is search asked again for
 * the most hits that could fit (docs/retrieval-and-context.md, "Evidence in one or two passes").
 */
export const FIRST_PASS_TOKENS_PER_HIT = 150
/** The most other conversations' turns one document of the current conversation brings in. */
export const DOCUMENT_FAN_OUT = 5
/** Search score given to a past turn found only because it touched a document the current conversation touches. */
export const DOCUMENT_LINK_SCORE = 0.5

/** How many hits the first search pass asks for, and a second pass if one runs. */
export interface PassLimits {
  first: number
  full: number
}

/** One search pass's candidates (each turn once) and what it found. */
interface Pass {
  candidates: Candidate[]
  poolSize: number
  scored: number
  /** Search hits, and replies linked by a document, before each turn is kept once. */
  hits: number
  linked: number
}

/** The evidence section's candidates, and how search was asked for them. */
export interface Evidence {
  candidates: Candidate[]
  poolSize: number
  scored: number
  searchLimit: number
  searchPasses: number
}

/** What a hit needs to be shown as its turn. */
type TurnHit = Pick<SearchHit, 'eventId' | 'kind' | 'conversationId' | 'createdAt' | 'text'> & { chunkId?: string }

/** How many hits each search pass asks for: see `retrieved`. */
export function passLimits(evidenceCap: number): PassLimits {
  const full = Math.min(MAX_RETRIEVED, Math.max(20, Math.ceil(evidenceCap / MIN_TOKENS_PER_HIT)))
  return { first: Math.min(full, Math.max(10, Math.ceil(evidenceCap / FIRST_PASS_TOKENS_PER_HIT))), full }
}

/** The evidence search's plan for the first pass: validated and its query embedded once. */
export function planEvidence(ctx: EngineContext, i: ContextInput, now: Date, limit: number): Promise<SearchPlan> {
  return planSearch(ctx, i.query, {
    limit,
    scope: {
      tenantId: i.tenantId,
      ...(i.userId ? { userId: i.userId } : {}),
    },
    channel: i.channel,
    ...(i.conversationId ? { excludeConversation: i.conversationId } : {}),
    asOf: now,
  })
}

/**
 * Evidence candidates in one or two passes: search for as many hits as would fill the
 * section at FIRST_PASS_TOKENS_PER_HIT each, then, only if those leave MIN_TOKENS_PER_HIT or
 * more of the cap unfilled and more could exist, for the most that could fit (the cap over
 * MIN_TOKENS_PER_HIT, at least 20, at most MAX_RETRIEVED). The bundle packs the candidates
 * of the last pass run. The second pass reuses the first's plan (and its query vector).
 */
export async function retrieved(
  ctx: EngineContext,
  tx: Queryable,
  i: ContextInput,
  now: Date,
  plan: SearchPlan,
  omissions: ContextOmission[],
  evidenceCap: number,
  { first, full }: PassLimits,
): Promise<Evidence> {
  const noted: ContextOmission[] = []
  const pass = await retrievalPass(ctx, tx, i, now, plan, noted)
  // Fewer hits and fewer linked replies than asked for: a deeper pass finds no more.
  const exhausted = pass.hits < first && pass.linked < first
  const unfilled = () => evidenceCap - pack(tokenCounter(ctx), 'retrieved_evidence', evidenceCap, pass.candidates, []).usedTokens
  if (first === full || exhausted || unfilled() < MIN_TOKENS_PER_HIT) {
    omissions.push(...noted)
    return { ...pass, searchLimit: first, searchPasses: 1 }
  }
  return { ...(await retrievalPass(ctx, tx, i, now, withLimit(plan, full), omissions)), searchLimit: full, searchPasses: 2 }
}

/** One search pass: its hits and, in a conversation, the replies linked by a document it touched. */
async function retrievalPass(
  ctx: EngineContext,
  tx: Queryable,
  i: ContextInput,
  now: Date,
  plan: SearchPlan,
  omissions: ContextOmission[],
): Promise<Pass> {
  const { hits, poolSize } = await searchInTransaction(tx, plan)
  noteHits(ctx, plan, hits)
  // Linked replies all score alike but for recency, so no more of them than the section can
  // hold (the same bound search is asked for) could ever be packed: the newest are read.
  const linked = i.conversationId ? await documentLinked(tx, i, now, plan.options.limit) : []
  const ids = [...hits.map((h) => h.eventId), ...linked.map((l) => l.reply_id)]
  const turns = await expandTurns(tx, ids, i.tenantId, now)
  const candidates: Candidate[] = []
  const seenTurns = new Set<string>()
  const add = (hit: TurnHit, score: number, explain: SearchExplain | undefined, via: string) => {
    const turn = turns.get(hit.eventId)
    const key = turn?.user_event_id ?? hit.eventId
    if (seenTurns.has(key)) return
    seenTurns.add(key)
    if (turn?.truncated_artifact) {
      omissions.push({ id: hit.eventId, reason: 'truncated_tool_output', detail: turn.truncated_artifact })
    }
    candidates.push(turnCandidate(hit, turn, score, explain, via))
  }
  for (const h of hits) add(h, h.score, h.explain, 'search')
  for (const l of linked) {
    add(
      { eventId: l.reply_id, kind: 'message', conversationId: l.conversation_id, createdAt: iso(l.created_at), text: l.text },
      linkedScore(ctx, now, l.created_at),
      undefined,
      `document:${l.canonical_key}`,
    )
  }
  return { candidates, poolSize: poolSize + linked.length, scored: hits.length + linked.length, hits: hits.length, linked: linked.length }
}

/** A hit as an evidence candidate: its turn's text, cut from the answer first, never the documents line. */
function turnCandidate(hit: TurnHit, turn: TurnRow | undefined, score: number, explain: SearchExplain | undefined, via: string): Candidate {
  const text = renderTurn(hit, turn)
  const last = text.slice(text.lastIndexOf('\n') + 1)
  return {
    id: turn?.user_event_id ?? hit.eventId,
    kind: turn?.user_event_id ? 'turn' : hit.kind,
    text,
    body: text.split('\n').slice(1).join('\n'),
    score,
    ...(explain ? { explain } : {}),
    truncatable: true,
    ...(last.startsWith(DOCUMENTS_LINE) ? { keep: last } : {}),
    source: {
      eventId: hit.eventId,
      conversationId: hit.conversationId,
      via,
      ...(hit.chunkId ? { chunkId: hit.chunkId } : {}),
      ...(turn?.user_event_id ? { userEventId: turn.user_event_id } : {}),
      ...(turn?.user_event_id && turn.reply_event_id ? { replyEventId: turn.reply_event_id } : {}),
      versionIds: (turn?.procedures ?? []).flatMap((p) => (p.version_id ? [p.version_id] : [])),
    },
  }
}

/** A document-linked reply's score: the search weight at DOCUMENT_LINK_SCORE, its recency, and a message's importance. */
function linkedScore(ctx: EngineContext, now: Date, createdAt: Date): number {
  const s = ctx.scoring
  return (
    s.search * DOCUMENT_LINK_SCORE +
    s.recency * recencyOf(now.getTime() - new Date(createdAt).getTime(), s.recencyHalfLifeDays) +
    s.importance * (s.importanceByKind.message ?? 0)
  )
}

/** Hypernode lookup: other conversations' replies that touched any version of a document this conversation touched. */
async function documentLinked(db: Queryable, i: ContextInput, now: Date, limit: number) {
  const { rows } = await db.query<{
    reply_id: string
    conversation_id: string
    created_at: Date
    text: string
    canonical_key: string
  }>(
    `WITH cur AS (
       SELECT e.document_id FROM edges e
       WHERE e.tenant_id = $1 AND e.conversation_id = $2 AND e.document_id IS NOT NULL AND ${edgeVisibleAt('$3', 'e')}
       UNION
       -- The versions this conversation observed without an event to link them from.
       SELECT v.document_id FROM doc_versions v JOIN documents d ON d.id = v.document_id
       WHERE v.conversation_id = $2 AND d.tenant_id = $1 AND v.created_at <= $3
     ), touch AS (
       -- Per document, its newest edges from other conversations: one walk down edges_document,
       -- each reply checked by key (OFFSET 0 keeps both from becoming scans of every row).
       SELECT t.reply_id, t.conversation_id, t.created_at, d.canonical_key
       FROM cur
       JOIN documents d ON d.id = cur.document_id
       CROSS JOIN LATERAL (
         SELECT e.src AS reply_id, e.conversation_id, r.created_at
         FROM edges e
         CROSS JOIN LATERAL (
           SELECT r.created_at FROM events r
           WHERE r.id = e.src AND r.tenant_id = $1 AND r.kind = 'message' AND r.sensitivity = ANY($4::text[]) AND r.created_at <= $3
             AND ($5::text IS NULL OR r.user_id = $5)
           OFFSET 0
         ) r
         WHERE e.document_id = cur.document_id AND e.tenant_id = $1
           AND e.conversation_id IS NOT NULL AND e.conversation_id <> $2 AND ${edgeVisibleAt('$3', 'e')}
         ORDER BY e.created_at DESC, e.id
         LIMIT $6
       ) t
     )
     -- The text is read for the replies kept, not for every edge ranked.
     SELECT l.*, (SELECT r.content ->> 'text' FROM events r WHERE r.id = l.reply_id) AS text FROM (
       SELECT DISTINCT ON (reply_id) reply_id, conversation_id, created_at, canonical_key
       FROM touch
       ORDER BY reply_id, canonical_key
     ) l
     ORDER BY l.created_at DESC, l.reply_id
     LIMIT $7`,
    [i.tenantId, i.conversationId, now, allowedSensitivities(i.channel), i.userId ?? null, DOCUMENT_FAN_OUT, limit],
    PREPARED,
  )
  return rows
}
