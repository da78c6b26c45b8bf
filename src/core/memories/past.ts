import type { Params } from '../db/params.ts'
import type { JsonObject } from '../graph/entities.ts'
import type { Queryable } from '../kernel/db.ts'
import { embedderFailed, toVectorParam } from '../kernel/embedder.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { memoryHash } from '../kernel/hash.ts'
import type { StoredSensitivity } from '../kernel/scope.ts'
import { isSealed, SEALED_SQL } from '../privacy/vault.ts'
import type { MemoryCategory, MemoryStatus } from './records.ts'
import { COLUMNS, type MemoryRow } from './rows.ts'

/**
 * Vectors, by text, of the texts the memories changed since `at` had then and have no
 * longer, embedded now by the current model (none without one or for sealed text).
 */
export async function pastVectors(
  ctx: EngineContext,
  tenantId: string,
  at: Date,
  allowed: readonly string[],
  mayRead: (r: MemoryRow) => boolean,
): Promise<Map<string, string>> {
  const vectors = new Map<string, string>()
  const embedder = ctx.embedder
  if (!embedder) return vectors
  const { then, current } = await changedSince(ctx.db, tenantId, at)
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
      m.hash = isSealed(h.old_value) ? m.hash : memoryHash(h.old_value)
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
