import type { JsonObject } from '../graph/entities.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import type { Queryable } from '../kernel/db.ts'
import { newId } from '../kernel/ids.ts'
import { parseInput } from '../kernel/validate.ts'
import { byIdOptions, type MemoryByIdOptions, memoryIdSchema } from './inputs.ts'
import type { MemoryHistoryRecord } from './records.ts'
import { emitMemory } from './telemetry.ts'

/** A memory_history row as stored (its time a Date, or text when read through JSON). */
export interface HistoryRow {
  id: string
  memory_id: string
  event: 'ADD' | 'UPDATE' | 'DELETE'
  old_value: string | null
  new_value: string | null
  changes: JsonObject
  is_deleted: boolean
  user_id: string | null
  agent_id: string | null
  run_id: string | null
  created_at: Date | string
}

export function toHistory(r: HistoryRow): MemoryHistoryRecord {
  return {
    id: r.id,
    memoryId: r.memory_id,
    event: r.event,
    oldValue: r.old_value,
    newValue: r.new_value,
    changes: r.changes,
    isDeleted: r.is_deleted,
    userId: r.user_id,
    agentId: r.agent_id,
    runId: r.run_id,
    createdAt: new Date(r.created_at),
  }
}

/** One change to log, as `remember`, `update` and the deletes make it. */
export interface HistoryEntry {
  memoryId: string
  event: 'ADD' | 'UPDATE' | 'DELETE'
  oldValue: string | null
  newValue: string | null
  changes?: JsonObject
  tenantId: string
  userId: string | null
  agentId: string | null
  runId: string | null
}

/** Appends audit rows, many in one statement. */
export async function logHistory(q: Queryable, entries: readonly HistoryEntry[], at: Date): Promise<void> {
  if (entries.length === 0) return
  await q.query(
    `INSERT INTO memory_history (id, memory_id, event, old_value, new_value, changes, is_deleted,
                                 tenant_id, user_id, agent_id, run_id, created_at)
     SELECT i.id, i.memory_id, i.event, i.old_value, i.new_value, i.changes, i.event = 'DELETE',
            i.tenant_id, i.user_id, i.agent_id, i.run_id, $10
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[],
                 $8::text[], $9::text[], $11::text[])
       AS i(id, memory_id, event, old_value, new_value, changes, tenant_id, user_id, agent_id, run_id)`,
    [
      entries.map(() => newId('memoryHistory')),
      entries.map((e) => e.memoryId),
      entries.map((e) => e.event),
      entries.map((e) => e.oldValue),
      entries.map((e) => e.newValue),
      entries.map((e) => JSON.stringify(e.changes ?? {})),
      entries.map((e) => e.tenantId),
      entries.map((e) => e.userId),
      entries.map((e) => e.agentId),
      at,
      entries.map((e) => e.runId),
    ],
  )
}

/** The audit trail of one memory, oldest first (`memories.history`). */
export async function memoryHistory(ctx: EngineContext, id: string, options: MemoryByIdOptions): Promise<MemoryHistoryRecord[]> {
  const memoryId = parseInput(memoryIdSchema, id, 'memory id')
  const { tenantId } = parseInput(byIdOptions, options, 'memory options')
  const { rows } = await ctx.db.query<HistoryRow>('SELECT * FROM memory_history WHERE memory_id = $1 AND tenant_id = $2 ORDER BY created_at, id', [
    memoryId,
    tenantId,
  ])
  emitMemory(ctx, 'read', { id: memoryId }, undefined, { history: rows.length })
  return rows.map(toHistory)
}
