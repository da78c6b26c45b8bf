import { checkListener } from './input-walk.ts'

/**
 * What the engine did, as it happens: every read, write, overwrite, delete and query of a
 * memory, kv entry, node or edge, and each event written, document observed, search and
 * context built with how long it took (`detail.method`, `detail.ms`). Benchmarks score agents
 * from this stream; an app can feed its metrics from it.
 */
export interface TelemetryEvent {
  op: 'read' | 'write' | 'overwrite' | 'delete' | 'query' | 'warning'
  /** The row the operation touched (memory id, node id, edge id, kv revision id). */
  memoryId: string | null
  entityType: 'memory' | 'kv' | 'node' | 'edge' | 'context' | 'event' | 'document'
  scope: string | null
  runId: string | null
  taskId: string | null
  at: Date
  /** Extra facts, e.g. the warning text or the number of rows a query returned. */
  detail?: Record<string, unknown>
}

export type TelemetryListener = (event: TelemetryEvent) => void

export interface Telemetry {
  listeners: Set<TelemetryListener>
  emit(event: Omit<TelemetryEvent, 'at'> & { at?: Date }): void
}

export function createTelemetry(now: () => Date): Telemetry {
  const listeners = new Set<TelemetryListener>()
  return {
    listeners,
    emit(partial) {
      if (listeners.size === 0) return
      const event: TelemetryEvent = { ...partial, at: partial.at ?? now() }
      for (const listener of listeners) {
        try {
          listener(event)
        } catch {
          // A broken observer must not break the write it observes.
        }
      }
    },
  }
}

/** How a timed call is reported: its operation, what it touched, and facts read from its result. */
export interface Timing<R> {
  op: 'write' | 'query'
  entityType: TelemetryEvent['entityType']
  describe(result: R): { id?: string | null; detail?: Record<string, unknown> }
}

/**
 * `call` reported to the telemetry stream when it ends, with `detail: { method, ms, … }` (and
 * `error`, the code, when it fails). Nothing is measured while no one listens.
 */
export function timedCall(
  call: (...args: unknown[]) => unknown,
  method: string,
  timing: Timing<never>,
  telemetry: Telemetry,
): (...args: unknown[]) => Promise<unknown> {
  return async (...args: unknown[]) => {
    if (telemetry.listeners.size === 0) return call(...args)
    const started = performance.now()
    const report = (detail: Record<string, unknown>, id: string | null = null) =>
      telemetry.emit({
        op: timing.op,
        memoryId: id,
        entityType: timing.entityType,
        scope: null,
        runId: null,
        taskId: null,
        detail: { method, ms: performance.now() - started, ...detail },
      })
    try {
      const result = await call(...args)
      const { id, detail } = timing.describe(result as never)
      report(detail ?? {}, id ?? null)
      return result
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code
      report({ error: typeof code === 'string' ? code : 'INTERNAL' })
      throw error
    }
  }
}

/**
 * `telemetry.subscribe(fn)` on the engine. Across the worker boundary wrap `fn` in
 * `comlink.proxy`.
 *
 * @example
 * const stop = memory.telemetry.subscribe((e) => console.log(e.op, e.memoryId))
 * stop()
 */
export function telemetryApi(telemetry: Telemetry) {
  return {
    subscribe(listener: TelemetryListener): () => void {
      checkListener(listener, 'telemetry.subscribe')
      telemetry.listeners.add(listener)
      return () => {
        telemetry.listeners.delete(listener)
      }
    },
  }
}
