import type { Queryable } from '../kernel/db.ts'
import { ARRIVING_COUNTER, PARKED_COUNTER } from '../kernel/limits.ts'

/**
 * Merging entity-node revisions from another memory, for a sync (src/core/sync/apply.ts).
 * A revision has no id of its own: it is the same revision when its node, time, type,
 * payload, scope and tombstone are. Each node's revisions are numbered by time on every side,
 * so two memories holding the same revisions number them alike.
 */

/** The order of a node's revisions: time, then what they hold, so that every side agrees. */
const REVISION_ORDER = `n.created_at, n.tombstone, n.type, n.payload::text, n.scope, n.run_id, n.task_id`

/** Adds the revisions not held here and numbers each touched node again; returns the added count. */
export async function mergeNodeRevisions(tx: Queryable, rows: readonly Record<string, unknown>[]): Promise<{ added: number; nodeIds: string[] }> {
  if (rows.length === 0) return { added: 0, nodeIds: [] }
  const { rows: added } = await tx.query<{ id: string; tenant_id: string }>(
    `INSERT INTO nodes (id, rev, tenant_id, type, payload, scope, run_id, task_id, tombstone, created_at)
     SELECT x.id, ${ARRIVING_COUNTER} + (row_number() OVER ())::int, x.tenant_id, x.type, x.payload, x.scope, x.run_id, x.task_id,
            x.tombstone, x.created_at
       FROM jsonb_populate_recordset(NULL::nodes, $1::jsonb) x
      WHERE NOT EXISTS (
        SELECT 1 FROM nodes n WHERE n.tenant_id = x.tenant_id AND n.id = x.id AND n.created_at = x.created_at
           AND n.tombstone = x.tombstone AND n.type = x.type AND n.payload = x.payload
           AND n.scope IS NOT DISTINCT FROM x.scope AND n.run_id IS NOT DISTINCT FROM x.run_id
           AND n.task_id IS NOT DISTINCT FROM x.task_id)
     RETURNING id, tenant_id`,
    [JSON.stringify(rows)],
  )
  if (added.length === 0) return { added: 0, nodeIds: [] }
  const keys = [...new Map(added.map((a) => [`${a.tenant_id}\u0000${a.id}`, a])).values()]
  await numberNodeRevisions(tx, keys)
  return { added: added.length, nodeIds: [...new Set(added.map((a) => a.id))] }
}

/** Numbers the revisions of each node named from 1, by time, then by what they hold. */
export async function numberNodeRevisions(tx: Queryable, nodes: readonly { tenant_id: string; id: string }[]): Promise<void> {
  if (nodes.length === 0) return
  const keys = JSON.stringify(nodes.map((n) => ({ tenant_id: n.tenant_id, id: n.id })))
  await tx.query(
    `WITH keys AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS k(tenant_id text, id text)),
          n AS (
            SELECT n.tenant_id, n.id, n.rev, row_number() OVER (PARTITION BY n.tenant_id, n.id ORDER BY ${REVISION_ORDER})::int AS r
              FROM nodes n JOIN keys USING (tenant_id, id)
          )
     UPDATE nodes SET rev = ${PARKED_COUNTER} + n.r FROM n
      WHERE nodes.tenant_id = n.tenant_id AND nodes.id = n.id AND nodes.rev = n.rev AND n.rev <> n.r`,
    [keys],
  )
  await tx.query(
    `UPDATE nodes SET rev = rev - ${PARKED_COUNTER}
      WHERE rev > ${PARKED_COUNTER} AND (tenant_id, id) IN (SELECT tenant_id, id FROM jsonb_to_recordset($1::jsonb) AS k(tenant_id text, id text))`,
    [keys],
  )
}
