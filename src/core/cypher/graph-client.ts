import { MemoryError } from '../kernel/errors.ts'
import type { GraphDatabase } from './age-graphs.ts'

/** A request to a graph database in another thread, and its answer. */
export interface GraphRequest {
  id: number
  op: 'query' | 'exec' | 'close'
  sql?: string
  params?: unknown[]
}
export interface GraphAnswer {
  id: number
  rows?: Record<string, unknown>[]
  error?: { message: string; code?: string }
}

/** The two ends of a worker the client needs, in Node or in a browser. */
export interface GraphThread {
  post(request: GraphRequest): void
  /** Calls `listener` with each answer, and `failed` once if the thread dies. */
  listen(listener: (answer: GraphAnswer) => void, failed: (error: unknown) => void): void
  terminate(): void
  /** Told whether calls are waiting: a thread that holds the process up only while busy. */
  hold?(busy: boolean): void
}

/**
 * A `GraphDatabase` whose PGlite runs in `thread`. `terminate` ends the thread at once, with
 * any query in it: every call waiting then, and every later one, fails with `CLOSED`.
 */
export function threadGraphDatabase(thread: GraphThread): GraphDatabase {
  const waiting = new Map<number, { resolve: (rows: Record<string, unknown>[]) => void; reject: (error: unknown) => void }>()
  let next = 0
  let ended: MemoryError | null = null
  const end = (error: MemoryError) => {
    ended ??= error
    for (const { reject } of waiting.values()) reject(ended)
    waiting.clear()
  }
  thread.listen(
    (answer) => {
      const call = waiting.get(answer.id)
      if (!call) return
      waiting.delete(answer.id)
      if (waiting.size === 0) thread.hold?.(false)
      if (answer.error) call.reject(Object.assign(new Error(answer.error.message), { code: answer.error.code }))
      else call.resolve(answer.rows ?? [])
    },
    (cause) => end(new MemoryError('CLOSED', 'The Cypher graph database stopped.', { cause })),
  )
  const send = (op: GraphRequest['op'], sql?: string, params?: unknown[]) =>
    new Promise<Record<string, unknown>[]>((resolve, reject) => {
      if (ended) return reject(ended)
      const id = next++
      waiting.set(id, { resolve, reject })
      thread.hold?.(true)
      thread.post({ id, op, ...(sql === undefined ? {} : { sql }), ...(params === undefined ? {} : { params }) })
    })
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return { rows: (await send('query', sql, params ?? [])) as T[] }
    },
    exec: (sql) => send('exec', sql),
    async close() {
      if (ended) return
      await send('close')
      thread.terminate()
      end(new MemoryError('CLOSED', 'The Cypher graph database is closed.'))
    },
    terminate() {
      thread.terminate()
      end(new MemoryError('CLOSED', 'The Cypher graph database was stopped.'))
    },
  }
}
