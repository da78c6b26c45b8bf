import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { edgeVisibleAt } from '../graph/edges.ts'
import { supersededIds } from '../log/events.ts'
import { newId } from '../kernel/ids.ts'
import type { JsonValue } from '../kernel/json.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import { CHANNELS, identifier, type StoredSensitivity } from '../kernel/scope.ts'
import { noteHits, type SearchExplain, type SearchHit, type SearchPlan, planSearch, searchInTransaction, withLimit } from './search.ts'
import { recencyOf } from '../kernel/scoring.ts'
import { iso, timeInput, toDate } from '../kernel/time.ts'
import { estimateTokens } from '../kernel/tokens.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { openingReads } from '../privacy/vault.ts'
import { pastMemories, readableBy, unexpired } from '../memories/memories.ts'
import { Params } from '../db/params.ts'

export const SECTION_NAMES = [
  'identity',
  'rules',
  'task_state',
  'decision_ledger',
  'retrieved_evidence',
  'recent_window',
  'handoff_packet',
] as const
export type SectionName = (typeof SECTION_NAMES)[number]

/** The budget the default section caps are written for; caps scale with `maxTokens`. */
export const DEFAULT_CONTEXT_BUDGET = 65_000

/**
 * Section caps for a 65,000-token bundle. What is left (8,800) is headroom for the user's
 * message and tool payloads; every cap scales with the budget asked for.
 */
export const DEFAULT_SECTION_CAPS: Readonly<Record<SectionName, number>> = Object.freeze({
  identity: 1_200,
  rules: 6_000,
  task_state: 3_000,
  decision_ledger: 4_000,
  retrieved_evidence: 28_000,
  recent_window: 8_000,
  handoff_packet: 6_000,
})

/**
 * What a section weighs when the budget cannot hold every cap: sections asked for more than
 * `maxTokens` in all are given their caps highest priority first (the last one what is left),
 * and an item dropped to fit comes from the lowest-priority section holding one.
 */
export const SECTION_PRIORITIES: Readonly<Record<SectionName, number>> = Object.freeze({
  identity: 10,
  rules: 9,
  task_state: 8,
  decision_ledger: 7,
  handoff_packet: 7,
  retrieved_evidence: 6,
  recent_window: 5,
})

/** Section names, highest priority first (ties in bundle order). */
const BY_PRIORITY = [...SECTION_NAMES].sort((a, b) => SECTION_PRIORITIES[b] - SECTION_PRIORITIES[a])
/** The order items are dropped from when the rendered bundle is over budget. */
const LOWEST_PRIORITY_FIRST = [...BY_PRIORITY].reverse()

/** Order of sections in the bundle and its text. */
const SECTION_TITLES: Record<SectionName, string> = {
  identity: 'Identity',
  rules: 'Rules',
  task_state: 'Task state',
  decision_ledger: 'Decisions',
  retrieved_evidence: 'Retrieved evidence',
  recent_window: 'Recent conversation',
  handoff_packet: 'Handoff',
}

/** How many hits the first search pass asks for, and a second pass if one runs. */
interface PassLimits {
  first: number
  full: number
}

/** Sections read with statements kept prepared: they run on every call, with the same text. */
const PREPARED = { prepare: true } as const

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
/** Policy-memory namespaces read into the identity and rules sections. */
export const IDENTITY_NAMESPACES = ['identity'] as const
export const RULE_NAMESPACES = ['rules', 'constraints', 'conventions', 'procedures'] as const
/** Policy-memory namespaces read into the decision ledger, beside the decisions of the log. */
export const DECISION_NAMESPACES = ['decisions'] as const
/** Curated-memory categories read into the rules section. */
export const RULE_CATEGORIES = ['instruction', 'constraint', 'convention'] as const

/** The smallest `maxTokens` `buildContext` takes. */
export const MIN_CONTEXT_BUDGET = 64

/** Who the bundle is for, named as `recordTurn` and `search` name it. */
const contextScope = z
  .object({
    tenantId: identifier.optional(),
    userId: identifier.optional(),
    agentId: identifier.optional(),
    /** The project the call is made in: the user's memories of other projects stay out. */
    projectId: identifier.optional(),
  })
  .strict()

const SCOPE_KEYS = ['tenantId', 'userId', 'agentId', 'projectId'] as const

const contextInput = z
  .object({
    query: z.string().trim().min(1).max(20_000),
    conversationId: identifier.optional(),
    scope: contextScope.optional(),
    /** @deprecated Use `scope.tenantId`. */
    tenantId: identifier.optional(),
    /** @deprecated Use `scope.userId`. */
    userId: identifier.optional(),
    /** @deprecated Use `scope.agentId`. */
    agentId: identifier.optional(),
    /** @deprecated Use `scope.projectId`. */
    projectId: identifier.optional(),
    channel: z.enum(CHANNELS).default('private'),
    intent: z.string().max(200).optional(),
    /** The budget in tokens, 64 at least: below that no section could hold one item. */
    maxTokens: z.number().int().min(MIN_CONTEXT_BUDGET).max(2_000_000).default(DEFAULT_CONTEXT_BUDGET),
    sections: z
      .object(Object.fromEntries(SECTION_NAMES.map((n) => [n, z.number().int().min(0).optional()])))
      .strict()
      .optional(),
    now: timeInput.optional(),
    retrieval: z.boolean().default(true),
  })
  .strict()
  .superRefine((i, issues) => {
    for (const key of SCOPE_KEYS) {
      const flat = i[key]
      const scoped = i.scope?.[key]
      if (flat !== undefined && scoped !== undefined && flat !== scoped) {
        issues.addIssue({ code: 'custom', path: [key], message: `differs from scope.${key}: give it once, in scope` })
      }
    }
  })
  .transform(({ scope, ...i }) => ({
    ...i,
    tenantId: scope?.tenantId ?? i.tenantId ?? 'default',
    userId: scope?.userId ?? i.userId,
    agentId: scope?.agentId ?? i.agentId,
    projectId: scope?.projectId ?? i.projectId,
  }))

/**
 * What the next model call is about and for whom (`scope`, as `recordTurn` and `search` take
 * it; the flat `tenantId`, `userId`, `agentId` and `projectId` still work). `channel` is where the answer goes: only
 * sensitivities allowed there are loaded. `sections` replaces caps (in tokens) of named
 * sections; `retrieval: false` skips search for a fast bundle of rules, tasks, decisions and
 * the recent window.
 */
export type BuildContextInput = z.input<typeof contextInput>

export interface ContextItem {
  id: string
  kind: string
  text: string
  tokens: number
  score: number
  explain?: SearchExplain
  source: Record<string, string | number | string[] | null>
}

export interface ContextSection {
  name: SectionName
  capTokens: number
  usedTokens: number
  items: ContextItem[]
}

export interface ContextOmission {
  id?: string
  reason: string
  detail?: string
}

/** The Active Context Bundle: what to put in front of the model, and why. */
export interface ContextBundle {
  /** This bundle's id (`acb_…`, sortable by time), to log or cite which context a step had. */
  id: string
  budgetTokens: number
  tokenUsedEst: number
  sections: ContextSection[]
  omissions: ContextOmission[]
  provenance: {
    intent: string | null
    queryTerms: string[]
    poolSize: number
    scored: number
    /** Hits search was asked for by the pass whose candidates were packed (0 without retrieval). */
    searchLimit: number
    /** Search passes run: 1, or 2 when the first left the evidence section short (0 without retrieval). */
    searchPasses: number
    filters: {
      tenantId: string
      userId: string | null
      agentId: string | null
      channel: string
      sensitivityAllowed: StoredSensitivity[]
      excludeConversation: string | null
    }
    weights: Record<string, unknown>
    tokenizer: string
  }
  text: string
}

type Input = z.output<typeof contextInput>

interface Candidate {
  id: string
  kind: string
  text: string
  score: number
  explain?: SearchExplain
  source: ContextItem['source']
  /** Whether the text may be cut to fit the room left in its section. */
  truncatable?: boolean
  /** The text's last line, kept whole when the rest is cut (a turn's document staleness). */
  keep?: string
  /** Text that makes two candidates the same for the reader; the later one is left out. */
  body?: string
}

function payloadText(payload: unknown): string {
  if (typeof payload === 'string') return payload
  if (payload && typeof payload === 'object' && 'text' in payload && typeof payload.text === 'string') return payload.text
  return JSON.stringify(payload)
}

function policyScopes(i: Input): string[] {
  return [
    'global',
    ...(i.userId ? [`user:${i.userId}`] : []),
    ...(i.projectId ? [`project:${i.projectId}`] : []),
    ...(i.agentId ? [`agent:${i.agentId}`] : []),
    ...(i.conversationId ? [`conversation:${i.conversationId}`] : []),
  ]
}

function day(at: Date | string): string {
  return iso(at).slice(0, 10)
}

/** A decision's content field as text: a string, or an array's items joined by `separator`; else null. */
function textList(field: string, separator: string): string {
  const at = `e.content -> '${field}'`
  return `CASE jsonb_typeof(${at}) WHEN 'string' THEN ${at} #>> '{}'
            WHEN 'array' THEN (SELECT string_agg(a, '${separator}') FROM jsonb_array_elements_text(${at}) a) END`
}

/** How a past turn's rendering names the documents its procedures saw, and how stale they are. */
const DOCUMENTS_LINE = 'Documents: '

/**
 * `text` cut to `max` tokens with its last line, `keep`, whole after the cut: a turn's answer
 * is shortened, never what it says of the documents it saw. Null when that does not fit.
 */
function keepingLast(text: string, keep: string | undefined, max: number, count: (t: string) => number): string | null {
  if (keep === undefined || !text.endsWith(`\n${keep}`)) return null
  const head = fitText(text.slice(0, -keep.length - 1), max - count(`\n${keep}`), count)
  if (head === null) return null
  const out = `${head}\n${keep}`
  return count(out) <= max ? out : null
}

/** The longest prefix of `text` (cut at a word where possible) that counts at most `max` tokens. */
function fitText(text: string, max: number, count: (t: string) => number): string | null {
  const marker = ' …[truncated]'
  if (max <= count(marker)) return null
  let lo = 0
  let hi = text.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (count(text.slice(0, mid) + marker) <= max) lo = mid
    else hi = mid - 1
  }
  if (lo === 0) return null
  const cut = text.slice(0, lo)
  const space = cut.lastIndexOf(' ')
  return (space > lo * 0.6 ? cut.slice(0, space) : cut) + marker
}

interface TurnRow {
  hit_id: string
  user_event_id: string | null
  user_text: string | null
  reply_event_id: string | null
  reply_text: string | null
  procedures: { tool: string; args: JsonValue; version_id: string | null; key: string | null; version: number | null; latest: number | null }[] | null
  truncated_artifact: string | null
}

const turnsOptions = z
  .object({
    tenantId: identifier.default('default'),
    /** Events above what this channel may show are left out (default 'private'). */
    channel: z.enum(CHANNELS).default('private'),
    /** Staleness as of this time (default now); procedures' links as the memory knew them then. */
    asOf: timeInput.optional(),
  })
  .strict()
export type TurnsOptions = z.input<typeof turnsOptions>

/** A past turn as a search hit leads to it: the question, the answer, and what the answer did. */
export interface TurnView {
  /** The event asked about (a hit's `eventId`). */
  eventId: string
  /** The turn's question and answer; null for an event recorded outside a turn. */
  userEventId: string | null
  userText: string | null
  replyEventId: string | null
  replyText: string | null
  /** The reply's procedures, in order, each with the document version it read or wrote. */
  procedures: {
    tool: string
    args: JsonValue
    versionId: string | null
    /** The document's canonical key (its path or URL). */
    document: string | null
    version: number | null
    latestVersion: number | null
    /** Versions the document has had since the one seen (0: current). */
    staleness: number | null
  }[]
}

/** `buildContext`: the Active Context Bundle. */
export function createContext(ctx: EngineContext) {
  const count = ctx.tokenCounter ?? estimateTokens

  /** For each hit: its turn (question and reply), the procedures of the reply and the versions they saw. */
  async function expandTurns(db: Queryable, eventIds: string[], tenantId: string, asOf: Date | null): Promise<Map<string, TurnRow>> {
    if (eventIds.length === 0) return new Map()
    const { rows } = await db.query<TurnRow>(
      `WITH msg AS (SELECT id FROM relations WHERE name = 'MESSAGE'),
       hit AS (SELECT DISTINCT unnest($1::text[]) AS id),
       -- A turn's tool event stands for the reply that made the call: a result leads to its
       -- call (RESULT), a call to the message whose tool edge (not a builtin one) points at it.
       tool AS MATERIALIZED (
         SELECT h.id AS hit_id, coalesce(
                  (SELECT r.src FROM edges r WHERE r.dst = h.id AND r.tenant_id = $2
                     AND r.rel = (SELECT id FROM relations WHERE name = 'RESULT') ORDER BY r.id LIMIT 1),
                  h.id) AS call_id
         FROM hit h
         WHERE (SELECT e.kind FROM events e WHERE e.id = h.id) IN ('tool_call', 'tool_result')
       ),
       via AS MATERIALIZED (
         SELECT h.id AS hit_id,
                coalesce((SELECT c.src FROM tool t
                          JOIN edges c ON c.dst = t.call_id AND c.tenant_id = $2
                          JOIN relations rr ON rr.id = c.rel AND NOT rr.builtin
                          JOIN events r ON r.id = c.src AND r.kind = 'message'
                          WHERE t.hit_id = h.id ORDER BY c.id LIMIT 1), h.id) AS id
         FROM hit h
       ),
       -- Materialized: each lookup runs once per hit, not once per column that reads it.
       turn AS MATERIALIZED (
         SELECT h.hit_id,
                coalesce((SELECT m.src FROM edges m WHERE m.dst = h.id AND m.rel = (SELECT id FROM msg)
                          AND m.tenant_id = $2 ORDER BY m.id LIMIT 1),
                         CASE WHEN (SELECT 1 FROM edges m WHERE m.src = h.id AND m.rel = (SELECT id FROM msg) LIMIT 1) = 1
                              THEN h.id END) AS user_event_id,
                h.id AS at_id
         FROM via h
       ), turn2 AS MATERIALIZED (
         SELECT t.hit_id, t.user_event_id,
                coalesce((SELECT m.dst FROM edges m WHERE m.src = t.user_event_id AND m.rel = (SELECT id FROM msg)
                          ORDER BY m.id LIMIT 1), t.at_id) AS reply_event_id
         FROM turn t
       )
       SELECT t.hit_id, t.user_event_id,
              (SELECT u.content ->> 'text' FROM events u WHERE u.id = t.user_event_id) AS user_text,
              t.reply_event_id,
              CASE WHEN t.user_event_id IS NULL THEN NULL
                   ELSE (SELECT r.content ->> 'text' FROM events r WHERE r.id = t.reply_event_id) END AS reply_text,
              (SELECT jsonb_agg(jsonb_build_object(
                        'tool', rel.name, 'args', coalesce(p.props -> 'args', '{}'::jsonb), 'version_id', v.id,
                        'key', d.canonical_key, 'version', v.version,
                        'latest', (SELECT max(l.version) FROM doc_versions l
                                   WHERE l.document_id = v.document_id AND ($3::timestamptz IS NULL OR l.created_at <= $3)))
                      ORDER BY p.created_at, p.id)
               FROM edges p
               JOIN relations rel ON rel.id = p.rel AND NOT rel.builtin
               LEFT JOIN doc_versions v ON v.id = p.dst
               LEFT JOIN documents d ON d.id = v.document_id
               WHERE t.user_event_id IS NOT NULL AND p.src = t.reply_event_id AND ${edgeVisibleAt('$3', 'p')}
              ) AS procedures,
              (SELECT CASE WHEN (h.content ->> 'truncated')::boolean THEN h.content ->> 'artifactId' END
               FROM events h WHERE h.id = t.hit_id) AS truncated_artifact
       -- One index lookup per hit (scalar subqueries): a hash join would read every event.
       FROM turn2 t`,
      [eventIds, tenantId, asOf],
      PREPARED,
    )
    return new Map(rows.map((r) => [r.hit_id, r]))
  }

  function renderTurn(hit: { kind: string; conversationId: string; createdAt: string; text: string }, turn: TurnRow | undefined): string {
    const head = `[${turn?.user_event_id ? 'past turn' : hit.kind} · conversation ${hit.conversationId} · ${day(hit.createdAt)}]`
    if (!turn?.user_event_id) return `${head}\n${hit.text}`
    const lines = [head, `Q: ${turn.user_text ?? ''}`]
    const procs = turn.procedures ?? []
    if (procs.length > 0) {
      lines.push(`Procedures: ${procs.map((p) => `${p.tool} ${JSON.stringify(p.args)}`).join('; ')}`)
    }
    // A hit on one of the turn's tool events: what it said, which is what the query matched.
    if (hit.kind === 'tool_result' || hit.kind === 'tool_call') lines.push(`${hit.kind === 'tool_result' ? 'Output' : 'Call'}: ${hit.text}`)
    lines.push(`A: ${turn.reply_text ?? ''}`)
    const docs = procs.filter((p) => p.key !== null && p.version !== null)
    if (docs.length > 0) {
      lines.push(
        `${DOCUMENTS_LINE}${docs
          .map((p) => {
            const behind = (p.latest ?? 0) - (p.version ?? 0)
            return behind > 0
              ? `${p.key} (seen v${p.version}, now v${p.latest}: ${behind} newer version${behind === 1 ? '' : 's'})`
              : `${p.key} (v${p.version}, current)`
          })
          .join(', ')}`,
      )
    }
    return lines.join('\n')
  }

  /** How many hits each search pass asks for: see `retrieved`. */
  function passLimits(evidenceCap: number): PassLimits {
    const full = Math.min(MAX_RETRIEVED, Math.max(20, Math.ceil(evidenceCap / MIN_TOKENS_PER_HIT)))
    return { first: Math.min(full, Math.max(10, Math.ceil(evidenceCap / FIRST_PASS_TOKENS_PER_HIT))), full }
  }

  /** The evidence search's plan for the first pass: validated and its query embedded once. */
  function planEvidence(i: Input, now: Date, limit: number): Promise<SearchPlan> {
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
  async function retrieved(
    tx: Queryable,
    i: Input,
    now: Date,
    plan: SearchPlan,
    omissions: ContextOmission[],
    evidenceCap: number,
    { first, full }: PassLimits,
  ) {
    const noted: ContextOmission[] = []
    const pass = await retrievalPass(tx, i, now, plan, noted)
    // Fewer hits and fewer linked replies than asked for: a deeper pass finds no more.
    const exhausted = pass.hits < first && pass.linked < first
    if (first === full || exhausted || evidenceCap - pack('retrieved_evidence', evidenceCap, pass.candidates, []).usedTokens < MIN_TOKENS_PER_HIT) {
      omissions.push(...noted)
      return { ...pass, searchLimit: first, searchPasses: 1 }
    }
    return { ...(await retrievalPass(tx, i, now, withLimit(plan, full), omissions)), searchLimit: full, searchPasses: 2 }
  }

  async function retrievalPass(tx: Queryable, i: Input, now: Date, plan: SearchPlan, omissions: ContextOmission[]) {
    const { hits, poolSize } = await searchInTransaction(tx, plan)
    noteHits(ctx, plan, hits)
    // Linked replies all score alike but for recency, so no more of them than the section can
    // hold (the same bound search is asked for) could ever be packed: the newest are read.
    const linked = i.conversationId ? await documentLinked(tx, i, now, plan.options.limit) : []
    const ids = [...hits.map((h) => h.eventId), ...linked.map((l) => l.reply_id)]
    const turns = await expandTurns(tx, ids, i.tenantId, now)
    const candidates: Candidate[] = []
    const seenTurns = new Set<string>()
    const add = (hit: Pick<SearchHit, 'eventId' | 'kind' | 'conversationId' | 'createdAt' | 'text'> & { chunkId?: string }, score: number, explain: SearchExplain | undefined, via: string) => {
      const turn = turns.get(hit.eventId)
      const key = turn?.user_event_id ?? hit.eventId
      if (seenTurns.has(key)) return
      seenTurns.add(key)
      if (turn?.truncated_artifact) {
        omissions.push({ id: hit.eventId, reason: 'truncated_tool_output', detail: turn.truncated_artifact })
      }
      const text = renderTurn(hit, turn)
      const last = text.slice(text.lastIndexOf('\n') + 1)
      candidates.push({
        id: key,
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
      })
    }
    for (const h of hits) add(h, h.score, h.explain, 'search')
    const s = ctx.scoring
    for (const l of linked) {
      const score =
        s.search * DOCUMENT_LINK_SCORE +
        s.recency * recencyOf(now.getTime() - new Date(l.created_at).getTime(), s.recencyHalfLifeDays) +
        s.importance * (s.importanceByKind.message ?? 0)
      add(
        { eventId: l.reply_id, kind: 'message', conversationId: l.conversation_id, createdAt: iso(l.created_at), text: l.text },
        score,
        undefined,
        `document:${l.canonical_key}`,
      )
    }
    return { candidates, poolSize: poolSize + linked.length, scored: hits.length + linked.length, hits: hits.length, linked: linked.length }
  }

  /** Hypernode lookup: other conversations' replies that touched any version of a document this conversation touched. */
  async function documentLinked(db: Queryable, i: Input, now: Date, limit: number) {
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

  async function policy(db: Queryable, i: Input, namespaces: readonly string[], now: Date): Promise<Candidate[]> {
    const { rows } = await db.query<{ id: string; scope: string; namespace: string; key: string; rev: number; payload: unknown }>(
      `SELECT id, scope, namespace, key, rev, payload FROM (
         SELECT DISTINCT ON (scope, namespace, key) * FROM kv
         WHERE tenant_id = $1 AND scope = ANY($2::text[]) AND namespace = ANY($3::text[]) AND created_at <= $4
         ORDER BY scope, namespace, key, rev DESC
       ) latest
       WHERE NOT deleted
       ORDER BY array_position($2::text[], scope) DESC, namespace, key`,
      [i.tenantId, policyScopes(i), namespaces, now],
      PREPARED,
    )
    return rows.map((r, n) => ({
      id: r.id,
      kind: `kv:${r.namespace}`,
      text: `- ${payloadText(r.payload)}`,
      score: 1 - n / (rows.length + 1),
      source: { kvId: r.id, scope: r.scope, namespace: r.namespace, key: r.key, rev: r.rev },
    }))
  }

  /**
   * With an explicit `now`, the curated memories as they were then (`pastMemories`, its CTE
   * taking its parameters after those already in `p`); without, none: the memories as they are.
   */
  async function memoriesThen(db: Queryable, i: Input, now: Date, p: Params): Promise<string | undefined> {
    if (i.now === undefined) return undefined
    return pastMemories(db, p, { tenantId: i.tenantId, at: now, allowed: allowedSensitivities(i.channel) })
  }

  /**
   * The standing memories of `categories`: by confidence, which a memory's contexts scale by
   * `0.5 + priority` (the highest of its contexts'; 0.5, so once, for none), then by use.
   */
  async function curated(db: Queryable, i: Input, categories: readonly string[], now: Date): Promise<Candidate[]> {
    const p = new Params()
    for (const v of [i.tenantId, categories, now, i.userId ?? null, i.projectId ?? null, allowedSensitivities(i.channel)]) p.add(v)
    const past = await memoriesThen(db, i, now, p)
    const { rows } = await db.query<{ id: string; content: string; category: string; weight: number }>(
      `${past ? `WITH ${past}` : ''}
       SELECT m.id, m.content, m.category,
              (m.confidence * (0.5 + coalesce((
                 SELECT max(c.priority) FROM edges e
                 JOIN relations r ON r.id = e.rel AND r.name = 'BELONGS_TO_CONTEXT'
                 JOIN memory_contexts c ON c.id = e.dst
                 WHERE e.src = m.id AND e.tombstoned_at IS NULL), 0.5)))::float8 AS weight
       FROM ${past ? 'past' : 'memories'} m
       WHERE m.tenant_id = $1 AND m.status = 'active' AND m.category = ANY($2::text[]) AND m.created_at <= $3
         AND ${unexpired('$3')} AND ${readableBy('$4', '$5')} AND m.sensitivity = ANY($6::text[])
       ORDER BY weight DESC, m.use_count DESC, m.updated_at DESC, m.id
       LIMIT 500`,
      p.values,
      PREPARED,
    )
    return rows.map((r, n) => ({
      id: r.id,
      kind: `memory:${r.category}`,
      text: `- ${r.content}`,
      score: 0.9 * r.weight - n / (10 * (rows.length + 1)),
      source: { memoryId: r.id, category: r.category },
    }))
  }

  async function decisions(db: Queryable, i: Input, now: Date, omissions: ContextOmission[]): Promise<Candidate[]> {
    const p = new Params()
    for (const v of [i.tenantId, allowedSensitivities(i.channel), now, i.userId ?? null, i.query, i.projectId ?? null]) p.add(v)
    const past = await memoriesThen(db, i, now, p)
    const { rows } = await db.query<{
      id: string
      text: string
      conversation_id: string
      created_at: Date
      superseded_by: string | null
      relevant: boolean
      origin: 'event' | 'memory'
      rationale: string | null
      alternatives: string | null
      constraints: string | null
      consequences: string | null
      refs: string[] | null
    }>(
      `WITH ${past ? `${past},` : ''} q AS (
         SELECT (SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | ')
                 FROM unnest(to_tsvector('english', $5)))::tsquery AS q
       ), dec AS (
         SELECT e.id, coalesce(e.content ->> 'decision', e.content ->> 'text') AS text, e.conversation_id, e.created_at,
                e.content -> 'supersedes' AS supersedes, 'event' AS origin,
                ${textList('rationale', '; ')} AS rationale, ${textList('alternatives', ', ')} AS alternatives,
                ${textList('constraints', '; ')} AS constraints, ${textList('consequences', '; ')} AS consequences, e.refs
         FROM events e
         WHERE e.tenant_id = $1 AND e.kind = 'decision' AND e.sensitivity = ANY($2::text[]) AND e.created_at <= $3
           AND ($4::text IS NULL OR e.user_id IS NULL OR e.user_id = $4)
         UNION ALL
         SELECT m.id, m.content, NULL, m.created_at, NULL, 'memory', NULL, NULL, NULL, NULL, NULL
         FROM ${past ? 'past' : 'memories'} m
         WHERE m.tenant_id = $1 AND m.status = 'active' AND m.category = 'decision' AND m.created_at <= $3
           AND ${unexpired('$3')} AND ${readableBy('$4', '$6')} AND m.sensitivity = ANY($2::text[])
       ), superseding AS (
         SELECT d.id AS by_id, s.old_id
         FROM dec d
         CROSS JOIN LATERAL ${supersededIds('d.supersedes')}
       )
       SELECT d.id, d.text, d.conversation_id, d.created_at, d.origin, d.rationale, d.alternatives, d.constraints,
              d.consequences, d.refs, (SELECT min(by_id) FROM superseding s WHERE s.old_id = d.id) AS superseded_by,
              coalesce(to_tsvector('english', coalesce(d.text, '')) @@ (SELECT q FROM q), false) AS relevant
       FROM dec d
       ORDER BY relevant DESC, d.created_at DESC, d.id
       LIMIT 1000`,
      p.values,
      PREPARED,
    )
    const out: Candidate[] = []
    for (const [n, r] of rows.entries()) {
      if (r.superseded_by) {
        omissions.push({ id: r.id, reason: 'superseded', detail: r.superseded_by })
        continue
      }
      out.push({
        id: r.id,
        kind: r.origin === 'event' ? 'decision' : 'memory:decision',
        text: `- ${r.text ?? ''}${r.rationale ? ` — because ${r.rationale}` : ''}${r.alternatives ? `; not: ${r.alternatives}` : ''}${
          r.constraints ? `; within: ${r.constraints}` : ''
        }${r.consequences ? `; so: ${r.consequences}` : ''} (${day(r.created_at)}${r.conversation_id ? `, conversation ${r.conversation_id}` : ''})`,
        score: (r.relevant ? 1 : 0.5) - n / (10 * (rows.length + 1)),
        source: {
          [r.origin === 'event' ? 'eventId' : 'memoryId']: r.id,
          conversationId: r.conversation_id,
          // The events and chunks the decision cites as its evidence.
          ...(r.refs && r.refs.length > 0 ? { refs: r.refs } : {}),
        },
      })
    }
    return out
  }

  async function tasks(db: Queryable, i: Input, now: Date): Promise<Candidate[]> {
    const { rows } = await db.query<{ id: string; task: string; status: string | null; text: string; conversation_id: string; created_at: Date }>(
      `SELECT * FROM (
         SELECT DISTINCT ON (task) e.id, task, e.content ->> 'status' AS status,
                coalesce(e.content ->> 'text', e.content ->> 'title', e.content::text) AS text, e.conversation_id, e.created_at
         FROM events e
         CROSS JOIN LATERAL (SELECT coalesce(e.content ->> 'taskId', e.content ->> 'task', e.content ->> 'title', e.id) AS task) t
         WHERE e.tenant_id = $1 AND e.kind = 'task_update' AND e.sensitivity = ANY($2::text[]) AND e.created_at <= $3
           AND ($4::text IS NULL OR e.user_id IS NULL OR e.user_id = $4)
         ORDER BY task, e.created_at DESC, e.seq DESC
       ) latest
       WHERE coalesce(status, 'open') NOT IN ('done', 'cancelled', 'closed')
       ORDER BY (conversation_id = $5) DESC, created_at DESC, id
       LIMIT 500`,
      [i.tenantId, allowedSensitivities(i.channel), now, i.userId ?? null, i.conversationId ?? null],
      PREPARED,
    )
    return rows.map((r, n) => ({
      id: r.id,
      kind: 'task_update',
      text: `- [${r.status ?? 'open'}] ${r.task === r.id ? '' : `${r.task}: `}${r.text}`,
      score: 1 - n / (rows.length + 1),
      source: { eventId: r.id, task: r.task, conversationId: r.conversation_id },
    }))
  }

  async function recent(db: Queryable, i: Input, now: Date): Promise<Candidate[]> {
    if (!i.conversationId) return []
    const { rows } = await db.query<{ id: string; actor_type: string; actor_id: string; text: string; n: number }>(
      `SELECT e.id, e.actor_type, e.actor_id, e.content ->> 'text' AS text,
              row_number() OVER (ORDER BY e.created_at DESC, e.seq DESC)::int AS n
       FROM events e
       WHERE e.tenant_id = $1 AND e.conversation_id = $2 AND e.kind = 'message'
         AND e.sensitivity = ANY($3::text[]) AND e.created_at <= $4
         AND ($5::text IS NULL OR e.user_id IS NULL OR e.user_id = $5)
       ORDER BY e.created_at DESC, e.seq DESC
       LIMIT 200`,
      [i.tenantId, i.conversationId, allowedSensitivities(i.channel), now, i.userId ?? null],
      PREPARED,
    )
    return rows.map((r) => ({
      id: r.id,
      kind: 'message',
      text: `${r.actor_type === 'human' ? 'User' : r.actor_type === 'agent' ? 'Agent' : 'Tool'} (${r.actor_id}): ${r.text}`,
      score: 1 / r.n,
      truncatable: true,
      source: { eventId: r.id, conversationId: i.conversationId ?? null },
    }))
  }

  async function handoff(db: Queryable, i: Input, now: Date): Promise<Candidate[]> {
    const { rows } = await db.query<{ id: string; actor_id: string; text: string; conversation_id: string; created_at: Date }>(
      `SELECT e.id, e.actor_id, coalesce(e.content ->> 'text', e.content ->> 'decision', e.content::text) AS text,
              e.conversation_id, e.created_at
       FROM events e
       WHERE e.tenant_id = $1 AND 'handoff' = ANY(e.tags) AND e.sensitivity = ANY($2::text[]) AND e.created_at <= $3
         AND (e.content ->> 'to' IS NULL OR e.content ->> 'to' = $4)
         AND ($5::text IS NULL OR e.conversation_id = $5 OR e.content ->> 'to' = $4)
         AND ($4::text IS NULL OR e.agent_id IS DISTINCT FROM $4)
         AND ($6::text IS NULL OR e.user_id IS NULL OR e.user_id = $6)
       ORDER BY e.created_at DESC, e.seq DESC
       LIMIT 100`,
      [i.tenantId, allowedSensitivities(i.channel), now, i.agentId ?? null, i.conversationId ?? null, i.userId ?? null],
      PREPARED,
    )
    return rows.map((r, n) => ({
      id: r.id,
      kind: 'handoff',
      text: `- from ${r.actor_id} (${day(r.created_at)}, conversation ${r.conversation_id}): ${r.text}`,
      score: 1 - n / (rows.length + 1),
      truncatable: true,
      source: { eventId: r.id, conversationId: r.conversation_id },
    }))
  }

  function caps(i: Input): Record<SectionName, number> {
    const scaled = Object.fromEntries(
      SECTION_NAMES.map((n) => [n, i.sections?.[n] ?? Math.floor((DEFAULT_SECTION_CAPS[n] * i.maxTokens) / DEFAULT_CONTEXT_BUDGET)]),
    ) as Record<SectionName, number>
    let left = i.maxTokens
    for (const n of BY_PRIORITY) {
      scaled[n] = Math.min(scaled[n], left)
      left -= scaled[n]
    }
    return scaled
  }

  /** Packs candidates by score (ties by id) until the cap; one that is too long may be cut to fit. */
  function pack(name: SectionName, cap: number, candidates: Candidate[], omissions: ContextOmission[]): ContextSection {
    const header = `## ${SECTION_TITLES[name]}`
    const headerTokens = count(header)
    const sorted = [...candidates].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    const items: ContextItem[] = []
    const bodies = new Map<string, string>()
    let used = 0
    for (const c of sorted) {
      if (c.body !== undefined) {
        const first = bodies.get(c.body)
        if (first !== undefined) {
          omissions.push({ id: c.id, reason: 'duplicate', detail: first })
          continue
        }
        bodies.set(c.body, c.id)
      }
      const room = cap - used - (items.length === 0 ? headerTokens : 0)
      let text = c.text
      let tokens = count(text)
      if (tokens > room && c.truncatable && room > 32) {
        const cut = keepingLast(text, c.keep, room, count) ?? fitText(text, room, count)
        if (cut !== null) {
          omissions.push({ id: c.id, reason: 'truncated_to_fit', detail: `${name}: ${tokens} → ${count(cut)} tokens` })
          text = cut
          tokens = count(cut)
        }
      }
      if (tokens > room) {
        omissions.push({ id: c.id, reason: 'over_section_cap', detail: name })
        continue
      }
      used += tokens + (items.length === 0 ? headerTokens : 0)
      items.push({ id: c.id, kind: c.kind, text, tokens, score: c.score, ...(c.explain ? { explain: c.explain } : {}), source: c.source })
    }
    return { name, capTokens: cap, usedTokens: used, items }
  }

  function render(sections: ContextSection[]): string {
    return sections
      .filter((s) => s.items.length > 0)
      .map((s) => {
        const chronological = s.name === 'recent_window' ? [...s.items].reverse() : s.items
        return `## ${SECTION_TITLES[s.name]}\n${chronological.map((it) => it.text).join('\n\n')}`
      })
      .join('\n\n')
  }

  return {
    /**
     * The past turns that events belong to — for each search hit, the question, the answer,
     * the procedures of the answer and the document versions they saw, with how stale each
     * is now (or at `asOf`) — in the order asked, leaving out ids that are no event of the
     * tenant, or above what `channel` may show. An event recorded outside a turn comes back
     * with null question and answer.
     *
     * @example
     * const hits = await memory.search('why does login fail?')
     * const [turn] = await memory.turns(hits.map((h) => h.eventId))
     */
    async turns(eventIds: readonly string[], options: TurnsOptions = {}): Promise<TurnView[]> {
      const ids = parseInput(z.array(identifier).max(1000), eventIds, 'event ids')
      const o = parseInput(turnsOptions, options, 'turn options')
      if (ids.length === 0) return []
      const asOf = o.asOf === undefined ? null : toDate(o.asOf)
      return ctx.db.transaction(async (tx) => {
        const { rows } = await tx.query<{ id: string }>(
          `SELECT id FROM events WHERE id = ANY($1::text[]) AND tenant_id = $2 AND sensitivity = ANY($3::text[])
             AND ($4::timestamptz IS NULL OR created_at <= $4)`,
          [ids, o.tenantId, allowedSensitivities(o.channel), asOf],
        )
        const visible = new Set(rows.map((r) => r.id))
        const found = await expandTurns(tx, [...visible], o.tenantId, asOf)
        return ids.flatMap((id) => {
          const t = found.get(id)
          if (!visible.has(id) || !t) return []
          return [
            {
              eventId: id,
              userEventId: t.user_event_id,
              userText: t.user_event_id ? t.user_text : null,
              replyEventId: t.user_event_id ? t.reply_event_id : null,
              replyText: t.user_event_id ? t.reply_text : null,
              procedures: (t.procedures ?? []).map((p) => ({
                tool: p.tool,
                args: p.args,
                versionId: p.version_id,
                document: p.key,
                version: p.version,
                latestVersion: p.latest,
                staleness: p.version === null || p.latest === null ? null : p.latest - p.version,
              })),
            },
          ]
        })
      })
    },

    /**
     * Builds the Active Context Bundle for the next model call: identity and rules (policy
     * memory and curated instructions, constraints, conventions), open tasks, decisions (not
     * superseded), evidence retrieved from other conversations (search, plus past turns that
     * touched the same documents) shown as question, procedures, answer and documents with
     * their staleness, the recent window of this conversation, and handoff notes. Each
     * section is packed by score up to its cap; the whole never exceeds `maxTokens` under the
     * engine's token counter. Same memory and input → same bundle (while the planner's
     * statistics stay the same: docs/retrieval-and-context.md).
     *
     * @example
     * const bundle = await memory.buildContext({ query: 'why does login fail?', conversationId: 'c9', maxTokens: 8000 })
     * prompt = bundle.text + '\n\n' + userMessage
     */
    async buildContext(input: BuildContextInput): Promise<ContextBundle> {
      const i = parseInput(contextInput, input, 'context request')
      const now = i.now === undefined ? ctx.now() : toDate(i.now)
      const omissions: ContextOmission[] = []
      const cap = caps(i)

      // The query is validated and embedded before any read; then every read runs in one
      // transaction: the sections come from one state of the memory, each statement is kept
      // prepared, and PGlite flushes its storage once, not after each.
      const limits = passLimits(cap.retrieved_evidence)
      const plan = i.retrieval ? await planEvidence(i, now, limits.first) : null
      const read = await ctx.db.transaction(async (sqlTx) => {
        // Sections cut and count their text: sealed text is opened as it is read.
        const tx = openingReads(ctx.vault, sqlTx)
        const sections = await Promise.all([
          policy(tx, i, IDENTITY_NAMESPACES, now),
          // Rules and the policy memory's decisions in one read, parted by namespace below.
          policy(tx, i, [...RULE_NAMESPACES, ...DECISION_NAMESPACES], now),
          curated(tx, i, RULE_CATEGORIES, now),
          tasks(tx, i, now),
          decisions(tx, i, now, omissions),
          recent(tx, i, now),
          handoff(tx, i, now),
          tx.query<{ terms: string[] | null }>(
            `SELECT array_agg(DISTINCT lexeme ORDER BY lexeme) AS terms FROM unnest(to_tsvector('english', $1))`,
            [i.query],
            PREPARED,
          ),
        ])
        // Last: the search's settings hold for the rest of the transaction.
        const evidence = plan ? await retrieved(tx, i, now, plan, omissions, cap.retrieved_evidence, limits) : null
        return { sections, evidence }
      })
      const [identity, policyItems, memoryRules, taskItems, decisionItems, recentItems, handoffItems, terms] = read.sections
      const isDecision = (c: Candidate) => (DECISION_NAMESPACES as readonly string[]).includes(String(c.source.namespace))
      const rules = policyItems.filter((c) => !isDecision(c))
      const policyDecisions = policyItems.filter(isDecision)
      const evidence = read.evidence ?? { candidates: [], poolSize: 0, scored: 0, searchLimit: 0, searchPasses: 0 }
      if (!i.retrieval) omissions.push({ reason: 'retrieval_skipped' })

      const candidatesBySection: Record<SectionName, Candidate[]> = {
        identity,
        rules: [...rules, ...memoryRules],
        task_state: taskItems,
        // Standing decisions of the policy memory first, then those the log recorded.
        decision_ledger: [...policyDecisions.map((c) => ({ ...c, score: 1 + c.score })), ...decisionItems],
        retrieved_evidence: evidence.candidates,
        recent_window: recentItems,
        handoff_packet: handoffItems,
      }
      // The evidence is packed last: an event another section holds (a standing decision, a
      // task's state, a handoff note), or a decision the ledger left out as superseded, is no
      // evidence besides.
      const packed = new Map<SectionName, ContextSection>()
      for (const n of SECTION_NAMES) if (n !== 'retrieved_evidence') packed.set(n, pack(n, cap[n], candidatesBySection[n], omissions))
      const placed = new Set<unknown>([
        ...(['decision_ledger', 'task_state', 'handoff_packet'] as const).flatMap((n) => packed.get(n)?.items.map((it) => it.source.eventId) ?? []),
        ...omissions.filter((o) => o.reason === 'superseded').map((o) => o.id),
      ])
      const fresh = evidence.candidates.filter((c) => !placed.has(c.source.eventId))
      packed.set('retrieved_evidence', pack('retrieved_evidence', cap.retrieved_evidence, fresh, omissions))
      const sections = SECTION_NAMES.map((n) => packed.get(n) as ContextSection)

      // Section caps add up to at most the budget, but a tokenizer need not be additive over
      // joined text: drop items until the rendered text fits, the lowest-scored of the
      // lowest-priority section that has any.
      let text = render(sections)
      while (count(text) > i.maxTokens) {
        const s = LOWEST_PRIORITY_FIRST.map((n) => sections.find((x) => x.name === n) as ContextSection).find((x) => x.items.length > 0)
        if (!s) break
        let worst: { s: ContextSection; k: number } | undefined
        for (const [k, it] of s.items.entries()) {
          if (!worst || it.score < (worst.s.items[worst.k]?.score ?? Infinity)) worst = { s, k }
        }
        if (!worst) break
        const [dropped] = worst.s.items.splice(worst.k, 1)
        if (dropped) {
          worst.s.usedTokens -= dropped.tokens
          omissions.push({ id: dropped.id, reason: 'over_budget', detail: worst.s.name })
        }
        text = render(sections)
      }
      for (const s of sections) {
        if (s.items.length === 0) s.usedTokens = 0
      }

      return {
        id: newId('bundle'),
        budgetTokens: i.maxTokens,
        tokenUsedEst: count(text),
        sections,
        omissions,
        provenance: {
          intent: i.intent ?? null,
          queryTerms: terms.rows[0]?.terms ?? [],
          poolSize: evidence.poolSize,
          scored: evidence.scored,
          searchLimit: evidence.searchLimit,
          searchPasses: evidence.searchPasses,
          filters: {
            tenantId: i.tenantId,
            userId: i.userId ?? null,
            agentId: i.agentId ?? null,
            channel: i.channel,
            sensitivityAllowed: allowedSensitivities(i.channel),
            excludeConversation: i.conversationId ?? null,
          },
          weights: { ...ctx.scoring, importanceByKind: { ...ctx.scoring.importanceByKind } },
          tokenizer: ctx.tokenCounter ? 'custom' : 'estimateTokens',
        },
        text,
      }
    },
  }
}
