import { numberVersions } from '../documents/merge.ts'
import { numberNodeRevisions } from '../graph/node-merge.ts'
import { restoreArchives } from './archive.ts'
import { countChanged, type Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { newId } from '../kernel/ids.ts'
import { storableText } from '../kernel/json.ts'
import type { FileFormat } from '../portable/portable.ts'
import { identifier } from '../kernel/scope.ts'
import { iso, timeInput, toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'

const reason = storableText.pipe(z.string().max(1000)).optional()

const forgetTarget = z.union([
  z.object({ eventId: identifier, tenantId: identifier.default('default'), reason }).strict(),
  z.object({ conversationId: identifier, tenantId: identifier.default('default'), reason }).strict(),
  z
    .object({
      scope: z.object({ tenantId: identifier, userId: identifier.optional(), agentId: identifier.optional() }).strict(),
      reason,
    })
    .strict(),
  z.object({ artifactsBefore: timeInput, tenantId: identifier.default('default'), reason }).strict(),
  z
    .object({ memoryIds: z.array(identifier).min(1).max(10_000), tenantId: identifier.default('default'), reason })
    .strict(),
])

/**
 * What to forget: one event, a whole conversation, everything of a tenant (optionally
 * narrowed to a user and/or agent), a tenant's tool-output artifacts stored before a time
 * (a retention policy: their events keep their excerpt), or curated memories by id.
 */
export type ForgetTarget = z.input<typeof forgetTarget>

export interface ForgetCounts {
  events: number
  chunks: number
  artifacts: number
  edges: number
  /** Versions kept for the structure of their document but stripped of content. */
  versionsCleared: number
  /** Versions and documents deleted outright (only when a whole tenant is forgotten). */
  versionsDeleted: number
  documentsDeleted: number
  /**
   * Archives holding what was forgotten: each was restored and then forgotten with the rest
   * (deleted outright when a whole tenant is forgotten).
   */
  archives: number
  /** Curated memories erased, with their history entries (every earlier text of each). */
  memories: number
  memoryHistory: number
  /** Memory contexts erased: the user's, or the whole tenant's. */
  memoryContexts: number
  /** Policy revisions erased: the tenant's, or those of scope `user:<id>` / `agent:<id>`. */
  kv: number
  /** Entity-graph node revisions erased (only when a whole tenant is forgotten). */
  nodes: number
}

export interface ForgetResult {
  forgetId: string
  counts: ForgetCounts
  createdAt: string
}

/** `forget`: the one way content leaves the append-only store. */
export function createForget(ctx: EngineContext, format: FileFormat) {
  return {
    /**
     * Really deletes content, in one transaction, and leaves a content-free audit row in
     * `forget_log` (the target, the counts, the time).
     *
     * - The target's events go, with their chunks, artifacts and every edge that touches them
     *   (and, for a conversation, every edge recorded in it).
     * - Document versions those events or that conversation produced keep their row — id,
     *   number, hash, provenance, time — so other conversations' staleness stays right, but
     *   lose their content and their link to the forgotten conversation.
     * - A tenant-wide scope (no user or agent) also deletes the tenant's documents and versions.
     * - `artifactsBefore` deletes only the full tool outputs stored before that time; their
     *   events, and the excerpt each keeps, stay. Archived conversations keep theirs.
     *
     * @example
     * await memory.forget({ conversationId: 'c1' })
     */
    async forget(target: ForgetTarget): Promise<ForgetResult> {
      const t = parseInput(forgetTarget, target, 'forget target')
      const createdAt = ctx.now()
      const forgetId = newId('forget')
      const counts = await ctx.db.transaction(async (tx) => {
        await tx.query(`SET LOCAL engram.forgetting = 'on'`)
        const result = await forgetIn(tx, format, t, null)
        if ('memoryIds' in t && result.memories === 0) throw new MemoryError('NOT_FOUND', `No memory ${t.memoryIds[0]} to forget`)
        if ('eventId' in t && result.events === 0) throw new MemoryError('NOT_FOUND', `No event ${t.eventId} to forget`)
        await logForget(tx, forgetId, t, result, createdAt)
        return result
      })
      return { forgetId, counts, createdAt: iso(createdAt) }
    },
    /**
     * Forgets again, in the caller's transaction, what a forget made elsewhere named (its
     * `forget_log` target, as a sync brings it): what is dated at or before `upTo`, the time of
     * that forget, so what was written after it stays. Nothing is logged and nothing missing is
     * an error: the caller stores the forget's own row.
     */
    async replay(tx: Queryable, target: unknown, upTo: Date): Promise<void> {
      const t = parseInput(forgetTarget, target, 'forget target')
      await tx.query(`SET LOCAL engram.forgetting = 'on'`)
      await forgetIn(tx, format, t, upTo)
    },
  }
}

/** Deletes what `t` names (dated at or before `upTo`, when given) and counts it. */
async function forgetIn(tx: Queryable, format: FileFormat, t: z.output<typeof forgetTarget>, upTo: Date | null): Promise<ForgetCounts> {
  // A sync replays several forgets in one transaction: each starts without the lists of the last.
  await tx.exec(`DROP TABLE IF EXISTS pg_temp.forget_events, pg_temp.forget_memories, pg_temp.forget_versions`)
  if ('artifactsBefore' in t) {
    const artifacts = await countChanged(tx, `DELETE FROM artifacts WHERE tenant_id = $1 AND created_at < $2`, [
      t.tenantId,
      toDate(t.artifactsBefore),
    ])
    return { ...NOTHING, artifacts }
  }
  if ('memoryIds' in t) return { ...NOTHING, ...(await forgetMemories(tx, { tenantId: t.tenantId, ids: t.memoryIds }, upTo)) }
  await tx.query(`CREATE TEMP TABLE forget_events (id text PRIMARY KEY) ON COMMIT DROP`)
  let conversation: { tenantId: string; conversationId: string } | null = null
  let wholeTenant: string | null = null
  let archives: number
  // What is archived is forgotten too: a tenant's archives go; any other archive holding
  // the target is put back first, so that the rest of this transaction finds its rows.
  if ('scope' in t && t.scope.userId === undefined && t.scope.agentId === undefined) {
    archives = await countChanged(tx, `DELETE FROM archives WHERE tenant_id = $1`, [t.scope.tenantId])
    // When its conversations were last found says they existed: that goes too.
    await tx.query(`DELETE FROM conversation_hits WHERE tenant_id = $1`, [t.scope.tenantId])
  } else {
    if ('conversationId' in t) {
      await tx.query(`DELETE FROM conversation_hits WHERE tenant_id = $1 AND conversation_id = $2`, [t.tenantId, t.conversationId])
    }
    const { rows } = await tx.query<{ id: string }>(
      'eventId' in t
        ? `SELECT id FROM archives WHERE tenant_id = $1 AND $2 = ANY(event_ids) ORDER BY id`
        : 'conversationId' in t
          ? `SELECT id FROM archives WHERE tenant_id = $1 AND conversation_id = $2 ORDER BY id`
          : `SELECT id FROM archives WHERE tenant_id = $1 AND ($2::text IS NULL OR $2 = ANY(user_ids))
               AND ($3::text IS NULL OR $3 = ANY(agent_ids)) ORDER BY id`,
      'eventId' in t
        ? [t.tenantId, t.eventId]
        : 'conversationId' in t
          ? [t.tenantId, t.conversationId]
          : [t.scope.tenantId, t.scope.userId ?? null, t.scope.agentId ?? null],
    )
    // One nothing can read goes as it is: forget must not be blocked by it.
    archives = (await restoreArchives(tx, format, rows.map((r) => r.id), null, 'drop')).length
  }
  if ('eventId' in t) {
    await tx.query(`INSERT INTO forget_events SELECT id FROM events WHERE id = $1 AND tenant_id = $2`, [t.eventId, t.tenantId])
  } else if ('conversationId' in t) {
    conversation = { tenantId: t.tenantId, conversationId: t.conversationId }
    await tx.query(
      `INSERT INTO forget_events SELECT id FROM events
       WHERE tenant_id = $1 AND conversation_id = $2 AND ($3::timestamptz IS NULL OR created_at <= $3)`,
      [t.tenantId, t.conversationId, upTo],
    )
  } else {
    const s = t.scope
    if (s.userId === undefined && s.agentId === undefined) wholeTenant = s.tenantId
    await tx.query(
      `INSERT INTO forget_events SELECT id FROM events
       WHERE tenant_id = $1 AND ($2::text IS NULL OR user_id = $2) AND ($3::text IS NULL OR agent_id = $3)
         AND ($4::timestamptz IS NULL OR created_at <= $4)`,
      [s.tenantId, s.userId ?? null, s.agentId ?? null, upTo],
    )
  }
  const curated =
    'scope' in t
      ? await forgetMemories(tx, { tenantId: t.scope.tenantId, userId: t.scope.userId, agentId: t.scope.agentId }, upTo)
      : NO_MEMORIES
  return { ...(await forgetRows(tx, conversation, wholeTenant, upTo)), archives, ...curated }
}

const NO_MEMORIES = { memories: 0, memoryHistory: 0, memoryContexts: 0, kv: 0, nodes: 0 }

const NOTHING: ForgetCounts = {
  events: 0,
  chunks: 0,
  artifacts: 0,
  edges: 0,
  versionsCleared: 0,
  versionsDeleted: 0,
  documentsDeleted: 0,
  archives: 0,
  ...NO_MEMORIES,
}

/**
 * Erases curated memories — those of `ids`, or of a tenant narrowed to a user and/or agent —
 * with every history entry (each holds an earlier text) and every link to or from them; for a
 * scope also its memory contexts and policy entries (`user:<id>`, `agent:<id>`, or the whole
 * tenant's, with its entity nodes).
 */
async function forgetMemories(
  tx: Queryable,
  target: { tenantId: string; ids?: string[] | undefined; userId?: string | undefined; agentId?: string | undefined },
  upTo: Date | null,
): Promise<typeof NO_MEMORIES> {
  const user = target.userId ?? null
  const agent = target.agentId ?? null
  // Memories named by id go with their earlier versions: the memories they replaced (by key,
  // as near duplicates), and those these replaced, each holding an earlier text.
  await tx.query(
    `CREATE TEMP TABLE forget_memories ON COMMIT DROP AS
     WITH RECURSIVE chosen AS (
       SELECT id FROM memories
       WHERE tenant_id = $1 AND ($2::text[] IS NULL OR id = ANY($2::text[]))
         AND ($3::text IS NULL OR user_id = $3) AND ($4::text IS NULL OR agent_id = $4)
         AND ($5::timestamptz IS NULL OR created_at <= $5)
       UNION
       SELECT m.id FROM memories m JOIN chosen c ON m.superseded_by = c.id
       WHERE $2::text[] IS NOT NULL AND m.tenant_id = $1
     )
     -- A memory named by id counts even when it is gone: a forget replayed by a sync still
     -- removes the links to it that came back.
     SELECT id FROM chosen UNION SELECT unnest($2::text[])`,
    [target.tenantId, target.ids ?? null, user, agent, upTo],
  )
  await tx.query(
    `DELETE FROM edges WHERE tenant_id = $1 AND (src IN (SELECT id FROM forget_memories) OR dst IN (SELECT id FROM forget_memories))`,
    [target.tenantId],
  )
  const memoryHistory = await countChanged(
    tx,
    `DELETE FROM memory_history WHERE tenant_id = $1 AND memory_id IN (SELECT id FROM forget_memories)`,
    [target.tenantId],
  )
  const memories = await countChanged(tx, `DELETE FROM memories WHERE id IN (SELECT id FROM forget_memories)`)
  if (target.ids !== undefined) return { ...NO_MEMORIES, memories, memoryHistory }
  const wholeTenant = user === null && agent === null
  // A context is a user's (or the tenant's, without one): the user's go with the user.
  await tx.query(
    `DELETE FROM edges WHERE tenant_id = $1 AND dst IN (
       SELECT id FROM memory_contexts WHERE tenant_id = $1 AND ($2 OR (user_id = $3 AND $4::text IS NULL)))
       AND ($5::timestamptz IS NULL OR created_at <= $5)`,
    [target.tenantId, wholeTenant, user, agent, upTo],
  )
  const memoryContexts = await countChanged(
    tx,
    `DELETE FROM memory_contexts WHERE tenant_id = $1 AND ($2 OR (user_id = $3 AND $4::text IS NULL))
       AND ($5::timestamptz IS NULL OR created_at <= $5)`,
    [target.tenantId, wholeTenant, user, agent, upTo],
  )
  // A user's or an agent's own scope; a user and an agent together name neither.
  const ownScope = user !== null && agent === null ? `user:${user}` : agent !== null && user === null ? `agent:${agent}` : null
  const kv = await countChanged(
    tx,
    `DELETE FROM kv WHERE tenant_id = $1 AND ($2 OR scope = $3) AND ($4::timestamptz IS NULL OR created_at <= $4)`,
    [target.tenantId, wholeTenant, ownScope, upTo],
  )
  const { rows: gone } = wholeTenant
    ? await tx.query<{ tenant_id: string; id: string }>(
        `DELETE FROM nodes WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR created_at <= $2) RETURNING tenant_id, id`,
        [target.tenantId, upTo],
      )
    : { rows: [] }
  // Revisions written after the forget's time stay, numbered from 1 again, as a sync numbers them.
  if (upTo !== null) await numberNodeRevisions(tx, [...new Map(gone.map((r) => [r.id, r])).values()])
  return { memories, memoryHistory, memoryContexts, kv, nodes: gone.length }
}

/** The content-free audit row: what was targeted (without the reason), the counts, the time. */
async function logForget(
  tx: Queryable,
  forgetId: string,
  target: { reason?: string | undefined },
  counts: ForgetCounts,
  createdAt: Date,
): Promise<void> {
  const { reason, ...what } = target
  await tx.query(`INSERT INTO forget_log (id, target, counts, reason, created_at) VALUES ($1, $2, $3, $4, $5)`, [
    forgetId,
    JSON.stringify(what),
    JSON.stringify(counts),
    reason ?? null,
    createdAt,
  ])
}

async function forgetRows(
  tx: Queryable,
  conversation: { tenantId: string; conversationId: string } | null,
  wholeTenant: string | null,
  upTo: Date | null,
): Promise<Omit<ForgetCounts, 'archives' | keyof typeof NO_MEMORIES>> {
  const conv = [conversation?.tenantId ?? null, conversation?.conversationId ?? null]
  const chunks = await countChanged(tx, `DELETE FROM chunks WHERE source_id IN (SELECT id FROM forget_events)`)
  const artifacts = await countChanged(tx, `DELETE FROM artifacts WHERE event_id IN (SELECT id FROM forget_events)`)
  const edges = await countChanged(
    tx,
    `DELETE FROM edges
     WHERE src IN (SELECT id FROM forget_events) OR dst IN (SELECT id FROM forget_events)
        OR (((tenant_id = $1 AND conversation_id = $2) OR tenant_id = $3)
            AND ($4::timestamptz IS NULL OR created_at <= $4))`,
    [...conv, wholeTenant, upTo],
  )
  let versionsDeleted = 0
  let documentsDeleted = 0
  if (wholeTenant !== null) {
    const { rows: gone } = await tx.query<{ document_id: string }>(
      `DELETE FROM doc_versions WHERE document_id IN (SELECT id FROM documents WHERE tenant_id = $1)
         AND ($2::timestamptz IS NULL OR created_at <= $2) RETURNING document_id`,
      [wholeTenant, upTo],
    )
    versionsDeleted = gone.length
    // A document goes with its last version: one seen again after the forget's time stays,
    // its versions numbered from 1 again, as a sync numbers them.
    documentsDeleted = await countChanged(
      tx,
      `DELETE FROM documents d WHERE tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM doc_versions v WHERE v.document_id = d.id)`,
      [wholeTenant],
    )
    if (upTo !== null) await numberVersions(tx, [...new Set(gone.map((r) => r.document_id))])
  }
  await tx.query(
    `CREATE TEMP TABLE forget_versions ON COMMIT DROP AS
     SELECT v.id FROM doc_versions v JOIN documents d ON d.id = v.document_id
     WHERE v.event_id IN (SELECT id FROM forget_events)
        OR (d.tenant_id = $1 AND v.conversation_id = $2 AND ($3::timestamptz IS NULL OR v.created_at <= $3))`,
    [...conv, upTo],
  )
  // A content stored once for several versions (documents.deduplicate) stays with the others:
  // the earliest of them takes it and the rest point to that one.
  await tx.query(
    `WITH heirs AS (
       SELECT DISTINCT ON (r.content_of) r.content_of AS keeper, r.id AS heir
       FROM doc_versions r
       WHERE r.content_of IN (SELECT id FROM forget_versions) AND r.id NOT IN (SELECT id FROM forget_versions)
       ORDER BY r.content_of, r.created_at, r.id
     )
     UPDATE doc_versions r
     SET content = CASE WHEN r.id = h.heir THEN k.content END,
         content_of = CASE WHEN r.id = h.heir THEN NULL ELSE h.heir END
     FROM heirs h JOIN doc_versions k ON k.id = h.keeper
     WHERE r.content_of = h.keeper AND r.id NOT IN (SELECT id FROM forget_versions)`,
  )
  const versionsCleared = await countChanged(
    tx,
    `UPDATE doc_versions SET content = NULL, content_of = NULL, conversation_id = NULL, event_id = NULL
     WHERE id IN (SELECT id FROM forget_versions)`,
  )
  const events = await countChanged(tx, `DELETE FROM events WHERE id IN (SELECT id FROM forget_events)`)
  return { events, chunks, artifacts, edges, versionsCleared, versionsDeleted, documentsDeleted }
}
