// Each section's read but the evidence: policy memory (identity, rules, standing decisions),
// curated memories, the decision ledger, open tasks, the recent window and handoff notes.
import { Params } from '../db/params.ts'
import type { Queryable } from '../kernel/db.ts'
import { supersededIds } from '../log/events.ts'
import { pastMemories, readableBy, unexpired } from '../memories/memories.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import type { Candidate, ContextOmission } from './context-bundle.ts'
import type { ContextInput, SectionName } from './context-input.ts'
import { day } from './context-render.ts'

/** Sections read with statements kept prepared: they run on every call, with the same text. */
export const PREPARED = { prepare: true } as const

/** Policy-memory namespaces read into the identity and rules sections. */
export const IDENTITY_NAMESPACES = ['identity'] as const
export const RULE_NAMESPACES = ['rules', 'constraints', 'conventions', 'procedures'] as const
/** Policy-memory namespaces read into the decision ledger, beside the decisions of the log. */
export const DECISION_NAMESPACES = ['decisions'] as const
/** Curated-memory categories read into the rules section. */
export const RULE_CATEGORIES = ['instruction', 'constraint', 'convention'] as const

/** A policy entry's payload as text: the string itself, its `text` field, or its JSON. */
function payloadText(payload: unknown): string {
  if (typeof payload === 'string') return payload
  if (payload && typeof payload === 'object' && 'text' in payload && typeof payload.text === 'string') return payload.text
  return JSON.stringify(payload)
}

/** The policy-memory scopes that apply, broadest first (the read lists the narrowest's entries first). */
function policyScopes(i: ContextInput): string[] {
  return [
    'global',
    ...(i.userId ? [`user:${i.userId}`] : []),
    ...(i.projectId ? [`project:${i.projectId}`] : []),
    ...(i.agentId ? [`agent:${i.agentId}`] : []),
    ...(i.conversationId ? [`conversation:${i.conversationId}`] : []),
  ]
}

/** A decision's content field as text: a string, or an array's items joined by `separator`; else null. */
function textList(field: string, separator: string): string {
  const at = `e.content -> '${field}'`
  return `CASE jsonb_typeof(${at}) WHEN 'string' THEN ${at} #>> '{}'
            WHEN 'array' THEN (SELECT string_agg(a, '${separator}') FROM jsonb_array_elements_text(${at}) a) END`
}

/** The latest live entries of the policy memory's `namespaces` in the scopes that apply, narrowest scope first. */
async function policy(db: Queryable, i: ContextInput, namespaces: readonly string[], now: Date): Promise<Candidate[]> {
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
async function memoriesThen(db: Queryable, i: ContextInput, now: Date, p: Params): Promise<string | undefined> {
  if (i.now === undefined) return undefined
  return pastMemories(db, p, { tenantId: i.tenantId, at: now, allowed: allowedSensitivities(i.channel) })
}

/**
 * The standing memories of `categories`: by confidence, which a memory's contexts scale by
 * `0.5 + priority` (the highest of its contexts'; 0.5, so once, for none), then by use.
 */
async function curated(db: Queryable, i: ContextInput, categories: readonly string[], now: Date): Promise<Candidate[]> {
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

/**
 * The decision ledger: decisions of the log and curated ones, those matching the query first.
 * A superseded decision is left out and noted in `omissions`.
 */
async function decisions(db: Queryable, i: ContextInput, now: Date, omissions: ContextOmission[]): Promise<Candidate[]> {
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

/** Each task's latest state, open ones only, this conversation's first. */
async function tasks(db: Queryable, i: ContextInput, now: Date): Promise<Candidate[]> {
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

/** This conversation's latest messages, newest first (rendered oldest first). */
async function recent(db: Queryable, i: ContextInput, now: Date): Promise<Candidate[]> {
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

/** Handoff notes from other agents, for this agent or anyone: in this conversation or addressed to it; newest first. */
async function handoff(db: Queryable, i: ContextInput, now: Date): Promise<Candidate[]> {
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

/** The query's distinct lexemes, as the bundle's provenance reports them. */
async function queryTerms(db: Queryable, i: ContextInput): Promise<string[]> {
  const terms = await db.query<{ terms: string[] | null }>(
    `SELECT array_agg(DISTINCT lexeme ORDER BY lexeme) AS terms FROM unnest(to_tsvector('english', $1))`,
    [i.query],
    PREPARED,
  )
  return terms.rows[0]?.terms ?? []
}

/** Every section's candidates but the evidence's, and the query's terms. */
export interface SectionReads {
  candidates: Omit<Record<SectionName, Candidate[]>, 'retrieved_evidence'>
  queryTerms: string[]
}

/**
 * Reads every section but the evidence, all at once on `db`; a superseded decision is noted
 * in `omissions`. The policy memory's decisions join the decision ledger.
 */
export async function readSections(db: Queryable, i: ContextInput, now: Date, omissions: ContextOmission[]): Promise<SectionReads> {
  const [identity, policyItems, memoryRules, taskItems, decisionItems, recentItems, handoffItems, terms] = await Promise.all([
    policy(db, i, IDENTITY_NAMESPACES, now),
    // Rules and the policy memory's decisions in one read, parted by namespace below.
    policy(db, i, [...RULE_NAMESPACES, ...DECISION_NAMESPACES], now),
    curated(db, i, RULE_CATEGORIES, now),
    tasks(db, i, now),
    decisions(db, i, now, omissions),
    recent(db, i, now),
    handoff(db, i, now),
    queryTerms(db, i),
  ])
  const isDecision = (c: Candidate) => (DECISION_NAMESPACES as readonly string[]).includes(String(c.source.namespace))
  const rules = policyItems.filter((c) => !isDecision(c))
  const policyDecisions = policyItems.filter(isDecision)
  return {
    candidates: {
      identity,
      rules: [...rules, ...memoryRules],
      task_state: taskItems,
      // Standing decisions of the policy memory first, then those the log recorded.
      decision_ledger: [...policyDecisions.map((c) => ({ ...c, score: 1 + c.score })), ...decisionItems],
      recent_window: recentItems,
      handoff_packet: handoffItems,
    },
    queryTerms: terms,
  }
}
