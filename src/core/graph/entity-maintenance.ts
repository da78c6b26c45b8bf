// Upkeep of the entity graph: the one operation that really deletes, and an integrity check.
import type { EngineContext } from '../kernel/engine-context.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { timeDate } from '../kernel/time.ts'
import { TOMBSTONE_WARNING_RATIO } from './edges.ts'
import { corrupt, type GraphVerifyReport } from './entity-records.ts'

/** Deletes tombstoned edges and removed nodes whose tombstone is older than `before`. */
export async function compact(ctx: EngineContext, options: { before: Date | string }): Promise<{ edges: number; nodes: number }> {
  const { db } = ctx
  const o = parseInput(z.strictObject({ before: timeDate }), options, 'compact options')
  return db.transaction(async (tx) => {
    const edges = await tx.query(
      'DELETE FROM edges WHERE tombstoned_at IS NOT NULL AND tombstoned_at < $1',
      [o.before],
    )
    const nodes = await tx.query(
      `DELETE FROM nodes n USING (
         SELECT DISTINCT ON (tenant_id, id) tenant_id, id, tombstone, created_at
         FROM nodes ORDER BY tenant_id, id, rev DESC
       ) l
       WHERE n.tenant_id = l.tenant_id AND n.id = l.id AND l.tombstone AND l.created_at < $1`,
      [o.before],
    )
    return { edges: edges.affectedRows ?? 0, nodes: nodes.affectedRows ?? 0 }
  })
}

/** Checks the graph's integrity; throws CORRUPT listing what is wrong. */
export async function verify(ctx: EngineContext): Promise<GraphVerifyReport> {
  const { db } = ctx
  const { rows } = await db.query<{ kind: string; id: string; detail: string }>(
    `SELECT 'unknown_relation' AS kind, e.id, e.rel::text AS detail
       FROM edges e LEFT JOIN relations r ON r.id = e.rel WHERE r.id IS NULL
     UNION ALL
     SELECT 'edge_payload', e.id, jsonb_typeof(e.props) FROM edges e WHERE jsonb_typeof(e.props) <> 'object'
     UNION ALL
     SELECT 'tombstone_before_creation', e.id, e.tombstoned_at::text FROM edges e WHERE e.tombstoned_at < e.created_at
     UNION ALL
     SELECT 'node_payload', n.id, n.rev::text FROM nodes n WHERE jsonb_typeof(n.payload) <> 'object'
     UNION ALL
     SELECT 'node_revision_gap', g.id, g.revs::text FROM (
       SELECT id, count(*) AS revs, max(rev) AS top FROM nodes GROUP BY tenant_id, id
     ) g WHERE g.revs <> g.top
     ORDER BY 1, 2
     LIMIT 100`,
  )
  if (rows.length > 0) {
    throw corrupt(
      `The graph is damaged: ${rows.length} problem(s), first: ${rows[0]?.kind} at "${rows[0]?.id}"`,
      {
        issues: rows,
      },
    )
  }
  const { rows: counts } = await db.query<{
    edges: number
    tombstoned: number
    nodes: number
    removed: number
  }>(
    `SELECT (SELECT count(*)::int FROM edges) AS edges,
            (SELECT count(*)::int FROM edges WHERE tombstoned_at IS NOT NULL) AS tombstoned,
            (SELECT count(DISTINCT (tenant_id, id))::int FROM nodes) AS nodes,
            (SELECT count(*)::int FROM (
               SELECT DISTINCT ON (tenant_id, id) tombstone FROM nodes ORDER BY tenant_id, id, rev DESC
             ) l WHERE l.tombstone) AS removed`,
  )
  const c = counts[0] as { edges: number; tombstoned: number; nodes: number; removed: number }
  const ratio = c.edges === 0 ? 0 : c.tombstoned / c.edges
  const warnings =
    ratio > TOMBSTONE_WARNING_RATIO
      ? [`${Math.round(ratio * 100)}% of edges are tombstoned: run graph.compact()`]
      : []
  return {
    ok: true,
    nodes: c.nodes,
    edges: c.edges,
    tombstonedEdges: c.tombstoned,
    tombstonedNodes: c.removed,
    tombstoneRatio: ratio,
    warnings,
  }
}
