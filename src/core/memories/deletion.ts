import { Params } from '../db/params.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { parseInput } from '../kernel/validate.ts'
import { type HistoryEntry, logHistory } from './history.ts'
import {
  byIdOptions,
  type ForgetAllInput,
  forgetAllInput,
  type MemoryByIdOptions,
  memoryIdSchema,
  type MemoryResetInput,
  resetInput,
} from './inputs.ts'
import type { MemoryRow } from './rows.ts'
import { selectWhere } from './selection.ts'
import { emitMemory } from './telemetry.ts'

/** The history entry of a memory just deleted. */
function deletion(r: MemoryRow): HistoryEntry {
  return {
    memoryId: r.id,
    event: 'DELETE',
    oldValue: r.content,
    newValue: null,
    tenantId: r.tenant_id,
    userId: r.user_id,
    agentId: r.agent_id,
    runId: r.run_id,
  }
}

/** Marks one memory deleted and logs it (`memories.delete`). */
export async function deleteMemory(ctx: EngineContext, id: string, options: MemoryByIdOptions): Promise<{ id: string; deleted: true }> {
  const memoryId = parseInput(memoryIdSchema, id, 'memory id')
  const { tenantId } = parseInput(byIdOptions, options, 'memory options')
  const at = ctx.now()
  const row = await ctx.db.transaction(async (tx) => {
    const { rows } = await tx.query<MemoryRow>(
      `UPDATE memories SET status = 'deleted', updated_at = $2
       WHERE id = $1 AND tenant_id = $3 AND status <> 'deleted'
       RETURNING *`,
      [memoryId, at, tenantId],
    )
    const r = rows[0]
    if (!r) throw new MemoryError('NOT_FOUND', `No memory "${memoryId}"`, { details: { id: memoryId } })
    await logHistory(tx, [deletion(r)], at)
    return r
  })
  emitMemory(ctx, 'delete', { id: memoryId, scope: row.scope, runId: row.run_id }, at)
  return { id: memoryId, deleted: true }
}

/** Marks every active memory of a selection deleted, in one transaction (`memories.forgetAll`). */
export async function forgetAllMemories(ctx: EngineContext, input: ForgetAllInput): Promise<{ deleted: number }> {
  const o = parseInput(forgetAllInput, input, 'forgetAll request')
  const at = ctx.now()
  const gone = await ctx.db.transaction(async (tx) => {
    const p = new Params()
    const where = selectWhere(p, o)
    const now = p.add(at)
    const { rows } = await tx.query<MemoryRow>(
      `UPDATE memories m SET status = 'deleted', updated_at = ${now}
       WHERE ${where} AND m.status = 'active' ${o.expired ? `AND m.expires_at <= ${now}` : ''}
       RETURNING m.*`,
      p.values,
    )
    rows.sort((a, b) => (a.id < b.id ? -1 : 1))
    await logHistory(tx, rows.map(deletion), at)
    return rows
  })
  for (const r of gone) emitMemory(ctx, 'delete', { id: r.id, scope: r.scope, runId: r.run_id }, at)
  return { deleted: gone.length }
}

/** Erases memories, their history, contexts and links for good (`memories.reset`). */
export async function resetMemories(ctx: EngineContext, input: MemoryResetInput): Promise<{ memories: number }> {
  const o = parseInput(resetInput, input, 'reset request')
  const t = o.tenantId ?? null
  const n = await ctx.db.transaction(async (tx) => {
    await tx.query(`SELECT set_config('engram.forgetting', 'on', true)`)
    const mine = (table: string) => `(SELECT id FROM ${table} WHERE $1::text IS NULL OR tenant_id = $1)`
    await tx.query(
      `DELETE FROM edges WHERE src IN ${mine('memories')} OR dst IN ${mine('memories')} OR dst IN ${mine('memory_contexts')}`,
      [t],
    )
    const { affectedRows } = await tx.query('DELETE FROM memories WHERE $1::text IS NULL OR tenant_id = $1', [t])
    await tx.query('DELETE FROM memory_history WHERE $1::text IS NULL OR tenant_id = $1', [t])
    await tx.query('DELETE FROM memory_contexts WHERE $1::text IS NULL OR tenant_id = $1', [t])
    await tx.query(`SELECT set_config('engram.forgetting', 'off', true)`)
    return affectedRows ?? 0
  })
  emitMemory(ctx, 'delete', { id: null }, undefined, { reset: true, memories: n, ...(t === null ? {} : { tenantId: t }) })
  return { memories: n }
}
