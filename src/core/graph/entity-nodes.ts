// Entity nodes: every change is a new revision of the node, and removal is a tombstone
// revision, so reads at an earlier time still find what was there.
import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { redactUnknown } from '../privacy/redact.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { entityId, warnOfTombstones } from './edges.ts'
import {
  type NodeHistoryOptions,
  nodeHistoryOptions,
  type NodeInput,
  nodeInput,
  type NodeReadOptions,
  nodeReadOptions,
  type NodesOptions,
  nodesOptions,
  removeOptions,
  type RemoveOptions,
} from './entity-inputs.ts'
import { type NodeRecord, type NodeRow, toNode } from './entity-records.ts'

export type NodeWrite = { id: string; rev: number; action: 'created' | 'updated' | 'unchanged' }
export type ParsedNode = z.output<typeof nodeInput>

/** Validated nodes, and one of each (tenant, id): the same id twice with two types is a CONFLICT. */
export function nodeBatch(inputs: NodeInput[]): { nodes: ParsedNode[]; batch: ParsedNode[] } {
  const nodes = parseInput(z.array(nodeInput).max(100_000), inputs, 'nodes')
  const seen = new Map<string, ParsedNode>()
  for (const n of nodes) {
    const key = JSON.stringify([n.tenantId, n.id])
    const prev = seen.get(key)
    if (prev && prev.type !== n.type) {
      throw new MemoryError(
        'CONFLICT',
        `Node id "${n.id}" is given twice with types "${prev.type}" and "${n.type}"`,
        {
          details: { id: n.id },
        },
      )
    }
    seen.set(key, n)
  }
  return { nodes, batch: [...seen.values()] }
}

/** Writes `batch` in `tx`: a new revision of each node that is new, removed or changed. */
export async function writeNodes(tx: Queryable, batch: ParsedNode[], at: Date) {
  const args = [
    batch.map((n) => n.tenantId),
    batch.map((n) => n.id),
    batch.map((n) => n.type),
    batch.map((n) => JSON.stringify(redactUnknown(n.payload).value)),
    batch.map((n) => n.scope ?? null),
    batch.map((n) => n.runId ?? null),
    batch.map((n) => n.taskId ?? null),
  ]
  const input = `unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::text[])
                   AS i(tenant_id, id, type, payload, scope, run_id, task_id)`
  const latest = `SELECT DISTINCT ON (n.tenant_id, n.id) n.*
                  FROM nodes n
                  WHERE n.id = ANY($2::text[])
                  ORDER BY n.tenant_id, n.id, n.rev DESC`
  const clash = await tx.query<{ id: string; old_type: string; new_type: string }>(
    `SELECT i.id, l.type AS old_type, i.type AS new_type
     FROM ${input} JOIN (${latest}) l ON l.tenant_id = i.tenant_id AND l.id = i.id
     WHERE NOT l.tombstone AND l.type <> i.type
     ORDER BY i.id LIMIT 1`,
    args,
  )
  const c = clash.rows[0]
  if (c) {
    throw new MemoryError(
      'CONFLICT',
      `Node id "${c.id}" already names a "${c.old_type}", not a "${c.new_type}"`,
      { details: { id: c.id, existingType: c.old_type, type: c.new_type } },
    )
  }
  const { rows } = await tx.query<{ id: string; tenant_id: string; rev: number; prev: number | null }>(
    `INSERT INTO nodes (id, rev, tenant_id, type, payload, scope, run_id, task_id, tombstone, created_at)
     SELECT i.id, coalesce(l.rev, 0) + 1, i.tenant_id, i.type, i.payload, i.scope, i.run_id, i.task_id, false, $8
     FROM ${input} LEFT JOIN (${latest}) l ON l.tenant_id = i.tenant_id AND l.id = i.id
     WHERE l.id IS NULL OR l.tombstone OR l.payload <> i.payload OR l.scope IS DISTINCT FROM i.scope
     RETURNING id, tenant_id, rev, nullif(rev - 1, 0) AS prev`,
    [...args, at],
  )
  const { rows: unchanged } = await tx.query<{ id: string; tenant_id: string; rev: number }>(
    `SELECT DISTINCT ON (tenant_id, id) tenant_id, id, rev FROM nodes
     WHERE id = ANY($1::text[]) ORDER BY tenant_id, id, rev DESC`,
    [args[1]],
  )
  return { written: rows, unchanged }
}

/** Reports a node write to telemetry; returns each input's result, in order. */
export function nodeResults(
  ctx: EngineContext,
  nodes: ParsedNode[],
  batch: ParsedNode[],
  result: Awaited<ReturnType<typeof writeNodes>>,
  at: Date,
): NodeWrite[] {
  const { telemetry } = ctx
  const written = new Map(result.written.map((r) => [JSON.stringify([r.tenant_id, r.id]), r]))
  const unchanged = new Map(result.unchanged.map((r) => [JSON.stringify([r.tenant_id, r.id]), r]))
  if (telemetry.listeners.size > 0) {
    for (const n of batch) {
      const w = written.get(JSON.stringify([n.tenantId, n.id]))
      if (!w) continue
      telemetry.emit({
        op: w.rev > 1 ? 'overwrite' : 'write',
        memoryId: n.id,
        entityType: 'node',
        scope: n.scope ?? null,
        runId: n.runId ?? null,
        taskId: n.taskId ?? null,
        at,
        detail: { type: n.type, rev: w.rev },
      })
    }
  }
  return nodes.map((n) => {
    const key = JSON.stringify([n.tenantId, n.id])
    const w = written.get(key)
    if (w) return { id: n.id, rev: w.rev, action: w.rev > 1 ? ('updated' as const) : ('created' as const) }
    return { id: n.id, rev: unchanged.get(key)?.rev ?? 0, action: 'unchanged' as const }
  })
}

/** Tombstones the live nodes among `ids` and their live edges, in one transaction. */
export async function removeNodes(
  ctx: EngineContext,
  ids: string[],
  options: RemoveOptions = {},
): Promise<{ removed: string[]; edges: number }> {
  const { db, telemetry } = ctx
  const nodeIds = [...new Set(parseInput(z.array(entityId).max(100_000), ids, 'node ids'))]
  const o = parseInput(removeOptions, options, 'remove options')
  if (nodeIds.length === 0) return { removed: [], edges: 0 }
  const at = ctx.now()
  const out = await db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO nodes (id, rev, tenant_id, type, payload, scope, run_id, task_id, tombstone, created_at)
       SELECT id, rev + 1, tenant_id, type, payload, scope, $3, $4, true, $5
       FROM (SELECT DISTINCT ON (id) * FROM nodes WHERE tenant_id = $1 AND id = ANY($2::text[]) ORDER BY id, rev DESC) l
       WHERE NOT l.tombstone
       RETURNING id`,
      [o.tenantId, nodeIds, o.runId ?? null, o.taskId ?? null, at],
    )
    const removed = rows.map((r) => r.id).sort()
    if (removed.length === 0) return { removed, edges: 0 }
    const edges = await tx.query<{ id: string; src: string; rel: string; dst: string }>(
      `UPDATE edges e SET tombstoned_at = greatest($3, e.created_at) FROM relations r
       WHERE r.id = e.rel AND e.tenant_id = $1 AND (e.src = ANY($2::text[]) OR e.dst = ANY($2::text[])) AND e.tombstoned_at IS NULL
       RETURNING e.id, e.src, r.name AS rel, e.dst`,
      [o.tenantId, removed, at],
    )
    return { removed, edges: edges.rows.length, tombstoned: edges.rows }
  })
  // The links that went with the nodes, each reported as a removal of its own.
  for (const e of out.tombstoned ?? []) {
    telemetry.emit({
      op: 'delete',
      memoryId: e.id,
      entityType: 'edge',
      scope: null,
      runId: o.runId ?? null,
      taskId: o.taskId ?? null,
      at,
      detail: { src: e.src, rel: e.rel, dst: e.dst },
    })
  }
  for (const id of out.removed) {
    telemetry.emit({
      op: 'delete',
      memoryId: id,
      entityType: 'node',
      scope: null,
      runId: o.runId ?? null,
      taskId: o.taskId ?? null,
      at,
    })
  }
  if (out.edges > 0) await warnOfTombstones(ctx, at)
  return { removed: out.removed, edges: out.edges }
}

/** Writes the nodes in one transaction; each input's result, in order. */
export async function putNodes(ctx: EngineContext, inputs: NodeInput[]): Promise<NodeWrite[]> {
  const { db } = ctx
  const { nodes, batch } = nodeBatch(inputs)
  if (nodes.length === 0) return []
  const at = ctx.now()
  const result = await db.transaction((tx) => writeNodes(tx, batch, at))
  return nodeResults(ctx, nodes, batch, result, at)
}

/** `putNodes` for one node. */
export async function putNode(ctx: EngineContext, input: NodeInput): Promise<NodeWrite> {
  const [r] = await putNodes(ctx, [input])
  return r as NodeWrite
}

/** `removeNodes` for one node: whether it was live, and how many edges went with it. */
export async function removeNode(
  ctx: EngineContext,
  id: string,
  options: RemoveOptions = {},
): Promise<{ removed: boolean; edges: number }> {
  const nodeId = parseInput(entityId, id, 'node id')
  const out = await removeNodes(ctx, [nodeId], options)
  return { removed: out.removed.length > 0, edges: out.edges }
}

/** The node now, at `asOf`, or at revision `rev`; null when absent or removed. */
export async function getNode(ctx: EngineContext, id: string, options: NodeReadOptions = {}): Promise<NodeRecord | null> {
  const { db, telemetry } = ctx
  const nodeId = parseInput(entityId, id, 'node id')
  const o = parseInput(nodeReadOptions, options, 'node read options')
  const { rows } = await db.query<NodeRow>(
    `SELECT * FROM nodes
     WHERE tenant_id = $1 AND id = $2 AND ($3::timestamptz IS NULL OR created_at <= $3) AND ($4::int IS NULL OR rev = $4)
     ORDER BY rev DESC LIMIT 1`,
    [o.tenantId, nodeId, o.asOf ?? null, o.rev ?? null],
  )
  const row = rows[0]
  telemetry.emit({
    op: 'read',
    memoryId: nodeId,
    entityType: 'node',
    scope: row?.scope ?? null,
    runId: o.runId ?? null,
    taskId: o.taskId ?? null,
  })
  return row && !row.tombstone ? toNode(row) : null
}

/** Every revision of a node, oldest first, removals among them. */
export async function nodeHistory(
  ctx: EngineContext,
  id: string,
  options: NodeHistoryOptions = {},
): Promise<(NodeRecord & { tombstone: boolean })[]> {
  const { db, telemetry } = ctx
  const nodeId = parseInput(entityId, id, 'node id')
  const o = parseInput(nodeHistoryOptions, options, 'node history options')
  const { rows } = await db.query<NodeRow>(`SELECT * FROM nodes WHERE tenant_id = $1 AND id = $2 ORDER BY rev`, [o.tenantId, nodeId])
  telemetry.emit({
    op: 'read',
    memoryId: nodeId,
    entityType: 'node',
    scope: null,
    runId: o.runId ?? null,
    taskId: o.taskId ?? null,
    detail: { history: rows.length },
  })
  return rows.map((r) => ({ ...toNode(r), tombstone: r.tombstone }))
}

/** The tenant's live nodes, now or at `asOf`, filtered by ids, type and scope. */
export async function listNodes(ctx: EngineContext, options: NodesOptions = {}): Promise<NodeRecord[]> {
  const { db, telemetry } = ctx
  const o = parseInput(nodesOptions, options, 'nodes options')
  const { rows } = await db.query<NodeRow>(
    `SELECT * FROM (
       SELECT DISTINCT ON (n.id) n.* FROM nodes n
       WHERE n.tenant_id = $1 AND ($3::timestamptz IS NULL OR n.created_at <= $3)
         AND ($6::text[] IS NULL OR n.id = ANY($6::text[]))
         -- Nodes that ever had the type, found by its index; their latest revision decides.
         AND ($2::text IS NULL OR n.id IN (SELECT t.id FROM nodes t WHERE t.tenant_id = $1 AND t.type = $2))
       ORDER BY n.id, n.rev DESC
     ) n
     WHERE NOT n.tombstone AND ($2::text IS NULL OR n.type = $2) AND ($4::text IS NULL OR n.scope = $4)
     ORDER BY n.id
     LIMIT $5`,
    [o.tenantId, o.type ?? null, o.asOf ?? null, o.scope ?? null, o.limit, o.ids ?? null],
  )
  telemetry.emit({
    op: 'query',
    memoryId: null,
    entityType: 'node',
    scope: o.scope ?? null,
    runId: o.runId ?? null,
    taskId: o.taskId ?? null,
    detail: { results: rows.length },
  })
  return rows.map(toNode)
}
