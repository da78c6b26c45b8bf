import { Params } from '../db/params.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { toDate } from '../kernel/time.ts'
import { parseInput } from '../kernel/validate.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import { getOptions, listOptions, memoryIdSchema, type MemoryGetOptions, type MemoryListOptions } from './inputs.ts'
import { memoriesAsOf, pastMemories } from './past.ts'
import type { MemoryRecord } from './records.ts'
import { COLUMNS, getRow, type MemoryRow, toRecord } from './rows.ts'
import { selectWhere, unexpired } from './selection.ts'
import { emitMemory } from './telemetry.ts'

/** One memory by id, as it is or was, or null where the tenant or channel may not read it (`memories.get`). */
export async function getMemory(ctx: EngineContext, id: string, options: MemoryGetOptions): Promise<MemoryRecord | null> {
  const memoryId = parseInput(memoryIdSchema, id, 'memory id')
  const o = parseInput(getOptions, options, 'memory read options')
  const current = await getRow(ctx.db, memoryId, o.tenantId)
  const found = current && o.asOf !== undefined ? (await memoriesAsOf(ctx.db, [current], toDate(o.asOf)))[0] : current
  // As of a time, both the sensitivity then and now must be shown (see `pastMemories`).
  const allowed = allowedSensitivities(o.channel)
  const row = found && current && allowed.includes(found.sensitivity) && allowed.includes(current.sensitivity) ? found : undefined
  emitMemory(ctx, 'read', { id: memoryId, scope: row?.scope ?? null, runId: row?.run_id ?? null })
  return row ? toRecord(row) : null
}

/** The memories a selection names, as they are or were, most used first (`memories.list`). */
export async function listMemories(ctx: EngineContext, options: MemoryListOptions): Promise<MemoryRecord[]> {
  const o = parseInput(listOptions, options, 'list options')
  const asOf = o.asOf === undefined ? null : toDate(o.asOf)
  const at = asOf ?? ctx.now()
  const p = new Params()
  const allowed = allowedSensitivities(o.channel)
  const where = `${selectWhere(p, o)} AND m.sensitivity = ANY(${p.add(allowed)}::text[])`
  const status =
    o.status === 'any'
      ? 'true'
      : o.status === 'active'
        ? `m.status = 'active' AND ${unexpired(p.add(at))}`
        : o.status === 'expired'
          ? `m.status = 'active' AND m.expires_at <= ${p.add(at)}`
          : `m.status = ${p.add(o.status)}`
  const key = o.key === undefined ? 'true' : `m.key = ${p.add(o.key)}`
  const rows = await ctx.db.transaction(async (q) => {
    const past = asOf ? await pastMemories(q, p, { tenantId: o.tenantId, at: asOf, allowed }) : undefined
    const { rows } = await q.query<MemoryRow>(
      `${past ? `WITH ${past}` : ''}
       SELECT ${COLUMNS} FROM ${past ? 'past' : 'memories'} m WHERE ${where} AND ${status} AND ${key}
       ORDER BY m.use_count DESC, m.created_at DESC, m.id DESC
       LIMIT ${p.add(o.limit)}`,
      p.values,
    )
    return rows
  })
  emitMemory(ctx, 'query', { id: null, scope: o.scope ?? null, runId: o.runId ?? null }, undefined, {
    results: rows.length,
    ...(asOf ? { asOf: asOf.toISOString() } : {}),
  })
  return rows.map(toRecord)
}
