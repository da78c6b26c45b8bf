import type { Db, Queryable } from '../kernel/db.ts'
import { Params } from '../db/params.ts'
import { embedderFailed, toVectorParam } from '../kernel/embedder.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { type JsonObject, missingReferences, writeEdges } from '../graph/entities.ts'
import { MemoryError } from '../kernel/errors.ts'
import type { FilterColumn } from '../db/filters.ts'
import { memoryHash, normalizeMemoryText } from '../kernel/hash.ts'
import { jsonRecord, storableText } from '../kernel/json.ts'
import { refuseSecret } from '../log/events.ts'
import { newId } from '../kernel/ids.ts'
import { allowedSensitivities, readChannel } from '../privacy/channels.ts'
import { countRedactions, mergeRedactions, type RedactionCount, redact, redactUnknown } from '../privacy/redact.ts'
import { identifier, SENSITIVITIES, type StoredSensitivity } from '../kernel/scope.ts'
import { entityId, storedName } from '../graph/edges.ts'
import { indexedVector, vectorScanSettings } from '../db/vectors.ts'
import { DEFAULT_SCORING, Z_WINDOW, zFused, zListStats, zOf } from '../kernel/scoring.ts'
import { timeInput, toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { isSealed, refuseSealedLookalike, SEALED_SQL, vaultLocked, vaultMadeSince } from '../privacy/vault.ts'

export const MEMORY_CATEGORIES = [
  'preference',
  'pattern',
  'correction',
  'fact',
  'instruction',
  'convention',
  'decision',
  'constraint',
  'procedure',
] as const
export const MEMORY_SOURCES = ['explicit', 'inferred', 'corrected'] as const
export const MEMORY_SCOPES = ['user', 'project', 'global'] as const

export type MemoryCategory = (typeof MEMORY_CATEGORIES)[number]
export type MemorySource = (typeof MEMORY_SOURCES)[number]
export type MemoryScope = (typeof MEMORY_SCOPES)[number]
export type MemoryStatus = 'active' | 'superseded' | 'deleted'

/** How sure Engram is of a memory, by how it was learnt. */
export const CONFIDENCE_BY_SOURCE: Record<MemorySource, number> = {
  explicit: 1,
  corrected: 0.9,
  inferred: 0.7,
}

/** Memories rank with search's default constants: rrfK, zShift, BM25's k1 and b. */
const { rrfK: RRF_K, zShift: Z_SHIFT, bm25K1: BM25_K1, bm25B: BM25_B } = DEFAULT_SCORING
/** How a memory search combines its vector and keyword rankings (`MemoryScores.fused`). */
export const MEMORY_FUSIONS = ['zscore', 'rrf'] as const
export type MemoryFusion = (typeof MEMORY_FUSIONS)[number]
/** Characters of a memory's text, after trimming. */
export const MAX_MEMORY_CONTENT = 20_000
const MAX_CONTENT = MAX_MEMORY_CONTENT

export interface MemoryRecord {
  id: string
  content: string
  category: MemoryCategory
  source: MemorySource
  confidence: number
  scope: MemoryScope
  tenantId: string
  userId: string | null
  agentId: string | null
  runId: string | null
  projectId: string | null
  /** Which channels may show it (see `allowedSensitivities`). */
  sensitivity: StoredSensitivity
  metadata: JsonObject
  hash: string
  status: MemoryStatus
  supersededBy: string | null
  useCount: number
  lastUsedAt: Date | null
  embedModel: string | null
  /** Names of the memory contexts the memory is filed under. */
  contexts: string[]
  /** The ids of the entities it is relevant to (`remember({ relatedTo })`). */
  relatedTo: string[]
  /** The name it was saved under (`remember({ key })`), or null. */
  key: string | null
  /**
   * When it expires, or null for never: from then on it leaves recall, search, listing (but
   * `status: 'expired'` or `'any'`) and the context's standing memories, and stays readable
   * by id with its history.
   */
  expiresAt: Date | null
  createdAt: Date
  updatedAt: Date
}

/** Why a memory was found: its fused score and the two signals behind it. */
export interface MemoryScores {
  /**
   * The two rankings fused, higher is better. `zscore` (default): each list's score is
   * standardised over the list's best `Z_WINDOW`, z = (score − mean) / standard deviation, a
   * memory missing from a list, or below that window, counting as the window's lowest z;
   * fused = max(0, z̄ + 6) / 9 with z̄ the mean of the lists' z's (1 for a memory 3 standard
   * deviations above the mean in both). `rrf`: Σ 1 / (60 + rank).
   */
  fused: number
  /** Cosine similarity to the query, or null when not compared (no embedder, no vector). */
  vector: number | null
  /**
   * BM25 score of the query's words (k1 1.2, b 0.75, document frequencies and mean length over
   * the memories the call may see), or null when no query word matched.
   */
  keyword: number | null
}

export type MemoryHit = MemoryRecord & { scores: MemoryScores }

/** A memory_history row as stored (its time a Date, or text when read through JSON). */
export interface HistoryRow {
  id: string
  memory_id: string
  event: 'ADD' | 'UPDATE' | 'DELETE'
  old_value: string | null
  new_value: string | null
  changes: JsonObject
  is_deleted: boolean
  user_id: string | null
  agent_id: string | null
  run_id: string | null
  created_at: Date | string
}

export function toHistory(r: HistoryRow): MemoryHistoryRecord {
  return {
    id: r.id,
    memoryId: r.memory_id,
    event: r.event,
    oldValue: r.old_value,
    newValue: r.new_value,
    changes: r.changes,
    isDeleted: r.is_deleted,
    userId: r.user_id,
    agentId: r.agent_id,
    runId: r.run_id,
    createdAt: new Date(r.created_at),
  }
}

export interface MemoryHistoryRecord {
  id: string
  memoryId: string
  event: 'ADD' | 'UPDATE' | 'DELETE'
  oldValue: string | null
  newValue: string | null
  /** Other fields the change touched, e.g. `{ status: ['active', 'superseded'], supersededBy }`. */
  changes: JsonObject
  isDeleted: boolean
  userId: string | null
  agentId: string | null
  runId: string | null
  createdAt: Date
}

export interface RememberResult {
  id: string
  action: 'created' | 'superseded' | 'unchanged'
  supersededId?: string
  /** Secrets replaced before the memory was stored, by type; absent when there were none. */
  redactions?: RedactionCount[]
}

/** Tenant, user, agent, run and project ids, as everywhere: `identifier` (MAX_ID_LENGTH). */
const idField = identifier
const identity = {
  tenantId: idField.default('default'),
  userId: idField.optional(),
  agentId: idField.optional(),
  runId: idField.optional(),
  projectId: idField.optional(),
}
const metadataSchema = jsonRecord
const relevantToField = z.array(entityId).min(1).max(100).optional()
const memoryIdSchema = storedName(200)
/** A name as stored, trimmed: a context's, a key. Text Postgres would alter is refused, so two names never become one. */
const trimmedName = storableText.pipe(z.string().trim().min(1).max(200))
const filterSchema = z.unknown().optional()

const contextInput = z.strictObject({
  name: trimmedName,
  description: z.string().trim().max(1000).optional(),
  /** 0–1; memories in a context of higher priority are surfaced first. Default 0.5. */
  priority: z.number().min(0).max(1).optional(),
  tenantId: idField.default('default'),
  userId: idField.optional(),
})
export type MemoryContextInput = z.input<typeof contextInput>
const contextsOptions = z.strictObject({ tenantId: idField.default('default'), userId: idField.optional() })
export type MemoryContextsOptions = z.input<typeof contextsOptions>

/** A group of related memories (`remember({ context })`), with what it is and how much it weighs. */
export interface MemoryContextRecord {
  id: string
  name: string
  description: string | null
  priority: number
  tenantId: string
  userId: string | null
  /** Active memories filed under it. */
  memories: number
  createdAt: Date
}

const rememberInput = z
  .strictObject({
    content: z.string().trim().min(1).max(MAX_CONTENT),
    category: z.enum(MEMORY_CATEGORIES),
    source: z.enum(MEMORY_SOURCES).default('inferred'),
    scope: z.enum(MEMORY_SCOPES).default('user'),
    confidence: z.number().min(0).max(1).optional(),
    /** `secret` is refused: secrets are never stored. */
    sensitivity: z.enum(SENSITIVITIES).default('none'),
    context: trimmedName.optional(),
    /**
     * A name to save it under: saving again under the same key (in the same scope) replaces
     * the memory it names, however different the new text; the same text is `unchanged`.
     */
    key: trimmedName.optional(),
    relatedTo: z.array(entityId).max(100).optional(),
    derivedFrom: z.array(entityId).max(100).optional(),
    metadata: metadataSchema.default({}),
    /** `semantic` (default) also supersedes near duplicates; `exact` only skips identical text. */
    dedup: z.enum(['semantic', 'exact']).default('semantic'),
    /**
     * Where a duplicate (or the memory of a `key`) is looked for. `user` (default): among the
     * memories `recall` reads with this one — same tenant, scope, user and project, saved by
     * any agent or run. `identity`: also the same agent and run (the mem0 facade's scopes).
     */
    dedupScope: z.enum(['user', 'identity']).default('user'),
    /** When it expires (see `MemoryRecord.expiresAt`); never when left out. */
    expiresAt: timeInput.optional(),
    ...identity,
  })
  .refine((v) => v.scope !== 'project' || v.projectId !== undefined, {
    message: 'a project memory needs a projectId',
    path: ['projectId'],
  })
export type RememberInput = z.input<typeof rememberInput>

const recallOptions = z.strictObject({
  category: z.union([z.enum(MEMORY_CATEGORIES), z.array(z.enum(MEMORY_CATEGORIES)).min(1)]).optional(),
  scope: z.enum(MEMORY_SCOPES).optional(),
  limit: z.number().int().min(1).max(50).default(10),
  /** Vector matches at or below this cosine similarity do not count (keyword matches still do). */
  minSimilarity: z.number().min(-1).max(1).default(0),
  /** How the vector and keyword rankings are combined (see `MemoryScores.fused`). */
  fusion: z.enum(MEMORY_FUSIONS).default('zscore'),
  filters: filterSchema,
  tenantId: idField.default('default'),
  userId: idField.optional(),
  projectId: idField.optional(),
  /** Only memories relevant to any of these entity ids (`remember({ relatedTo })`), e.g. the file at hand. */
  relevantTo: relevantToField,
  /** The channel the memories will be shown in: those above its allowance are left out. */
  channel: readChannel,
  /**
   * The memories as they were then (see `memoriesAsOf`), ranked by their text then; expiry is
   * judged at that time, and recalling the past counts as no use.
   */
  asOf: timeInput.optional(),
})
export type RecallOptions = z.input<typeof recallOptions>

/** Picks memories by exact match on every identity field given (AND), mem0 style. */
const selector = {
  tenantId: idField.default('default'),
  userId: idField.optional(),
  agentId: idField.optional(),
  runId: idField.optional(),
  projectId: idField.optional(),
  scope: z.enum(MEMORY_SCOPES).optional(),
  category: z.union([z.enum(MEMORY_CATEGORIES), z.array(z.enum(MEMORY_CATEGORIES)).min(1)]).optional(),
  /** Only memories relevant to any of these entity ids (`remember({ relatedTo })`). */
  relevantTo: relevantToField,
  filters: filterSchema,
}

const searchOptions = z.strictObject({
  ...selector,
  channel: readChannel,
  limit: z.number().int().min(1).max(1000).default(100),
  /** Vector matches at or below this cosine similarity do not count (keyword matches still do). */
  minSimilarity: z.number().min(-1).max(1).default(0),
  /** How the vector and keyword rankings are combined (see `MemoryScores.fused`). */
  fusion: z.enum(MEMORY_FUSIONS).default('zscore'),
  /** The memories as they were then (see `memoriesAsOf`), ranked by their text then. */
  asOf: timeInput.optional(),
})
export type MemorySearchOptions = z.input<typeof searchOptions>

const listOptions = z.strictObject({
  ...selector,
  /** Only the memory (or, with `status`, the memories) saved under this key. */
  key: trimmedName.optional(),
  channel: readChannel,
  /** `active` leaves out expired memories; `expired` lists only them (active, past `expiresAt`). */
  status: z.enum(['active', 'expired', 'superseded', 'deleted', 'any']).default('active'),
  limit: z.number().int().min(1).max(10_000).default(100),
  /**
   * The memories as they were then: those created by that time, with the status, text and
   * fields they had (see `memoriesAsOf`); `status` and expiry are judged at that time.
   */
  asOf: timeInput.optional(),
})
export type MemoryListOptions = z.input<typeof listOptions>

const updateInput = z
  .strictObject({
    content: z.string().trim().min(1).max(MAX_CONTENT).optional(),
    category: z.enum(MEMORY_CATEGORIES).optional(),
    confidence: z.number().min(0).max(1).optional(),
    sensitivity: z.enum(SENSITIVITIES).optional(),
    metadata: metadataSchema.optional(),
    /** A new expiry; null: it never expires (an expired memory comes back). */
    expiresAt: timeInput.nullable().optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'nothing to update' })

const byIdOptions = z.strictObject({ tenantId: idField.default('default') })
const getOptions = z.strictObject({
  tenantId: idField.default('default'),
  channel: readChannel,
  /** The memory as it was then (see `memoriesAsOf`). */
  asOf: timeInput.optional(),
})
/** Options of the reads and changes by id: the tenant the memory must belong to (default 'default'). */
export type MemoryByIdOptions = z.input<typeof byIdOptions>
export type MemoryGetOptions = z.input<typeof getOptions>
export type MemoryUpdate = z.input<typeof updateInput>

const forgetAllInput = z.strictObject({
  ...selector,
  /** Only the memories past their `expiresAt` (a clean-up of what has expired). */
  expired: z.literal(true).optional(),
  confirm: z.literal(true),
})
export type ForgetAllInput = z.input<typeof forgetAllInput>

const resetInput = z.strictObject({
  confirm: z.literal(true),
  /** Only this tenant's memories; left out, every tenant's. */
  tenantId: idField.optional(),
})
export type MemoryResetInput = z.input<typeof resetInput>

export { memoryHash, normalizeMemoryText }


/**
 * A memory that `user` may read (placeholders): a global one, one of the user's, or a project
 * memory of the user's in `project` (a project memory is seen only in its own project).
 */
export function readableBy(user: string, project: string, alias = 'm'): string {
  return `(${alias}.scope = 'global'
        OR (${alias}.scope = 'user' AND ${alias}.user_id IS NOT DISTINCT FROM ${user})
        OR (${alias}.scope = 'project' AND ${alias}.user_id IS NOT DISTINCT FROM ${user} AND ${alias}.project_id = ${project}))`
}

/** `readableBy` for a row in hand. */
function readableRow(r: MemoryRow, user: string | null, project: string | null): boolean {
  return r.scope === 'global' || (r.user_id === user && (r.scope === 'user' || (r.scope === 'project' && r.project_id === project)))
}

/** The identity fields of `selectWhere` (those a memory never changes) for a row in hand. */
function selectedRow(r: MemoryRow, s: { userId?: string | undefined; agentId?: string | undefined; runId?: string | undefined; projectId?: string | undefined; scope?: string | undefined }): boolean {
  return (
    (s.userId === undefined || r.user_id === s.userId) &&
    (s.agentId === undefined || r.agent_id === s.agentId) &&
    (s.runId === undefined || r.run_id === s.runId) &&
    (s.projectId === undefined || r.project_id === s.projectId) &&
    (s.scope === undefined || r.scope === s.scope)
  )
}

/** A memory that has not expired at `at` (a parameter placeholder). */
export function unexpired(at: string, alias = 'm'): string {
  return `(${alias}.expires_at IS NULL OR ${alias}.expires_at > ${at})`
}

const text = (sql: string): FilterColumn => ({ sql, type: 'text' })
const num = (sql: string): FilterColumn => ({ sql, type: 'number' })
const time = (sql: string): FilterColumn => ({ sql, type: 'timestamp' })

/** Where a filter looks up a field that is not a column. */
const MEMORY_FILTER_JSON = 'm.metadata'

/** Fields a filter may name besides metadata keys; snake_case and camelCase both work. */
export const MEMORY_FILTER_COLUMNS: Record<string, FilterColumn> = {
  id: text('m.id'),
  memory: text('m.content'),
  content: text('m.content'),
  hash: text('m.hash'),
  category: text('m.category'),
  source: text('m.source'),
  scope: text('m.scope'),
  user_id: text('m.user_id'),
  userId: text('m.user_id'),
  agent_id: text('m.agent_id'),
  agentId: text('m.agent_id'),
  run_id: text('m.run_id'),
  runId: text('m.run_id'),
  project_id: text('m.project_id'),
  projectId: text('m.project_id'),
  sensitivity: text('m.sensitivity'),
  confidence: num('m.confidence'),
  use_count: num('m.use_count'),
  useCount: num('m.use_count'),
  created_at: time('m.created_at'),
  createdAt: time('m.created_at'),
  updated_at: time('m.updated_at'),
  updatedAt: time('m.updated_at'),
  expires_at: time('m.expires_at'),
  expiresAt: time('m.expires_at'),
  last_used_at: time('m.last_used_at'),
  lastUsedAt: time('m.last_used_at'),
}

const COLUMNS = `m.id, m.content, m.category, m.source, m.confidence, m.scope, m.tenant_id, m.user_id,
  m.agent_id, m.run_id, m.project_id, m.sensitivity, m.metadata, m.hash, m.status, m.superseded_by, m.use_count,
  m.last_used_at, m.embed_model, m.key, m.expires_at, m.created_at, m.updated_at,
  (SELECT jsonb_build_object(
            'contexts', coalesce(jsonb_agg(c.name ORDER BY c.name) FILTER (WHERE c.name IS NOT NULL), '[]'),
            'relatedTo', coalesce(jsonb_agg(e.dst ORDER BY e.dst) FILTER (WHERE r.name = 'RELEVANT_TO'), '[]'))
   FROM edges e
   JOIN relations r ON r.id = e.rel AND r.name IN ('BELONGS_TO_CONTEXT', 'RELEVANT_TO')
   LEFT JOIN memory_contexts c ON r.name = 'BELONGS_TO_CONTEXT' AND c.id = e.dst
   WHERE e.src = m.id AND e.tombstoned_at IS NULL) AS links`

interface MemoryRow {
  id: string
  content: string
  category: MemoryCategory
  source: MemorySource
  confidence: number
  scope: MemoryScope
  tenant_id: string
  user_id: string | null
  agent_id: string | null
  run_id: string | null
  project_id: string | null
  sensitivity: StoredSensitivity
  metadata: JsonObject
  hash: string
  status: MemoryStatus
  superseded_by: string | null
  use_count: number
  last_used_at: Date | null
  embed_model: string | null
  key: string | null
  expires_at: Date | null
  /** The memory's contexts and the entities it is relevant to, read in one pass over its edges. */
  links: { contexts: string[]; relatedTo: string[] }
  created_at: Date
  updated_at: Date
}

function toRecord(r: MemoryRow): MemoryRecord {
  return {
    id: r.id,
    content: r.content,
    category: r.category,
    source: r.source,
    confidence: r.confidence,
    scope: r.scope,
    tenantId: r.tenant_id,
    userId: r.user_id,
    agentId: r.agent_id,
    runId: r.run_id,
    projectId: r.project_id,
    sensitivity: r.sensitivity,
    metadata: r.metadata,
    hash: r.hash,
    status: r.status,
    supersededBy: r.superseded_by,
    useCount: r.use_count,
    lastUsedAt: r.last_used_at,
    embedModel: r.embed_model,
    contexts: r.links.contexts,
    relatedTo: r.links.relatedTo,
    key: r.key,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

interface HistoryEntry {
  memoryId: string
  event: 'ADD' | 'UPDATE' | 'DELETE'
  oldValue: string | null
  newValue: string | null
  changes?: JsonObject
  tenantId: string
  userId: string | null
  agentId: string | null
  runId: string | null
}

/** Appends audit rows, many in one statement. */
async function logHistory(q: Queryable, entries: readonly HistoryEntry[], at: Date): Promise<void> {
  if (entries.length === 0) return
  await q.query(
    `INSERT INTO memory_history (id, memory_id, event, old_value, new_value, changes, is_deleted,
                                 tenant_id, user_id, agent_id, run_id, created_at)
     SELECT i.id, i.memory_id, i.event, i.old_value, i.new_value, i.changes, i.event = 'DELETE',
            i.tenant_id, i.user_id, i.agent_id, i.run_id, $10
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[],
                 $8::text[], $9::text[], $11::text[])
       AS i(id, memory_id, event, old_value, new_value, changes, tenant_id, user_id, agent_id, run_id)`,
    [
      entries.map(() => newId('memoryHistory')),
      entries.map((e) => e.memoryId),
      entries.map((e) => e.event),
      entries.map((e) => e.oldValue),
      entries.map((e) => e.newValue),
      entries.map((e) => JSON.stringify(e.changes ?? {})),
      entries.map((e) => e.tenantId),
      entries.map((e) => e.userId),
      entries.map((e) => e.agentId),
      at,
      entries.map((e) => e.runId),
    ],
  )
}

/** Memories read through the HNSW index for the near-duplicate check, most similar kept. */
const NEAREST = 10

/**
 * Rows of this memory's scope (identity fields compared null-safely): its tenant, scope, user
 * and project, and with `dedupScope: 'identity'` its agent and run too.
 */
function sameScope(
  p: Params,
  m: {
    tenantId: string
    scope: MemoryScope
    userId?: string | undefined
    agentId?: string | undefined
    runId?: string | undefined
    projectId?: string | undefined
    dedupScope: 'user' | 'identity'
  },
): string {
  const agentAndRun =
    m.dedupScope === 'identity'
      ? `AND m.agent_id IS NOT DISTINCT FROM ${p.add(m.agentId ?? null)}
    AND m.run_id IS NOT DISTINCT FROM ${p.add(m.runId ?? null)}`
      : ''
  return `m.tenant_id = ${p.add(m.tenantId)} AND m.scope = ${p.add(m.scope)}
    AND m.user_id IS NOT DISTINCT FROM ${p.add(m.userId ?? null)} ${agentAndRun}
    AND m.project_id IS NOT DISTINCT FROM ${p.add(m.projectId ?? null)}`
}

type Selector = z.output<z.ZodObject<typeof selector>>

/** Exact-match selection on the identity fields given, plus category, scope and filters. */
function selectWhere(p: Params, s: Selector): string {
  const parts = [`m.tenant_id = ${p.add(s.tenantId)}`]
  if (s.userId !== undefined) parts.push(`m.user_id = ${p.add(s.userId)}`)
  if (s.agentId !== undefined) parts.push(`m.agent_id = ${p.add(s.agentId)}`)
  if (s.runId !== undefined) parts.push(`m.run_id = ${p.add(s.runId)}`)
  if (s.projectId !== undefined) parts.push(`m.project_id = ${p.add(s.projectId)}`)
  if (s.scope !== undefined) parts.push(`m.scope = ${p.add(s.scope)}`)
  if (s.category !== undefined) parts.push(`m.category = ANY(${p.add([s.category].flat())}::text[])`)
  if (s.relevantTo !== undefined) parts.push(relevantTo(p, s.relevantTo))
  parts.push(p.filter(s.filters, MEMORY_FILTER_COLUMNS, MEMORY_FILTER_JSON))
  return parts.join(' AND ')
}

/** Memories with a live RELEVANT_TO link to any of `ids`. */
function relevantTo(p: Params, ids: readonly string[]): string {
  return `EXISTS (SELECT 1 FROM edges e JOIN relations r ON r.id = e.rel AND r.name = 'RELEVANT_TO'
                  WHERE e.src = m.id AND e.dst = ANY(${p.add(ids)}::text[]) AND e.tombstoned_at IS NULL)`
}

interface RankArgs {
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
async function rankMemories(db: Db, p: Params, a: RankArgs): Promise<MemoryHit[]> {
  const candidateCount = Math.min(Math.max(a.limit * 5, Z_WINDOW), 1000)
  return db.transaction(async (q) => {
    if (a.vector) await q.exec(vectorScanSettings(candidateCount))
    const past = a.past ? await a.past(q) : undefined
    return rankStatement(q, p, { ...a, candidates: candidateCount, past })
  })
}

async function rankStatement(
  q: Queryable,
  p: Params,
  a: Omit<RankArgs, 'past'> & { candidates: number; past: string | undefined },
): Promise<MemoryHit[]> {
  const table = a.past === undefined ? 'memories' : 'past'
  const candidates = p.add(a.candidates)
  const textParam = p.add(a.text)
  // The nearest memories by the expression and predicate of the HNSW index for this length
  // (ensureVectorIndex), which the planner walks when that beats reading the pool; then those
  // above minSimilarity, ranked by similarity and id.
  let vec = 'SELECT NULL::text AS id, NULL::float8 AS score, NULL::bigint AS rnk WHERE false'
  if (a.vector) {
    const indexed = indexedVector('m.vector', a.vector.value.length)
    const distance = indexed.distanceTo(p.add(toVectorParam(a.vector.value)))
    vec = `SELECT id, similarity AS score, row_number() OVER (ORDER BY similarity DESC, id) AS rnk
       FROM (
         SELECT m.id, 1 - (${distance}) AS similarity
         FROM ${table} m
         WHERE ${a.where} AND ${a.live} AND ${indexed.predicate} AND m.embed_model = ${p.add(a.vector.model)}
         ORDER BY ${distance}
         LIMIT ${candidates}
       ) scored
       WHERE similarity > ${p.add(a.minSimilarity)}`
  }
  const limit = p.add(a.limit)
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

/** Secrets in a memory's text and metadata are replaced before it is hashed, embedded or stored. */
function redactMemory<T extends { content: string; metadata: Record<string, unknown> }>(
  m: T,
): { value: T; redactions: RedactionCount[] } {
  const content = redact(m.content)
  const metadata = redactUnknown(m.metadata)
  return {
    value: { ...m, content: content.text, metadata: metadata.value as Record<string, unknown> },
    redactions: mergeRedactions(countRedactions(content.findings), metadata.redactions),
  }
}

function redactionList(redactions: readonly RedactionCount[]): JsonObject[] {
  return redactions.map((r) => ({ type: r.type, count: r.count }))
}

interface ContextRow {
  id: string
  name: string
  description: string | null
  priority: number
  tenant_id: string
  user_id: string | null
  memories: number
  created_at: Date
}

/** How many active memories, unexpired at `at`, context `alias` holds (its live BELONGS_TO_CONTEXT edges). */
const CONTEXT_MEMORIES = (alias: string, at: string) => `(SELECT count(*)::int FROM edges e
  JOIN relations r ON r.id = e.rel AND r.name = 'BELONGS_TO_CONTEXT'
  JOIN memories m ON m.id = e.src AND m.status = 'active' AND ${unexpired(at)}
  WHERE e.dst = ${alias}.id AND e.tombstoned_at IS NULL)`

function toContext(r: ContextRow): MemoryContextRecord {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    priority: Number(r.priority),
    tenantId: r.tenant_id,
    userId: r.user_id,
    memories: Number(r.memories),
    createdAt: r.created_at,
  }
}

/**
 * Curated memories: `remember` / `recall` and the `memories` namespace (get, list, update,
 * delete, history, forgetAll, search, reset, defineContext, contexts). Rows are mutable; every
 * change is logged.
 */
export function memoriesApi(ctx: EngineContext) {
  const { db, telemetry } = ctx

  async function embedText(content: string): Promise<{ value: Float32Array; model: string } | null> {
    const embedder = ctx.embedder
    if (!embedder) return null
    try {
      return { value: await ctx.vectors.embed(embedder, content), model: embedder.id }
    } catch (cause) {
      throw embedderFailed(embedder, cause)
    }
  }

  /**
   * Vectors, by text, of the texts the memories changed since `at` had then and have no
   * longer, embedded now by the current model (none without one or for sealed text).
   */
  async function pastVectors(
    tenantId: string,
    at: Date,
    allowed: readonly string[],
    mayRead: (r: MemoryRow) => boolean,
  ): Promise<Map<string, string>> {
    const vectors = new Map<string, string>()
    const embedder = ctx.embedder
    if (!embedder) return vectors
    const { then, current } = await changedSince(db, tenantId, at)
    // Only the texts the call may rank: of memories its identity fields select (they never
    // change) and its channel may show, then and now. No other user's text reaches the model.
    const wanted = then.filter((r) => {
      const now = current.get(r.id)
      return (
        now !== undefined &&
        mayRead(now) &&
        allowed.includes(now.sensitivity) &&
        allowed.includes(r.sensitivity) &&
        r.content !== now.content &&
        !isSealed(r.content)
      )
    })
    const texts = [...new Set(wanted.map((r) => r.content))]
    const size = Math.max(1, embedder.batchSize ?? 32)
    for (let i = 0; i < texts.length; i += size) {
      const batch = texts.slice(i, i + size)
      let made: Float32Array[]
      try {
        made = await embedder.embed(batch)
        if (made.length !== batch.length) throw new Error(`${made.length} vectors for ${batch.length} texts`)
      } catch (cause) {
        throw embedderFailed(embedder, cause)
      }
      batch.forEach((text, j) => vectors.set(text, toVectorParam(made[j] as Float32Array)))
    }
    return vectors
  }

  /**
   * A memory's text as it is stored: sealed with its keyed hash when it is `high` under a
   * vault (no vector is kept of it), else plain with its plain hash. `mac` is the keyed hash
   * whenever the vault is open, so that a sealed memory of the same text is found.
   */
  async function sealedMemory(content: string, sensitivity: string) {
    const plainHash = await memoryHash(content)
    const { vault } = ctx
    const sealing = sensitivity === 'high' && vault.status !== 'none'
    const mac = vault.status === 'open' ? await vault.mac(normalizeMemoryText(content)) : undefined
    if (!sealing) return { sealed: false, content, hash: plainHash, plainHash, mac }
    const stored = await vault.seal(content)
    return { sealed: true, content: stored, hash: mac as string, plainHash, mac }
  }

  async function getRow(q: Queryable, id: string, tenantId: string): Promise<MemoryRow | undefined> {
    const { rows } = await q.query<MemoryRow>(`SELECT ${COLUMNS} FROM memories m WHERE m.id = $1 AND m.tenant_id = $2`, [
      id,
      tenantId,
    ])
    return rows[0]
  }

  function emit(
    op: 'read' | 'write' | 'overwrite' | 'delete' | 'query',
    row: { id: string | null; scope?: string | null; runId?: string | null },
    at?: Date,
    detail?: Record<string, unknown>,
  ) {
    telemetry.emit({
      op,
      memoryId: row.id,
      entityType: 'memory',
      scope: row.scope ?? null,
      runId: row.runId ?? null,
      taskId: null,
      ...(at ? { at } : {}),
      ...(detail ? { detail } : {}),
    })
  }

  /**
   * Saves a curated memory. The same text in the same scope is `unchanged`; a near duplicate
   * (cosine ≥ the engine's dedup threshold) becomes a new memory that supersedes the old one.
   * Without a `userId` it belongs to no user: reads that name no user find it, a user's do not.
   *
   * @example
   * await memory.remember({ content: 'User prefers tabs', category: 'preference', source: 'explicit' })
   * // → { id: 'mem_…', action: 'created' }
   */
  async function remember(input: RememberInput): Promise<RememberResult> {
    const parsed = parseInput(rememberInput, input, 'memory')
    const { sensitivity } = parsed
    refuseSecret(sensitivity)
    const { value: m, redactions } = redactMemory(parsed)
    refuseSealedLookalike(m.content, 'content')
    const { vault } = ctx
    const expiresAt = m.expiresAt === undefined ? null : toDate(m.expiresAt)
    let sealed = await sealedMemory(m.content, sensitivity)
    let vector = sealed.sealed ? null : await embedText(m.content)
    const at = ctx.now()
    const result = await db.transaction(async (tx): Promise<RememberResult & { oldContent?: string }> => {
      if (vaultMadeSince(vault, ctx.vault)) {
        sealed = await sealedMemory(m.content, sensitivity)
        if (sealed.sealed) vector = null
      }
      // What an existing memory of this text has as its hash: plain, or keyed when it is sealed.
      const hashes = sealed.mac ? [sealed.plainHash, sealed.mac] : [sealed.plainHash]
      const { hash } = sealed
      const p = new Params()
      // With a key, the memory it names is the one to keep or replace; without one, the same
      // text in the scope.
      const exact = await tx.query<{
        id: string
        content: string
        sensitivity: string
        hash: string
        key: string | null
        expires_at: Date | null
      }>(
        m.key === undefined
          ? `SELECT m.id, m.content, m.sensitivity, m.hash, m.key, m.expires_at FROM memories m
             WHERE ${sameScope(p, m)} AND m.status = 'active' AND m.hash = ANY(${p.add(hashes)})
             ORDER BY m.id LIMIT 1`
          : `SELECT m.id, m.content, m.sensitivity, m.hash, m.key, m.expires_at FROM memories m
             WHERE ${sameScope(p, m)} AND m.status = 'active' AND m.key = ${p.add(m.key)}
             ORDER BY m.id LIMIT 1`,
        p.values,
      )
      const same = exact.rows[0]
      if (
        same &&
        same.hash === hash &&
        same.sensitivity === sensitivity &&
        (same.expires_at?.getTime() ?? null) === (expiresAt?.getTime() ?? null) &&
        !(same.expires_at && same.expires_at <= at)
      ) {
        return { id: same.id, action: 'unchanged' }
      }

      // The same text marked differently (another sensitivity or expiry), or said again once
      // it has expired, is restated: the new memory supersedes the old one; so does any new
      // text saved under the key of an existing memory.
      let near: { id: string; content: string; similarity: number | null; key: string | null } | undefined = same
        ? { id: same.id, content: same.content, similarity: hashes.includes(same.hash) ? 1 : null, key: same.key }
        : undefined
      if (!near && vector && m.dedup === 'semantic' && m.key === undefined) {
        // The nearest few in the scope through the HNSW index (the walk goes on past other
        // scopes' memories), then the most similar, ties by id.
        const q = new Params()
        const indexed = indexedVector('m.vector', vector.value.length)
        const distance = indexed.distanceTo(q.add(toVectorParam(vector.value)))
        await tx.exec(vectorScanSettings(NEAREST))
        const { rows } = await tx.query<{ id: string; content: string; similarity: number; key: string | null }>(
          `SELECT * FROM (
             SELECT m.id, m.content, m.key, 1 - (${distance}) AS similarity FROM memories m
             WHERE ${sameScope(q, m)} AND m.status = 'active' AND m.embed_model = ${q.add(vector.model)}
               AND ${indexed.predicate}
             ORDER BY ${distance} LIMIT ${NEAREST}
           ) n
           ORDER BY similarity DESC, id LIMIT 1`,
          q.values,
        )
        if (rows[0] && rows[0].similarity >= ctx.dedupThreshold) near = rows[0]
      }

      const id = newId('memory')
      await tx.query(
        `INSERT INTO memories (id, tenant_id, user_id, agent_id, run_id, project_id, scope, category, source,
                               confidence, content, hash, metadata, vector, embed_model, created_at, updated_at,
                               sensitivity, key, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::vector, $15, $16, $16, $17, $18, $19)`,
        [
          id,
          m.tenantId,
          m.userId ?? null,
          m.agentId ?? null,
          m.runId ?? null,
          m.projectId ?? null,
          m.scope,
          m.category,
          m.source,
          m.confidence ?? CONFIDENCE_BY_SOURCE[m.source],
          sealed.content,
          hash,
          JSON.stringify(m.metadata),
          vector ? toVectorParam(vector.value) : null,
          vector?.model ?? null,
          at,
          sensitivity,
          // A memory that replaces a keyed one keeps its key.
          m.key ?? near?.key ?? null,
          expiresAt,
        ],
      )
      const who = {
        tenantId: m.tenantId,
        userId: m.userId ?? null,
        agentId: m.agentId ?? null,
        runId: m.runId ?? null,
      }
      const history: HistoryEntry[] = [
        {
          memoryId: id,
          event: 'ADD',
          oldValue: null,
          newValue: sealed.content,
          ...(redactions.length > 0 ? { changes: { redactions: redactionList(redactions) } } : {}),
          ...who,
        },
      ]
      const edges: {
        src: string
        rel: string
        dst: string
        payload: JsonObject
        tenantId: string
        runId?: string
      }[] = []
      const link = (rel: string, dst: string, payload: JsonObject = {}) =>
        edges.push({
          src: id,
          rel,
          dst,
          payload,
          tenantId: m.tenantId,
          ...(m.runId ? { runId: m.runId } : {}),
        })

      if (near) {
        await tx.query(
          `UPDATE memories SET status = 'superseded', superseded_by = $2, updated_at = $3 WHERE id = $1`,
          [near.id, id, at],
        )
        history.push({
          memoryId: near.id,
          event: 'UPDATE',
          oldValue: near.content,
          newValue: near.content,
          changes: { status: ['active', 'superseded'], supersededBy: id },
          ...who,
        })
        link('SUPERSEDES', near.id, near.similarity === null ? { key: m.key ?? null } : { similarity: near.similarity })
      }
      if (m.context) {
        const { rows } = await tx.query<{ id: string }>(
          `WITH ins AS (
             INSERT INTO memory_contexts (id, tenant_id, user_id, name, created_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant_id, coalesce(user_id, ''), name) DO NOTHING
             RETURNING id
           )
           SELECT id FROM ins
           UNION ALL
           SELECT id FROM memory_contexts
           WHERE tenant_id = $2 AND coalesce(user_id, '') = coalesce($3, '') AND name = $4`,
          [newId('context'), m.tenantId, m.userId ?? null, m.context, at],
        )
        link('BELONGS_TO_CONTEXT', (rows[0] as { id: string }).id)
      }
      for (const dst of m.relatedTo ?? []) link('RELEVANT_TO', dst)
      for (const dst of m.derivedFrom ?? []) link('DERIVED_FROM', dst)
      // A memory restated or corrected stays in the contexts, and relevant to the entities, of
      // the one it replaces, unless it names its own.
      const inherited = near ? [...(m.context ? [] : ['BELONGS_TO_CONTEXT']), ...(m.relatedTo ? [] : ['RELEVANT_TO'])] : []
      if (near && inherited.length > 0) {
        const { rows } = await tx.query<{ rel: string; dst: string }>(
          `SELECT r.name AS rel, e.dst FROM edges e JOIN relations r ON r.id = e.rel
           WHERE e.src = $1 AND e.tombstoned_at IS NULL AND r.name = ANY($2::text[])
           ORDER BY e.id`,
          [near.id, inherited],
        )
        for (const r of rows) link(r.rel, r.dst)
      }
      await logHistory(tx, history, at)
      await writeEdges(tx, edges, at)
      const refs = [...(m.relatedTo ?? []), ...(m.derivedFrom ?? [])]
      const missing = refs.length > 0 ? await missingReferences(tx, m.tenantId, refs) : []
      if (missing.length > 0) {
        telemetry.emit({
          op: 'warning',
          memoryId: id,
          entityType: 'memory',
          scope: m.scope,
          runId: m.runId ?? null,
          taskId: null,
          at,
          detail: { warning: 'missing_reference', ids: missing },
        })
      }
      return near
        ? { id, action: 'superseded', supersededId: near.id, oldContent: near.content }
        : { id, action: 'created' }
    })
    if (result.action !== 'unchanged')
      emit('write', { id: result.id, scope: m.scope, runId: m.runId ?? null }, at)
    if (result.supersededId)
      emit('overwrite', { id: result.supersededId, scope: m.scope, runId: m.runId ?? null }, at)
    const { oldContent: _, ...out } = result
    return redactions.length > 0 && out.action !== 'unchanged' ? { ...out, redactions } : out
  }

  /**
   * Active memories visible to a user, best first: their own user-scoped ones, their
   * project-scoped ones for `projectId`, and global ones. Hybrid ranked (vector + keyword,
   * keyword only without an embedder); each hit counts as a use.
   *
   * @example
   * const hits = await memory.recall('how does the user like their code formatted?', { category: 'preference' })
   */
  async function recall(query: string, options: RecallOptions = {}): Promise<MemoryHit[]> {
    const text = parseInput(z.string().trim().min(1).max(MAX_CONTENT), query, 'recall query')
    const o = parseInput(recallOptions, options, 'recall options')
    const vector = await embedText(text)
    const asOf = o.asOf === undefined ? null : toDate(o.asOf)
    const at = asOf ?? ctx.now()
    const p = new Params()
    const user = p.add(o.userId ?? null)
    const where = [
      `m.tenant_id = ${p.add(o.tenantId)}`,
      `m.status = 'active'`,
      readableBy(user, p.add(o.projectId ?? null)),
    ]
    if (o.scope) where.push(`m.scope = ${p.add(o.scope)}`)
    if (o.category) where.push(`m.category = ANY(${p.add([o.category].flat())}::text[])`)
    where.push(`m.sensitivity = ANY(${p.add(allowedSensitivities(o.channel))}::text[])`)
    if (o.relevantTo) where.push(relevantTo(p, o.relevantTo))
    where.push(p.filter(o.filters, MEMORY_FILTER_COLUMNS, MEMORY_FILTER_JSON))
    const vectors =
      asOf && vector
        ? await pastVectors(o.tenantId, asOf, allowedSensitivities(o.channel), (r) =>
            readableRow(r, o.userId ?? null, o.projectId ?? null) && (o.scope === undefined || r.scope === o.scope),
          )
        : undefined
    const past = asOf
      ? (q: Queryable) => pastMemories(q, p, { tenantId: o.tenantId, at: asOf, allowed: allowedSensitivities(o.channel), vectors, model: ctx.embedder?.id })
      : undefined
    const hits = await rankMemories(db, p, {
      where: where.join(' AND '),
      grouped: o.filters === undefined && o.relevantTo === undefined,
      live: unexpired(p.add(at)),
      text,
      vector,
      limit: o.limit,
      minSimilarity: o.minSimilarity,
      fusion: o.fusion,
      touchAt: asOf ? null : at,
      ...(past ? { past } : {}),
    })
    const now = asOf ? undefined : at
    emit('query', { id: null, scope: o.scope ?? null }, now, { results: hits.length, ...(asOf ? { asOf: asOf.toISOString() } : {}) })
    for (const h of hits) emit('read', { id: h.id, scope: h.scope, runId: h.runId }, now)
    return hits
  }

  const memories = {
    /**
     * One memory by id (also superseded or deleted ones, see `status`), or null — also when
     * it belongs to another tenant or is above what `channel` may show.
     *
     * @example
     * const m = await memory.memories.get('mem_…', { tenantId: 'acme' })
     */
    async get(id: string, options: MemoryGetOptions = {}): Promise<MemoryRecord | null> {
      const memoryId = parseInput(memoryIdSchema, id, 'memory id')
      const o = parseInput(getOptions, options, 'memory read options')
      const current = await getRow(db, memoryId, o.tenantId)
      const found = current && o.asOf !== undefined ? (await memoriesAsOf(db, [current], toDate(o.asOf)))[0] : current
      // As of a time, both the sensitivity then and now must be shown (see `pastMemories`).
      const allowed = allowedSensitivities(o.channel)
      const row = found && current && allowed.includes(found.sensitivity) && allowed.includes(current.sensitivity) ? found : undefined
      emit('read', { id: memoryId, scope: row?.scope ?? null, runId: row?.run_id ?? null })
      return row ? toRecord(row) : null
    },

    /**
     * Memories matching every identity field given, most used first, then newest.
     *
     * @example
     * const mine = await memory.memories.list({ userId: 'alice', category: 'preference' })
     */
    async list(options: MemoryListOptions = {}): Promise<MemoryRecord[]> {
      const o = parseInput(listOptions, options, 'list options')
      const asOf = o.asOf === undefined ? null : toDate(o.asOf)
      const at = asOf ?? ctx.now()
      const p = new Params()
      const allowed = allowedSensitivities(o.channel)
      const where = `${selectWhere(p, o)} AND m.sensitivity = ANY(${p.add(allowed)}::text[])`
      const status =
        o.status === 'any'
          ? 'true'
          : o.status === 'active'
            ? `m.status = 'active' AND ${unexpired(p.add(at))}`
            : o.status === 'expired'
              ? `m.status = 'active' AND m.expires_at <= ${p.add(at)}`
              : `m.status = ${p.add(o.status)}`
      const key = o.key === undefined ? 'true' : `m.key = ${p.add(o.key)}`
      const rows = await db.transaction(async (q) => {
        const past = asOf ? await pastMemories(q, p, { tenantId: o.tenantId, at: asOf, allowed }) : undefined
        const { rows } = await q.query<MemoryRow>(
          `${past ? `WITH ${past}` : ''}
           SELECT ${COLUMNS} FROM ${past ? 'past' : 'memories'} m WHERE ${where} AND ${status} AND ${key}
           ORDER BY m.use_count DESC, m.created_at DESC, m.id DESC
           LIMIT ${p.add(o.limit)}`,
          p.values,
        )
        return rows
      })
      emit('query', { id: null, scope: o.scope ?? null, runId: o.runId ?? null }, undefined, {
        results: rows.length,
        ...(asOf ? { asOf: asOf.toISOString() } : {}),
      })
      return rows.map(toRecord)
    },

    /**
     * Hybrid search over active memories matching every identity field given (AND), without
     * counting uses. The `Memory` (mem0) facade searches through this.
     *
     * @example
     * const hits = await memory.memories.search('programming languages', { userId: 'alice', limit: 5 })
     */
    async search(query: string, options: MemorySearchOptions = {}): Promise<MemoryHit[]> {
      const text = parseInput(z.string().trim().min(1).max(MAX_CONTENT), query, 'search query')
      const o = parseInput(searchOptions, options, 'search options')
      const vector = await embedText(text)
      const asOf = o.asOf === undefined ? null : toDate(o.asOf)
      const p = new Params()
      const where = `${selectWhere(p, o)} AND m.status = 'active'
        AND m.sensitivity = ANY(${p.add(allowedSensitivities(o.channel))}::text[])`
      const vectors = asOf && vector ? await pastVectors(o.tenantId, asOf, allowedSensitivities(o.channel), (r) => selectedRow(r, o)) : undefined
      const past = asOf
        ? (q: Queryable) => pastMemories(q, p, { tenantId: o.tenantId, at: asOf, allowed: allowedSensitivities(o.channel), vectors, model: ctx.embedder?.id })
        : undefined
      const hits = await rankMemories(db, p, {
        where,
        grouped: o.filters === undefined && o.relevantTo === undefined,
        live: unexpired(p.add(asOf ?? ctx.now())),
        text,
        vector,
        limit: o.limit,
        minSimilarity: o.minSimilarity,
        fusion: o.fusion,
        touchAt: null,
        ...(past ? { past } : {}),
      })
      emit('query', { id: null, scope: o.scope ?? null, runId: o.runId ?? null }, undefined, {
        results: hits.length,
        ...(asOf ? { asOf: asOf.toISOString() } : {}),
      })
      return hits
    },

    /**
     * Changes a memory in place: new text gets a new hash and vector. Logged as UPDATE.
     * Secrets in new text or metadata are replaced first, as in `remember`.
     *
     * @example
     * await memory.memories.update('mem_…', { content: 'User prefers 2-space indents' })
     */
    async update(id: string, changes: MemoryUpdate, options: MemoryByIdOptions = {}): Promise<MemoryRecord> {
      const memoryId = parseInput(memoryIdSchema, id, 'memory id')
      const parsed = parseInput(updateInput, changes, 'memory update')
      const { tenantId } = parseInput(byIdOptions, options, 'memory options')
      if (parsed.sensitivity !== undefined) refuseSecret(parsed.sensitivity)
      const sensitivity = parsed.sensitivity
      const redactedContent = parsed.content === undefined ? undefined : redact(parsed.content)
      const redactedMetadata = parsed.metadata === undefined ? undefined : redactUnknown(parsed.metadata)
      const redactions = mergeRedactions(
        countRedactions(redactedContent?.findings ?? []),
        redactedMetadata?.redactions ?? [],
      )
      const u = {
        ...parsed,
        ...(redactedContent ? { content: redactedContent.text } : {}),
        ...(redactedMetadata ? { metadata: redactedMetadata.value as Record<string, unknown> } : {}),
      }
      if (u.content !== undefined) refuseSealedLookalike(u.content, 'content')
      const vector = u.content === undefined ? null : await embedText(u.content)
      const hash = u.content === undefined ? null : await memoryHash(u.content)
      const expiresAt = u.expiresAt === undefined || u.expiresAt === null ? null : toDate(u.expiresAt)
      const at = ctx.now()
      const row = await db.transaction(async (tx) => {
        const old = await getRow(tx, memoryId, tenantId)
        if (!old || old.status === 'deleted') {
          throw new MemoryError('NOT_FOUND', `No memory "${memoryId}"`, { details: { id: memoryId } })
        }
        // Under a vault, the text is stored as the memory's final sensitivity asks: sealed
        // when it becomes (or stays) `high`, opened when it leaves `high`.
        let stored = { content: u.content ?? null, hash, vector: vector ? toVectorParam(vector.value) : null, model: vector?.model ?? null }
        const wasSealed = isSealed(old.content)
        const sealedNow = (sensitivity ?? old.sensitivity) === 'high' && ctx.vault.status !== 'none'
        if (sealedNow ? u.content !== undefined || !wasSealed : wasSealed) {
          const plain = u.content ?? (await ctx.vault.open(old.content))
          if (isSealed(plain)) throw vaultLocked("a sealed memory's text cannot be opened")
          const next = await sealedMemory(plain, sealedNow ? 'high' : 'none')
          stored = {
            content: next.content,
            hash: next.hash,
            vector: sealedNow || !stored.vector ? null : stored.vector,
            model: sealedNow || !stored.vector ? null : stored.model,
          }
        }
        await tx.query(
          `UPDATE memories SET
             content = coalesce($2, content),
             hash = coalesce($3, hash),
             vector = CASE WHEN $2::text IS NULL THEN vector ELSE $4::vector END,
             embed_model = CASE WHEN $2::text IS NULL THEN embed_model ELSE $5 END,
             category = coalesce($6, category),
             confidence = coalesce($7, confidence),
             metadata = coalesce($8::jsonb, metadata),
             updated_at = $9,
             sensitivity = coalesce($10, sensitivity),
             expires_at = CASE WHEN $12::boolean THEN $13::timestamptz ELSE expires_at END
           WHERE id = $1 AND tenant_id = $11`,
          [
            memoryId,
            stored.content,
            stored.hash,
            stored.vector,
            stored.model,
            u.category ?? null,
            u.confidence ?? null,
            u.metadata === undefined ? null : JSON.stringify(u.metadata),
            at,
            sensitivity ?? null,
            tenantId,
            u.expiresAt !== undefined,
            expiresAt,
          ],
        )
        const other: JsonObject = {}
        if (u.expiresAt !== undefined && (old.expires_at?.getTime() ?? null) !== (expiresAt?.getTime() ?? null))
          other.expiresAt = [old.expires_at?.toISOString() ?? null, expiresAt?.toISOString() ?? null]
        if (u.category !== undefined && u.category !== old.category)
          other.category = [old.category, u.category]
        if (u.confidence !== undefined && u.confidence !== old.confidence)
          other.confidence = [old.confidence, u.confidence]
        if (u.metadata !== undefined) other.metadata = [old.metadata, u.metadata as JsonObject]
        if (sensitivity !== undefined && sensitivity !== old.sensitivity) other.sensitivity = [old.sensitivity, sensitivity]
        if (redactions.length > 0) other.redactions = redactionList(redactions)
        await logHistory(
          tx,
          [
            {
              memoryId,
              event: 'UPDATE',
              oldValue: old.content,
              newValue: stored.content ?? old.content,
              changes: other,
              tenantId: old.tenant_id,
              userId: old.user_id,
              agentId: old.agent_id,
              runId: old.run_id,
            },
          ],
          at,
        )
        return (await getRow(tx, memoryId, tenantId)) as MemoryRow
      })
      emit('overwrite', { id: memoryId, scope: row.scope, runId: row.run_id }, at)
      return toRecord(row)
    },

    /**
     * Deletes a memory: it leaves every read; its history (with a DELETE entry) stays.
     *
     * @example
     * await memory.memories.delete('mem_…')
     */
    async delete(id: string, options: MemoryByIdOptions = {}): Promise<{ id: string; deleted: true }> {
      const memoryId = parseInput(memoryIdSchema, id, 'memory id')
      const { tenantId } = parseInput(byIdOptions, options, 'memory options')
      const at = ctx.now()
      const row = await db.transaction(async (tx) => {
        const { rows } = await tx.query<MemoryRow>(
          `UPDATE memories SET status = 'deleted', updated_at = $2
           WHERE id = $1 AND tenant_id = $3 AND status <> 'deleted'
           RETURNING *`,
          [memoryId, at, tenantId],
        )
        const r = rows[0]
        if (!r) throw new MemoryError('NOT_FOUND', `No memory "${memoryId}"`, { details: { id: memoryId } })
        await logHistory(
          tx,
          [
            {
              memoryId,
              event: 'DELETE',
              oldValue: r.content,
              newValue: null,
              tenantId: r.tenant_id,
              userId: r.user_id,
              agentId: r.agent_id,
              runId: r.run_id,
            },
          ],
          at,
        )
        return r
      })
      emit('delete', { id: memoryId, scope: row.scope, runId: row.run_id }, at)
      return { id: memoryId, deleted: true }
    },

    /**
     * The audit trail of one memory, oldest first.
     *
     * @example
     * const trail = await memory.memories.history('mem_…') // ADD, UPDATE, DELETE …
     */
    async history(id: string, options: MemoryByIdOptions = {}): Promise<MemoryHistoryRecord[]> {
      const memoryId = parseInput(memoryIdSchema, id, 'memory id')
      const { tenantId } = parseInput(byIdOptions, options, 'memory options')
      const { rows } = await db.query<HistoryRow>('SELECT * FROM memory_history WHERE memory_id = $1 AND tenant_id = $2 ORDER BY created_at, id', [
        memoryId,
        tenantId,
      ])
      emit('read', { id: memoryId }, undefined, { history: rows.length })
      return rows.map(toHistory)
    },

    /**
     * Deletes every active memory matching the selection, in one transaction (with `expired:
     * true`, only those past their expiry). Needs `confirm: true`.
     *
     * @example
     * await memory.memories.forgetAll({ userId: 'alice', scope: 'project', projectId: 'p1', confirm: true })
     * await memory.memories.forgetAll({ expired: true, confirm: true })
     */
    async forgetAll(input: ForgetAllInput): Promise<{ deleted: number }> {
      const o = parseInput(forgetAllInput, input, 'forgetAll request')
      const at = ctx.now()
      const gone = await db.transaction(async (tx) => {
        const p = new Params()
        const where = selectWhere(p, o)
        const now = p.add(at)
        const { rows } = await tx.query<MemoryRow>(
          `UPDATE memories m SET status = 'deleted', updated_at = ${now}
           WHERE ${where} AND m.status = 'active' ${o.expired ? `AND m.expires_at <= ${now}` : ''}
           RETURNING m.*`,
          p.values,
        )
        rows.sort((a, b) => (a.id < b.id ? -1 : 1))
        await logHistory(
          tx,
          rows.map((r) => ({
            memoryId: r.id,
            event: 'DELETE' as const,
            oldValue: r.content,
            newValue: null,
            tenantId: r.tenant_id,
            userId: r.user_id,
            agentId: r.agent_id,
            runId: r.run_id,
          })),
          at,
        )
        return rows
      })
      for (const r of gone) emit('delete', { id: r.id, scope: r.scope, runId: r.run_id }, at)
      return { deleted: gone.length }
    },

    /**
     * Creates a memory context, or sets what an existing one (same name, tenant and user) is
     * and how much it weighs: a `description` or `priority` left out keeps its value (0.5 by
     * default). In `buildContext`, memories of a context with a higher priority are surfaced
     * first: their confidence counts `0.5 + priority` times (once at the default).
     *
     * @example
     * await memory.memories.defineContext({ name: 'TypeScript', description: 'how this user writes TS', priority: 0.9, userId: 'ann' })
     */
    async defineContext(input: MemoryContextInput): Promise<MemoryContextRecord> {
      const c = parseInput(contextInput, input, 'memory context')
      const { rows } = await db.query<ContextRow>(
        `WITH up AS (
           INSERT INTO memory_contexts AS x (id, tenant_id, user_id, name, description, priority, created_at)
           VALUES ($1, $2, $3, $4, $5, coalesce($6, 0.5), $7)
           ON CONFLICT (tenant_id, coalesce(user_id, ''), name) DO UPDATE
             SET description = coalesce(EXCLUDED.description, x.description),
                 priority = coalesce($6, x.priority)
           RETURNING *
         )
         SELECT up.*, ${CONTEXT_MEMORIES('up', '$7')} AS memories FROM up`,
        [newId('context'), c.tenantId, c.userId ?? null, c.name, c.description ?? null, c.priority ?? null, ctx.now()],
      )
      return toContext(rows[0] as ContextRow)
    },

    /**
     * The memory contexts of a tenant (of one user with `userId`, else every user's), highest
     * priority first, then by name, each with how many active, unexpired memories it holds.
     *
     * @example
     * const groups = await memory.memories.contexts({ userId: 'ann' })
     */
    async contexts(options: MemoryContextsOptions = {}): Promise<MemoryContextRecord[]> {
      const o = parseInput(contextsOptions, options, 'contexts options')
      const { rows } = await db.query<ContextRow>(
        `SELECT c.*, ${CONTEXT_MEMORIES('c', '$3')} AS memories FROM memory_contexts c
         WHERE c.tenant_id = $1 AND ($2::text IS NULL OR c.user_id = $2)
         ORDER BY c.priority DESC, c.name, c.id`,
        [o.tenantId, o.userId ?? null, ctx.now()],
      )
      return rows.map(toContext)
    },

    /**
     * Erases every memory, its history, contexts and links, for good. Needs `confirm: true`.
     * With `tenantId`, only that tenant's; without, every tenant's.
     *
     * @example
     * await memory.memories.reset({ confirm: true })
     * await memory.memories.reset({ confirm: true, tenantId: 'acme' })
     */
    async reset(input: MemoryResetInput): Promise<{ memories: number }> {
      const o = parseInput(resetInput, input, 'reset request')
      const t = o.tenantId ?? null
      const n = await db.transaction(async (tx) => {
        await tx.query(`SELECT set_config('engram.forgetting', 'on', true)`)
        const mine = (table: string) => `(SELECT id FROM ${table} WHERE $1::text IS NULL OR tenant_id = $1)`
        await tx.query(
          `DELETE FROM edges WHERE src IN ${mine('memories')} OR dst IN ${mine('memories')} OR dst IN ${mine('memory_contexts')}`,
          [t],
        )
        const { affectedRows } = await tx.query('DELETE FROM memories WHERE $1::text IS NULL OR tenant_id = $1', [t])
        await tx.query('DELETE FROM memory_history WHERE $1::text IS NULL OR tenant_id = $1', [t])
        await tx.query('DELETE FROM memory_contexts WHERE $1::text IS NULL OR tenant_id = $1', [t])
        await tx.query(`SELECT set_config('engram.forgetting', 'off', true)`)
        return affectedRows ?? 0
      })
      emit('delete', { id: null }, undefined, { reset: true, memories: n, ...(t === null ? {} : { tenantId: t }) })
      return { memories: n }
    },
  }

  return { remember, recall, memories }
}

/**
 * The memories of `tenantId` changed since `at`, as they were then (`memoriesAsOf`), each
 * beside its current row.
 */
async function changedSince(q: Queryable, tenantId: string, at: Date) {
  const { rows: now } = await q.query<MemoryRow>(
    `SELECT ${COLUMNS} FROM memories m
     WHERE m.tenant_id = $1 AND m.created_at <= $2
       AND EXISTS (SELECT 1 FROM memory_history h WHERE h.memory_id = m.id AND h.created_at > $2)`,
    [tenantId, at],
  )
  const current = new Map(now.map((r) => [r.id, r]))
  return { ids: now.map((r) => r.id), then: await memoriesAsOf(q, now, at), current }
}

/**
 * The memories of `tenantId` as they were at `at`, as a CTE named `past` with the columns of
 * `memories` (see `RankArgs.past`): a memory with no history written since is its row as it
 * is; one changed since is `memoriesAsOf`'s reconstruction, its keyword vector made from its
 * text then and, where that text differs from today's, its vector from `vectors` (by text,
 * made by `model`; none for a text missing there). A memory changed since shows only where both its
 * sensitivity then and now may be shown (`allowed`): raising a memory's sensitivity hides
 * its past too. Read by `q`, in the transaction of the statement that uses it.
 */
export async function pastMemories(
  q: Queryable,
  p: Params,
  o: {
    tenantId: string
    at: Date
    allowed: readonly string[]
    vectors?: Map<string, string> | undefined
    /** The model `vectors` come from. */
    model?: string | undefined
  },
): Promise<string> {
  const { ids, then, current } = await changedSince(q, o.tenantId, o.at)
  const model = o.model ?? null
  const rows = then
    .filter((r) => o.allowed.includes(current.get(r.id)?.sensitivity ?? ''))
    .map((r) => {
      const vector = o.vectors?.get(r.content) ?? null
      return {
        id: r.id,
        content: r.content,
        category: r.category,
        confidence: r.confidence,
        sensitivity: r.sensitivity,
        metadata: r.metadata,
        hash: r.hash,
        status: r.status,
        superseded_by: r.superseded_by,
        expires_at: r.expires_at,
        updated_at: r.updated_at,
        vector,
        embed_model: vector === null ? null : model,
      }
    })
  const tenant = p.add(o.tenantId)
  const time = p.add(o.at)
  return `past AS NOT MATERIALIZED (
    SELECT m.id, m.tenant_id, m.user_id, m.agent_id, m.run_id, m.project_id, m.scope, m.category, m.source,
           m.confidence, m.content, m.hash, m.metadata, m.tsv, m.vector, m.embed_model, m.status,
           m.superseded_by, m.use_count, m.last_used_at, m.created_at, m.updated_at, m.sensitivity, m.key,
           m.expires_at
    FROM memories m
    WHERE m.tenant_id = ${tenant} AND m.created_at <= ${time} AND NOT m.id = ANY(${p.add(ids)}::text[])
    UNION ALL
    SELECT m.id, m.tenant_id, m.user_id, m.agent_id, m.run_id, m.project_id, m.scope, a.category, m.source,
           a.confidence, a.content, a.hash, a.metadata,
           CASE WHEN a.content = m.content THEN m.tsv
                WHEN starts_with(a.content, ${SEALED_SQL}) THEN ''::tsvector
                ELSE to_tsvector('english', a.content) END,
           CASE WHEN a.content = m.content THEN m.vector ELSE a.vector::vector END,
           CASE WHEN a.content = m.content THEN m.embed_model ELSE a.embed_model END,
           a.status, a.superseded_by, m.use_count, m.last_used_at, m.created_at, a.updated_at, a.sensitivity,
           m.key, a.expires_at
    FROM jsonb_to_recordset(${p.add(JSON.stringify(rows))}::jsonb) AS a(
           id text, content text, category text, confidence float8, sensitivity text, metadata jsonb, hash text,
           status text, superseded_by text, expires_at timestamptz, updated_at timestamptz, vector text,
           embed_model text)
    JOIN memories m ON m.id = a.id
  )`
}

/**
 * Memories as they were at `at`, from their current rows and the history written since: each
 * entry after `at` is undone, newest first — an UPDATE gives back the text it replaced and
 * every field its `changes` name (`[old, new]`: status, category, confidence, metadata,
 * sensitivity, expiry), a supersede its status, a DELETE the status before it. A memory
 * created after `at` is left out. Its use count, contexts and links are as they are now.
 */
export async function memoriesAsOf(q: Queryable, rows: MemoryRow[], at: Date): Promise<MemoryRow[]> {
  const then = rows.filter((r) => r.created_at <= at)
  if (then.length === 0) return []
  // One read of the entries written since, newest first, each memory's last entry by then
  // beside it (its time is the memory's `updated_at` then).
  const { rows: later } = await q.query<{
    memory_id: string
    event: string | null
    old_value: string | null
    changes: JsonObject | null
    last_before: Date | null
  }>(
    `SELECT m.id AS memory_id, h.event, h.old_value, h.changes, l.at AS last_before
     FROM unnest($1::text[]) AS m(id)
     LEFT JOIN memory_history h ON h.memory_id = m.id AND h.created_at > $2
     CROSS JOIN LATERAL (SELECT max(created_at) AS at FROM memory_history WHERE memory_id = m.id AND created_at <= $2) l
     ORDER BY h.created_at DESC NULLS LAST, h.id DESC`,
    [then.map((r) => r.id), at],
  )
  const byId = new Map(then.map((r) => [r.id, { ...r, metadata: { ...r.metadata } }]))
  const lastAt = new Map<string, Date>()
  const old = <T>(change: unknown): T => (change as [T, T])[0]
  for (const h of later) {
    if (h.last_before !== null) lastAt.set(h.memory_id, h.last_before)
    const m = byId.get(h.memory_id)
    // No entry since: the memory is as it is now.
    if (!m || h.event === null) continue
    if (h.event === 'DELETE') {
      m.status = m.superseded_by === null ? 'active' : 'superseded'
      continue
    }
    const c = h.changes ?? {}
    if (h.event === 'UPDATE' && h.old_value !== null && h.old_value !== m.content) {
      m.content = h.old_value
      m.hash = isSealed(h.old_value) ? m.hash : await memoryHash(h.old_value)
    }
    if (Array.isArray(c.status)) m.status = old<MemoryStatus>(c.status)
    if ('supersededBy' in c) m.superseded_by = null
    if (Array.isArray(c.category)) m.category = old<MemoryCategory>(c.category)
    if (Array.isArray(c.confidence)) m.confidence = old<number>(c.confidence)
    if (Array.isArray(c.metadata)) m.metadata = old<JsonObject>(c.metadata)
    if (Array.isArray(c.sensitivity)) m.sensitivity = old<StoredSensitivity>(c.sensitivity)
    if (Array.isArray(c.expiresAt)) {
      const e = old<string | null>(c.expiresAt)
      m.expires_at = e === null ? null : new Date(e)
    }
  }
  return then.map((r) => {
    const m = byId.get(r.id) as MemoryRow
    return { ...m, updated_at: lastAt.get(r.id) ?? m.created_at }
  })
}
