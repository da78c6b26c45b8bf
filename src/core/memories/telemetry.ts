import type { EngineContext } from '../kernel/engine-context.ts'

/** Reports a memory operation to telemetry listeners; `row.id` is null for one over many memories. */
export function emitMemory(
  ctx: EngineContext,
  op: 'read' | 'write' | 'overwrite' | 'delete' | 'query',
  row: { id: string | null; scope?: string | null; runId?: string | null },
  at?: Date,
  detail?: Record<string, unknown>,
): void {
  ctx.telemetry.emit({
    op,
    memoryId: row.id,
    entityType: 'memory',
    scope: row.scope ?? null,
    runId: row.runId ?? null,
    taskId: null,
    ...(at ? { at } : {}),
    ...(detail ? { detail } : {}),
  })
}
