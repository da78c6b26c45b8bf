// Entity graph edges: a link between any two ids under a known relation. A revised link
// tombstones the row it replaces, so reads at an earlier time still see the old one.
import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { newId } from '../kernel/ids.ts'
import { redactUnknown } from '../privacy/redact.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { entityId, relationIds, warnOfTombstones } from './edges.ts'
import { type EdgeInput, edgeInput, type EdgeOptions, removeOptions, type RemoveOptions } from './entity-inputs.ts'
import type { JsonObject } from './entity-records.ts'

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

/** Writes `edges` in `tx`, and finds the ids they point at that name nothing live. */
export async function writeEdgesChecked(tx: Queryable, edges: ParsedEdge[], at: Date) {
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
export function reportEdges(
  ctx: EngineContext,
  edges: ParsedEdge[],
  written: (ParsedEdge & EdgeWriteResult)[],
  missing: string[],
  at: Date,
): void {
  const { telemetry } = ctx
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

/** Writes the edges in one transaction; each input's result, in order. */
export async function putEdges(ctx: EngineContext, inputs: EdgeInput[]): Promise<EdgeWriteResult[]> {
  const { db } = ctx
  const edges = parseInput(z.array(edgeInput).max(200_000), inputs, 'edges')
  if (edges.length === 0) return []
  const at = ctx.now()
  const { results, written, missing } = await db.transaction((tx) => writeEdgesChecked(tx, edges, at))
  reportEdges(ctx, edges, written, missing, at)
  // A revised link retires the row it replaces.
  if (written.some((e) => e.action === 'overwritten')) await warnOfTombstones(ctx, at)
  return results
}

/** `putEdges` for one edge. */
export async function putEdge(
  ctx: EngineContext,
  src: string,
  rel: string,
  dst: string,
  payload: JsonObject = {},
  options: EdgeOptions = {},
): Promise<EdgeWriteResult> {
  const [r] = await putEdges(ctx, [{ src, rel, dst, payload, ...options }])
  return r as EdgeWriteResult
}

/** Tombstones the live (src, rel, dst) link. */
export async function removeEdge(
  ctx: EngineContext,
  src: string,
  rel: string,
  dst: string,
  options: RemoveOptions = {},
): Promise<{ removed: boolean }> {
  const { db, telemetry } = ctx
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
}
