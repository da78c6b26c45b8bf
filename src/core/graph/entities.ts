import type { Queryable } from '../kernel/db.ts'
import { identifier } from '../kernel/scope.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { newId } from '../kernel/ids.ts'
import { jsonRecord } from '../kernel/json.ts'
import { MAX_REVISION } from '../kernel/limits.ts'
import { redactUnknown } from '../privacy/redact.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { timeDate } from '../kernel/time.ts'
import { edgeHeldAt, edgeVisibleAt, entityId, relationIds, storedName, TOMBSTONE_WARNING_RATIO, warnOfTombstones } from './edges.ts'

export { entityId, relationIds }

export type JsonObject = { [key: string]: unknown }

export interface NodeRecord {
  id: string
  type: string
  payload: JsonObject
  rev: number
  scope: string | null
  runId: string | null
  taskId: string | null
  tenantId: string
  /** When this revision was written. */
  updatedAt: Date
}

export interface Neighbor {
  edgeId: string
  src: string
  rel: string
  dst: string
  /** The id at the other end, seen from the node asked about. */
  neighbor: string
  direction: 'out' | 'in'
  payload: JsonObject
  /** Type of the neighbour when it is a live entity node, else null. */
  neighborType: string | null
  /** When the link held in the world (`putEdge`'s `validFrom` / `validTo`), null when open. */
  validFrom: Date | null
  validTo: Date | null
  runId: string | null
  taskId: string | null
  createdAt: Date
}

export interface RelationRecord {
  id: number
  name: string
  description: string | null
  builtin: boolean
}

export interface GraphVerifyReport {
  ok: true
  nodes: number
  edges: number
  tombstonedEdges: number
  tombstonedNodes: number
  tombstoneRatio: number
  warnings: string[]
}


const RELATION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/

const tenant = identifier.default('default')
/** Whose the row is, and the run and task a write (or a read, in telemetry) belongs to. */
const provenance = {
  tenantId: tenant,
  runId: identifier.optional(),
  taskId: identifier.optional(),
}
export const entityIds = z.array(entityId).min(1).max(10_000)
const payloadSchema = jsonRecord

const nodeInput = z.strictObject({
  id: entityId,
  type: storedName(200),
  payload: payloadSchema.default({}),
  scope: storedName(200).optional(),
  ...provenance,
})
export type NodeInput = z.input<typeof nodeInput>

const edgeInput = z
  .strictObject({
    src: entityId,
    rel: z.string().min(1).max(64),
    dst: entityId,
    payload: payloadSchema.default({}),
    conversationId: identifier.optional(),
    /**
     * When the link started and stopped holding in the world (not when it was recorded).
     * Links of the same nodes and relation with other starts are other facts; the same start
     * with a new end revises the link.
     */
    validFrom: timeDate.optional(),
    validTo: timeDate.optional(),
    ...provenance,
  })
  .refine((e) => !e.validFrom || !e.validTo || e.validTo > e.validFrom, {
    message: 'validTo must come after validFrom',
    path: ['validTo'],
  })
export type EdgeInput = z.input<typeof edgeInput>

export type EdgeOptions = Omit<EdgeInput, 'src' | 'rel' | 'dst' | 'payload'>

const removeOptions = z.strictObject(provenance)
export type RemoveOptions = z.input<typeof removeOptions>

const asOf = timeDate.optional()
export const nodeReadOptions = z
  .strictObject({ ...provenance, asOf, /** One revision of the node, by number. */ rev: z.number().int().min(1).max(MAX_REVISION).optional() })
  .refine((v) => v.asOf === undefined || v.rev === undefined, { message: 'give asOf or rev, not both' })
export type NodeReadOptions = z.input<typeof nodeReadOptions>
export const nodeHistoryOptions = z.strictObject(provenance)
export type NodeHistoryOptions = z.input<typeof nodeHistoryOptions>

export const nodesOptions = z.strictObject({
  ...provenance,
  asOf,
  /** Only these ids (those that name a live node). */
  ids: z.array(entityId).max(10_000).optional(),
  type: storedName(200).optional(),
  scope: storedName(200).optional(),
  limit: z.number().int().min(1).max(100_000).default(1000),
})
export type NodesOptions = z.input<typeof nodesOptions>

export const neighborsOptions = z.strictObject({
  ...provenance,
  asOf,
  /** Only links that held at this time in the world (`validFrom` ≤ it < `validTo`; an open end holds). */
  validAt: timeDate.optional(),
  direction: z.enum(['out', 'in', 'both']).default('out'),
  rel: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  limit: z.number().int().min(1).max(100_000).default(1000),
})
export type NeighborsOptions = z.input<typeof neighborsOptions>

const relationName = z
  .string()
  .regex(RELATION_NAME, 'letters, digits, _ . : - (max 64), starting with a letter or _')

const graphWriteInput = z.strictObject({
  /** Defined when they are not yet, so that the edges may use them. */
  relations: z.array(z.strictObject({ name: relationName, description: z.string().max(500).optional() })).max(1000).default([]),
  nodes: z.array(z.unknown()).default([]),
  edges: z.array(z.unknown()).default([]),
})
export type GraphWriteInput = z.input<typeof graphWriteInput>

/**
 * Ids among `ids` that point at no live row of the tenant (entity node, memory, event,
 * document …): another tenant's row counts as missing, so the answer reveals nothing of it.
 */
export async function missingReferences(
  q: Queryable,
  tenantId: string,
  ids: readonly string[],
): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT x.id FROM unnest($2::text[]) AS x(id)
     WHERE NOT EXISTS (
             SELECT 1 FROM nodes n WHERE n.tenant_id = $1 AND n.id = x.id
               AND n.rev = (SELECT max(n2.rev) FROM nodes n2 WHERE n2.tenant_id = $1 AND n2.id = x.id)
               AND NOT n.tombstone)
       AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = x.id AND m.tenant_id = $1 AND m.status <> 'deleted')
       AND NOT EXISTS (SELECT 1 FROM memory_contexts c WHERE c.id = x.id AND c.tenant_id = $1)
       AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = x.id AND e.tenant_id = $1)
       AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = x.id AND d.tenant_id = $1)
       AND NOT EXISTS (SELECT 1 FROM doc_versions v JOIN documents d ON d.id = v.document_id
                       WHERE v.id = x.id AND d.tenant_id = $1)
       AND NOT EXISTS (SELECT 1 FROM chunks k WHERE k.id = x.id AND k.tenant_id = $1)
       AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.id = x.id AND a.tenant_id = $1)
     ORDER BY x.id`,
    [tenantId, [...new Set(ids)]],
  )
  return rows.map((r) => r.id)
}

interface ParsedEdge {
  src: string
  rel: string
  dst: string
  payload: JsonObject
  validFrom?: Date | undefined
  validTo?: Date | undefined
  conversationId?: string | undefined
  tenantId: string
  runId?: string | undefined
  taskId?: string | undefined
}

export interface EdgeWriteResult {
  id: string
  action: 'created' | 'overwritten' | 'unchanged'
}

/**
 * Writes edges inside a transaction: a live edge with the same (src, rel, dst, validFrom) and
 * the same payload and validTo is left alone; with another payload or validTo it is
 * tombstoned and replaced, so as-of reads still see the old one. Within one call the last
 * write of a link wins.
 */
export async function writeEdges(
  tx: Queryable,
  edges: readonly ParsedEdge[],
  at: Date,
): Promise<{ results: EdgeWriteResult[]; written: (ParsedEdge & EdgeWriteResult)[] }> {
  if (edges.length === 0) return { results: [], written: [] }
  const rels = await relationIds(
    tx,
    edges.map((e) => e.rel),
  )
  const linkKey = (e: ParsedEdge) => JSON.stringify([e.tenantId, e.src, e.rel, e.dst, e.validFrom?.getTime() ?? null])
  const last = new Map<string, number>()
  edges.forEach((e, i) => {
    last.set(linkKey(e), i)
  })
  const batch = [...last.values()].map((i) => ({ ...(edges[i] as ParsedEdge), id: newId('edge') }))
  const cols = {
    id: batch.map((e) => e.id),
    tenant: batch.map((e) => e.tenantId),
    src: batch.map((e) => e.src),
    rel: batch.map((e) => rels.get(e.rel) as number),
    dst: batch.map((e) => e.dst),
    props: batch.map((e) => JSON.stringify(redactUnknown(e.payload).value)),
    conv: batch.map((e) => e.conversationId ?? null),
    run: batch.map((e) => e.runId ?? null),
    task: batch.map((e) => e.taskId ?? null),
    from: batch.map((e) => e.validFrom ?? null),
    to: batch.map((e) => e.validTo ?? null),
  }
  // One statement: find live twins, tombstone the changed ones, insert the new rows (data-
  // modifying CTEs always run to completion, and all parts see the same snapshot).
  const { rows } = await tx.query<{ input_id: string; live_id: string | null; same: boolean | null }>(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::jsonb[],
                            $7::text[], $8::text[], $9::text[], $11::timestamptz[], $12::timestamptz[])
         AS i(id, tenant_id, src, rel, dst, props, conversation_id, run_id, task_id, valid_from, valid_to)
     ),
     twin AS (
       SELECT i.id AS input_id, e.id AS live_id,
              e.props = i.props AND e.valid_to IS NOT DISTINCT FROM i.valid_to AS same
       FROM input i
       JOIN edges e ON e.tenant_id = i.tenant_id AND e.src = i.src AND e.rel = i.rel AND e.dst = i.dst
                   AND e.valid_from IS NOT DISTINCT FROM i.valid_from AND e.tombstoned_at IS NULL
     ),
     retired AS (
       UPDATE edges SET tombstoned_at = greatest($10, created_at)
       WHERE id IN (SELECT live_id FROM twin WHERE NOT same)
       RETURNING id
     ),
     inserted AS (
       INSERT INTO edges (id, src, rel, dst, props, tenant_id, conversation_id, run_id, task_id, created_at,
                          valid_from, valid_to)
       SELECT i.id, i.src, i.rel, i.dst, i.props, i.tenant_id, i.conversation_id, i.run_id, i.task_id, $10,
              i.valid_from, i.valid_to
       FROM input i
       WHERE NOT EXISTS (SELECT 1 FROM twin t WHERE t.input_id = i.id AND t.same)
       RETURNING id
     )
     SELECT i.id AS input_id, t.live_id, t.same
     FROM input i LEFT JOIN twin t ON t.input_id = i.id`,
    [cols.id, cols.tenant, cols.src, cols.rel, cols.dst, cols.props, cols.conv, cols.run, cols.task, at, cols.from, cols.to],
  )
  const twins = new Map(rows.map((r) => [r.input_id, r]))
  const written = batch.map((e) => {
    const twin = twins.get(e.id)
    const result: EdgeWriteResult =
      twin?.same === true
        ? { id: twin.live_id as string, action: 'unchanged' }
        : { id: e.id, action: twin?.live_id ? 'overwritten' : 'created' }
    return { ...e, ...result }
  })
  const byLink = new Map(written.map((w) => [linkKey(w), w]))
  const results = edges.map((e) => {
    const w = byLink.get(linkKey(e)) as EdgeWriteResult
    return { id: w.id, action: w.action }
  })
  return { results, written }
}

export interface NodeRow {
  id: string
  type: string
  payload: unknown
  rev: number
  scope: string | null
  run_id: string | null
  task_id: string | null
  tenant_id: string
  created_at: Date
  tombstone: boolean
}

export function corrupt(message: string, details: Record<string, unknown>): MemoryError {
  return new MemoryError('CORRUPT', message, { details })
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function toNode(row: NodeRow): NodeRecord {
  if (!isJsonObject(row.payload)) {
    throw corrupt(`Node "${row.id}" rev ${row.rev} has a payload that is not an object`, { id: row.id })
  }
  return {
    id: row.id,
    type: row.type,
    payload: row.payload,
    rev: row.rev,
    scope: row.scope,
    runId: row.run_id,
    taskId: row.task_id,
    tenantId: row.tenant_id,
    updatedAt: row.created_at,
  }
}

/**
 * The entity graph: typed nodes (files, symbols, modules, decisions …) and edges between
 * any two ids under interned relations. Every change is a new row; removal is a tombstone;
 * `compact` is the one operation that really deletes.
 */
export function entityGraphApi(ctx: EngineContext) {
  const { db, telemetry } = ctx

  type NodeWrite = { id: string; rev: number; action: 'created' | 'updated' | 'unchanged' }
  type ParsedNode = z.output<typeof nodeInput>

  /** Validated nodes, and one of each (tenant, id): the same id twice with two types is a CONFLICT. */
  function nodeBatch(inputs: NodeInput[]): { nodes: ParsedNode[]; batch: ParsedNode[] } {
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
  async function writeNodes(tx: Queryable, batch: ParsedNode[], at: Date) {
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
  function nodeResults(
    nodes: ParsedNode[],
    batch: ParsedNode[],
    result: Awaited<ReturnType<typeof writeNodes>>,
    at: Date,
  ): NodeWrite[] {
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

  async function removeNodes(ids: string[], options: RemoveOptions = {}): Promise<{ removed: string[]; edges: number }> {
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

  async function putNodes(inputs: NodeInput[]): Promise<NodeWrite[]> {
    const { nodes, batch } = nodeBatch(inputs)
    if (nodes.length === 0) return []
    const at = ctx.now()
    const result = await db.transaction((tx) => writeNodes(tx, batch, at))
    return nodeResults(nodes, batch, result, at)
  }

  /** Writes `edges` in `tx`, and finds the ids they point at that name nothing live. */
  async function writeEdgesChecked(tx: Queryable, edges: ParsedEdge[], at: Date) {
    const out = await writeEdges(tx, edges, at)
    const byTenant = new Map<string, string[]>()
    for (const e of out.written) {
      if (e.action === 'unchanged') continue
      const ids = byTenant.get(e.tenantId) ?? []
      ids.push(e.src, e.dst)
      byTenant.set(e.tenantId, ids)
    }
    const missing: string[] = []
    for (const [t, ids] of byTenant) missing.push(...(await missingReferences(tx, t, ids)))
    return { ...out, missing }
  }

  /** Reports an edge write to telemetry, with a warning for the ids that name nothing. */
  function reportEdges(edges: ParsedEdge[], written: (ParsedEdge & EdgeWriteResult)[], missing: string[], at: Date): void {
    if (telemetry.listeners.size === 0) return
    for (const e of written) {
      if (e.action === 'unchanged') continue
      telemetry.emit({
        op: e.action === 'overwritten' ? 'overwrite' : 'write',
        memoryId: e.id,
        entityType: 'edge',
        scope: null,
        runId: e.runId ?? null,
        taskId: e.taskId ?? null,
        at,
        detail: { src: e.src, rel: e.rel, dst: e.dst },
      })
    }
    if (missing.length > 0) {
      telemetry.emit({
        op: 'warning',
        memoryId: null,
        entityType: 'edge',
        scope: null,
        runId: edges[0]?.runId ?? null,
        taskId: edges[0]?.taskId ?? null,
        at,
        detail: { warning: 'missing_reference', count: missing.length, ids: missing.slice(0, 20) },
      })
    }
  }

  async function putEdges(inputs: EdgeInput[]): Promise<EdgeWriteResult[]> {
    const edges = parseInput(z.array(edgeInput).max(200_000), inputs, 'edges')
    if (edges.length === 0) return []
    const at = ctx.now()
    const { results, written, missing } = await db.transaction((tx) => writeEdgesChecked(tx, edges, at))
    reportEdges(edges, written, missing, at)
    // A revised link retires the row it replaces.
    if (written.some((e) => e.action === 'overwritten')) await warnOfTombstones(ctx, at)
    return results
  }

  return {
    /**
     * Creates or revises an entity node. The id is the caller's canonical key; giving an
     * existing id another type is a CONFLICT.
     *
     * @example
     * await memory.graph.putNode({ id: 'file:src/app.ts', type: 'file', payload: { lang: 'ts' } })
     */
    async putNode(input: NodeInput) {
      const [r] = await putNodes([input])
      return r as { id: string; rev: number; action: 'created' | 'updated' | 'unchanged' }
    },

    /** `putNode` for many nodes in one transaction. */
    putNodes,

    /**
     * A node as it is now, as it was at `asOf`, or as revision `rev` left it; null when absent
     * or removed (then, or by that revision).
     *
     * @example
     * const node = await memory.graph.getNode('file:src/app.ts', { asOf: yesterday })
     * const first = await memory.graph.getNode('file:src/app.ts', { rev: 1 })
     */
    async getNode(id: string, options: NodeReadOptions = {}): Promise<NodeRecord | null> {
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
    },

    /**
     * Every revision of a node, oldest first, its removals (`tombstone: true`) among them;
     * each revision's `updatedAt` is when it was written.
     *
     * @example
     * const revisions = await memory.graph.nodeHistory('file:src/app.ts')
     */
    async nodeHistory(id: string, options: NodeHistoryOptions = {}): Promise<(NodeRecord & { tombstone: boolean })[]> {
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
    },

    /**
     * The tenant's live nodes as they are now, or were at `asOf`: among `ids`, of one `type`
     * and of one `scope` when given (as their latest revision says), by id, at most `limit`.
     *
     * @example
     * const people = await memory.graph.nodes({ type: 'person', scope: 'team:core' })
     */
    async nodes(options: NodesOptions = {}): Promise<NodeRecord[]> {
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
    },

    /** Removes a node (a tombstone revision) and tombstones its live edges. */
    async removeNode(id: string, options: RemoveOptions = {}): Promise<{ removed: boolean; edges: number }> {
      const nodeId = parseInput(entityId, id, 'node id')
      const out = await removeNodes([nodeId], options)
      return { removed: out.removed.length > 0, edges: out.edges }
    },

    /**
     * `removeNode` for many nodes in one transaction: the ids of those that were live, and
     * how many live edges to or from them were tombstoned.
     */
    removeNodes,

    /**
     * Links two ids under a known relation. Re-putting the same link with another payload
     * replaces it (the old one stays visible to as-of reads). Ids need not be entity nodes:
     * memories, events and document versions can be linked too; an id that points at nothing
     * is allowed and reported as a telemetry warning.
     *
     * @example
     * await memory.graph.putEdge('file:src/app.ts', 'defines', 'sym:src/app.ts#main')
     */
    async putEdge(
      src: string,
      rel: string,
      dst: string,
      payload: JsonObject = {},
      options: EdgeOptions = {},
    ) {
      const [r] = await putEdges([{ src, rel, dst, payload, ...options }])
      return r as EdgeWriteResult
    },

    /** `putEdge` for many edges in one transaction. */
    putEdges,

    /**
     * Relations, nodes and edges written in one transaction: all of them, or none when any is
     * refused. A relation is defined when it is not yet (as `defineRelation`), so the edges
     * may use it; nodes and edges are written as `putNodes` and `putEdges` write them.
     *
     * @example
     * await memory.graph.putGraph({
     *   relations: [{ name: 'works_at' }],
     *   nodes: [{ id: 'person:alice', type: 'person' }, { id: 'org:acme', type: 'organization' }],
     *   edges: [{ src: 'person:alice', rel: 'works_at', dst: 'org:acme' }],
     * })
     */
    async putGraph(input: GraphWriteInput): Promise<{ nodes: NodeWrite[]; edges: EdgeWriteResult[] }> {
      const o = parseInput(graphWriteInput, input, 'graph write')
      const { nodes, batch } = nodeBatch(o.nodes as NodeInput[])
      const edges = parseInput(z.array(edgeInput).max(200_000), o.edges, 'edges')
      const at = ctx.now()
      const written = await db.transaction(async (tx) => {
        if (o.relations.length > 0) {
          await tx.query(
            `INSERT INTO relations (name, description, builtin, created_at)
             SELECT r.name, r.description, false, $3 FROM unnest($1::text[], $2::text[]) AS r(name, description)
             ON CONFLICT (name) DO NOTHING`,
            [o.relations.map((r) => r.name), o.relations.map((r) => r.description ?? null), at],
          )
        }
        const n = batch.length > 0 ? await writeNodes(tx, batch, at) : { written: [], unchanged: [] }
        return { n, e: await writeEdgesChecked(tx, edges, at) }
      })
      reportEdges(edges, written.e.written, written.e.missing, at)
      if (written.e.written.some((e) => e.action === 'overwritten')) await warnOfTombstones(ctx, at)
      return { nodes: nodeResults(nodes, batch, written.n, at), edges: written.e.results }
    },

    /** Tombstones the live (src, rel, dst) link; false when there was none. */
    async removeEdge(
      src: string,
      rel: string,
      dst: string,
      options: RemoveOptions = {},
    ): Promise<{ removed: boolean }> {
      const e = parseInput(
        z.strictObject({ src: entityId, rel: z.string().min(1), dst: entityId }),
        { src, rel, dst },
        'edge',
      )
      const o = parseInput(removeOptions, options, 'remove options')
      const at = ctx.now()
      const rels = await relationIds(db, [e.rel])
      const { rows } = await db.query<{ id: string }>(
        `UPDATE edges SET tombstoned_at = greatest($5, created_at)
         WHERE tenant_id = $1 AND src = $2 AND rel = $3 AND dst = $4 AND tombstoned_at IS NULL
         RETURNING id`,
        [o.tenantId, e.src, rels.get(e.rel), e.dst, at],
      )
      for (const r of rows) {
        telemetry.emit({
          op: 'delete',
          memoryId: r.id,
          entityType: 'edge',
          scope: null,
          runId: o.runId ?? null,
          taskId: o.taskId ?? null,
          at,
          detail: e,
        })
      }
      if (rows.length > 0) await warnOfTombstones(ctx, at)
      return { removed: rows.length > 0 }
    },

    /**
     * Links of a node, or of several nodes in one read, outgoing, incoming or both,
     * optionally of some relations, as the memory knows them now or knew them at `asOf`, and
     * with `validAt` only those that held at that time in the world. Oldest first, ties by
     * edge id; `limit` counts the links of all the nodes together. With several ids, a link
     * between two of them comes once from each end (`direction` tells which). A link whose
     * relation or payload is damaged fails the read with CORRUPT.
     *
     * @example
     * const defs = await memory.graph.neighbors('file:src/app.ts', { rel: 'defines' })
     * const both = await memory.graph.neighbors(['person:ada', 'person:alan'], { direction: 'both' })
     */
    async neighbors(id: string | readonly string[], options: NeighborsOptions = {}): Promise<Neighbor[]> {
      const nodeIds = typeof id === 'string' ? [parseInput(entityId, id, 'node id')] : parseInput(entityIds, id, 'node ids')
      const o = parseInput(neighborsOptions, options, 'neighbor options')
      const rels =
        o.rel === undefined
          ? null
          : [...(await relationIds(db, typeof o.rel === 'string' ? [o.rel] : o.rel)).values()]
      const { rows } = await db.query<{
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
      }>(
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
      const out = rows.map((r): Neighbor => {
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
      })
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
    },

    /**
     * Registers a relation name (idempotent) so edges may use it.
     *
     * @example
     * await memory.graph.defineRelation('owns', 'team → module')
     */
    async defineRelation(name: string, description?: string): Promise<RelationRecord & { created: boolean }> {
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
    },

    /** Every relation name edges may use, by id. */
    async relations(): Promise<RelationRecord[]> {
      const { rows } = await db.query<RelationRecord>(
        'SELECT id, name, description, builtin FROM relations ORDER BY id',
      )
      return rows
    },

    /**
     * Physically deletes tombstoned edges and removed nodes whose tombstone is older than
     * `before` — the only operation that shrinks the graph. As-of reads before that time
     * lose what was dropped. Reports the rows deleted: edges, and node revisions (a removed
     * node goes with every revision it had).
     *
     * @example
     * await memory.graph.compact({ before: new Date(Date.now() - 7 * 86400_000) })
     */
    async compact(options: { before: Date | string }): Promise<{ edges: number; nodes: number }> {
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
    },

    /**
     * Checks the graph's integrity: every edge names a known relation and carries an object
     * payload, tombstones never precede creation, node revisions are gapless with object
     * payloads. Throws CORRUPT listing what is wrong; otherwise reports sizes and warns when
     * tombstones pile up.
     */
    async verify(): Promise<GraphVerifyReport> {
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
    },
  }
}
