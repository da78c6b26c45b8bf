// Relation names: an edge may only use a relation that is registered.
import type { EngineContext } from '../kernel/engine-context.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { relationName } from './entity-inputs.ts'
import type { RelationRecord } from './entity-records.ts'

/** Registers a relation name, once; `created` tells whether it was new. */
export async function defineRelation(
  ctx: EngineContext,
  name: string,
  description?: string,
): Promise<RelationRecord & { created: boolean }> {
  const { db } = ctx
  const n = parseInput(relationName, name, 'relation name')
  const d = parseInput(z.string().max(500).optional(), description, 'relation description')
  const { rows } = await db.query<{
    id: number
    name: string
    description: string | null
    builtin: boolean
    created: boolean
  }>(
    `WITH ins AS (
       INSERT INTO relations (name, description, builtin, created_at) VALUES ($1, $2, false, $3)
       ON CONFLICT (name) DO NOTHING
       RETURNING id, name, description, builtin, true AS created
     )
     SELECT * FROM ins
     UNION ALL
     SELECT id, name, description, builtin, false FROM relations WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM ins)`,
    [n, d ?? null, ctx.now()],
  )
  return rows[0] as RelationRecord & { created: boolean }
}

/** Every relation name edges may use, by id. */
export async function relations(ctx: EngineContext): Promise<RelationRecord[]> {
  const { db } = ctx
  const { rows } = await db.query<RelationRecord>(
    'SELECT id, name, description, builtin FROM relations ORDER BY id',
  )
  return rows
}
