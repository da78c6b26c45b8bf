// The links of entity nodes, read in one query from either end.
import type { EngineContext } from '../kernel/engine-context.ts'
import { parseInput } from '../kernel/validate.ts'
import { edgeHeldAt, edgeVisibleAt, entityId, relationIds } from './edges.ts'
import { entityIds, type NeighborsOptions, neighborsOptions } from './entity-inputs.ts'
import { corrupt, isJsonObject, type Neighbor } from './entity-records.ts'

/** A link as the neighbours query returns it, seen from the node asked about. */
interface NeighborRow {
  id: string
  src: string
  rel_id: number
  rel: string | null
  dst: string
  props: unknown
  direction: 'out' | 'in'
  run_id: string | null
  task_id: string | null
  created_at: Date
  neighbor_type: string | null
  valid_from: Date | null
  valid_to: Date | null
}

/** A neighbour row as returned to the caller; a damaged relation or payload is CORRUPT. */
function toNeighbor(r: NeighborRow): Neighbor {
  if (r.rel === null) {
    throw corrupt(`Edge "${r.id}" points at relation id ${r.rel_id}, which does not exist`, {
      edgeId: r.id,
      relId: r.rel_id,
    })
  }
  if (!isJsonObject(r.props))
    throw corrupt(`Edge "${r.id}" has a payload that is not an object`, { edgeId: r.id })
  return {
    edgeId: r.id,
    src: r.src,
    rel: r.rel,
    dst: r.dst,
    neighbor: r.direction === 'out' ? r.dst : r.src,
    direction: r.direction,
    payload: r.props,
    neighborType: r.neighbor_type,
    validFrom: r.valid_from,
    validTo: r.valid_to,
    runId: r.run_id,
    taskId: r.task_id,
    createdAt: r.created_at,
  }
}

/** Links of one or more nodes, in the asked direction and relations, now or at `asOf`. */
export async function neighbors(
  ctx: EngineContext,
  id: string | readonly string[],
  options: NeighborsOptions = {},
): Promise<Neighbor[]> {
  const { db, telemetry } = ctx
  const nodeIds = typeof id === 'string' ? [parseInput(entityId, id, 'node id')] : parseInput(entityIds, id, 'node ids')
  const o = parseInput(neighborsOptions, options, 'neighbor options')
  const rels =
    o.rel === undefined
      ? null
      : [...(await relationIds(db, typeof o.rel === 'string' ? [o.rel] : o.rel)).values()]
  const { rows } = await db.query<NeighborRow>(
    `WITH hits AS (
       SELECT e.*, 'out' AS direction, e.dst AS neighbor FROM edges e
       WHERE $3 IN ('out', 'both') AND e.tenant_id = $1 AND e.src = ANY($2::text[])
       UNION ALL
       SELECT e.*, 'in' AS direction, e.src AS neighbor FROM edges e
       WHERE $3 IN ('in', 'both') AND e.tenant_id = $1 AND e.dst = ANY($2::text[])
     )
     SELECT h.id, h.src, h.rel AS rel_id, r.name AS rel, h.dst, h.props, h.direction, h.run_id,
            h.task_id, h.created_at, CASE WHEN nt.tombstone THEN NULL ELSE nt.type END AS neighbor_type,
            h.valid_from, h.valid_to
     FROM hits h
     LEFT JOIN relations r ON r.id = h.rel
     LEFT JOIN LATERAL (
       SELECT n.type, n.tombstone FROM nodes n
       WHERE n.tenant_id = $1 AND n.id = h.neighbor AND ($4::timestamptz IS NULL OR n.created_at <= $4)
       ORDER BY n.rev DESC LIMIT 1
     ) nt ON true
     WHERE ($5::int[] IS NULL OR h.rel = ANY($5::int[]))
       AND ${edgeVisibleAt('$4', 'h')} AND ${edgeHeldAt('$7', 'h')}
     ORDER BY h.created_at, h.id, h.direction
     LIMIT $6`,
    [o.tenantId, [...new Set(nodeIds)], o.direction, o.asOf ?? null, rels, o.limit, o.validAt ?? null],
  )
  const out = rows.map(toNeighbor)
  telemetry.emit({
    op: 'query',
    memoryId: nodeIds.length === 1 ? (nodeIds[0] as string) : null,
    entityType: 'edge',
    scope: null,
    runId: o.runId ?? null,
    taskId: o.taskId ?? null,
    detail: { results: out.length },
  })
  return out
}
