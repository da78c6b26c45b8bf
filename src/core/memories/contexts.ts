import type { EngineContext } from '../kernel/engine-context.ts'
import type { Queryable } from '../kernel/db.ts'
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
             priority = coalesce($6, x.priority)
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
