/**
 * What the engine did, as it happens: every read, write, overwrite, delete and query of a
 * memory, kv entry, node or edge. Benchmarks score agents from this stream.
 */
export interface TelemetryEvent {
  op: 'read' | 'write' | 'overwrite' | 'delete' | 'query' | 'warning'
  /** The row the operation touched (memory id, node id, edge id, kv revision id). */
  memoryId: string | null
  entityType: 'memory' | 'kv' | 'node' | 'edge' | 'context'
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
      telemetry.listeners.add(listener)
      return () => {
        telemetry.listeners.delete(listener)
      }
    },
  }
}
