import type { EngineContext } from '../kernel/engine-context.ts'
import type { Queryable } from '../kernel/db.ts'
import { type Alias, currentId } from '../kernel/aliases.ts'
import { newId } from '../kernel/ids.ts'
import { parseInput } from '../kernel/validate.ts'
import { contextInput, contextsOptions, type MemoryContextInput, type MemoryContextsOptions } from './inputs.ts'
import type { MemoryContextRecord } from './records.ts'
import { unexpired } from './selection.ts'

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

/** Creates a context or sets what it is and weighs (`memories.defineContext`). */
export async function defineMemoryContext(ctx: EngineContext, input: MemoryContextInput): Promise<MemoryContextRecord> {
  const c = parseInput(contextInput, input, 'memory context')
  const { rows } = await ctx.db.query<ContextRow>(
    `WITH up AS (
       INSERT INTO memory_contexts AS x (id, tenant_id, user_id, name, description, priority, created_at)
       VALUES ($1, $2, $3, $4, $5, coalesce($6, 0.5), $7)
       ON CONFLICT (tenant_id, coalesce(user_id, ''), name) DO UPDATE
         SET description = coalesce(EXCLUDED.description, x.description),
             priority = coalesce($6, x.priority),
             updated_at = $7
       RETURNING *
     )
     SELECT up.*, ${CONTEXT_MEMORIES('up', '$7')} AS memories FROM up`,
    [newId('context'), c.tenantId, c.userId ?? null, c.name, c.description ?? null, c.priority ?? null, ctx.now()],
  )
  return toContext(rows[0] as ContextRow)
}

/** The contexts of a tenant or user, highest priority first (`memories.contexts`). */
export async function listMemoryContexts(ctx: EngineContext, options: MemoryContextsOptions): Promise<MemoryContextRecord[]> {
  const o = parseInput(contextsOptions, options, 'contexts options')
  const { rows } = await ctx.db.query<ContextRow>(
    `SELECT c.*, ${CONTEXT_MEMORIES('c', '$3')} AS memories FROM memory_contexts c
     WHERE c.tenant_id = $1 AND ($2::text IS NULL OR c.user_id = $2)
     ORDER BY c.priority DESC, c.name, c.id`,
    [o.tenantId, o.userId ?? null, ctx.now()],
  )
  return rows.map(toContext)
}

/** The id of the user's context of this name, created with default weight when it is new. */
export async function contextIdFor(
  tx: Queryable,
  m: { tenantId: string; userId?: string | undefined },
  name: string,
  at: Date,
): Promise<string> {
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
    [newId('context'), m.tenantId, m.userId ?? null, name, at],
  )
  return (rows[0] as { id: string }).id
}

/** The contexts this memory holds under another id than these rows give the same name. */
export async function sameNameOtherId(tx: Queryable, rows: readonly Record<string, unknown>[]): Promise<{ theirs: string; ours: string }[]> {
  if (rows.length === 0) return []
  const { rows: found } = await tx.query<{ theirs: string; ours: string }>(
    `SELECT x.id AS theirs, c.id AS ours FROM jsonb_populate_recordset(NULL::memory_contexts, $1::jsonb) x
       JOIN memory_contexts c ON c.tenant_id = x.tenant_id AND coalesce(c.user_id, '') = coalesce(x.user_id, '')
                             AND c.name = x.name AND c.id <> x.id`,
    [JSON.stringify(rows)],
  )
  return found
}

/**
 * Gives this memory's contexts the other side's ids (a sync): frees their names, lets `insert`
 * write the other side's rows, then moves the memories' links over and removes the old rows.
 */
export async function renameContexts(tx: Queryable, moves: readonly Alias[], insert: () => Promise<unknown>): Promise<void> {
  const olds = moves.map((m) => m.old)
  if (olds.length > 0) await tx.query(`UPDATE memory_contexts SET name = id || ' ' || name WHERE id = ANY($1::text[])`, [olds])
  await insert()
  if (olds.length === 0) return
  const pairs = `jsonb_to_recordset($1::jsonb) AS p(old text, new text)`
  // A change made here later than the other side's stays, on the row that takes its place.
  await tx.query(
    `UPDATE memory_contexts n SET description = o.description, priority = o.priority, updated_at = o.updated_at
       FROM ${pairs} JOIN memory_contexts o ON o.id = p.old
      WHERE n.id = p.new AND o.updated_at IS NOT NULL AND (n.updated_at IS NULL OR o.updated_at > n.updated_at)`,
    [JSON.stringify(moves)],
  )
  await tx.query(`UPDATE edges e SET dst = p.new FROM ${pairs} WHERE e.dst = p.old`, [JSON.stringify(moves)])
  await tx.query(`DELETE FROM memory_contexts WHERE id = ANY($1::text[])`, [olds])
}

/**
 * Takes the other side's later changes of contexts both hold (by id, or by an id a sync
 * retired for one here); returns the ids changed.
 */
export async function takeContextChanges(tx: Queryable, rows: readonly Record<string, unknown>[]): Promise<string[]> {
  if (rows.length === 0) return []
  const { rows: changed } = await tx.query<{ id: string }>(
    `UPDATE memory_contexts m SET description = x.description, priority = x.priority, updated_at = x.updated_at
       FROM jsonb_populate_recordset(NULL::memory_contexts, $1::jsonb) x
      WHERE m.id = ${currentId('x.id')} AND x.updated_at IS NOT NULL
        AND (m.updated_at IS NULL OR (x.updated_at, x.priority, coalesce(x.description, '')) > (m.updated_at, m.priority, coalesce(m.description, '')))
      RETURNING m.id`,
    [JSON.stringify(rows)],
  )
  return changed.map((r) => r.id)
}
