/// <reference lib="webworker" />
import { PGlite } from '@electric-sql/pglite'
import { age } from '@electric-sql/pglite-age'
import type { GraphAnswer, GraphRequest } from '../src/core/cypher/graph-client.ts'

/**
 * The Cypher graphs' database in a worker of its own, started by the memory worker on the
 * first Cypher query: a PGlite with Apache AGE, from the template the memory worker sends
 * first. A query that runs past its time limit cannot be stopped inside PGlite, so the memory
 * worker ends this one instead (src/node/graph-worker.mjs is its Node twin).
 */
let opening: Promise<PGlite> | undefined

self.onmessage = async (event: MessageEvent<GraphRequest | { template: Blob | null }>) => {
  const message = event.data
  if (!('id' in message)) {
    opening = PGlite.create({ ...(message.template ? { loadDataDir: message.template } : {}), extensions: { age } })
    return
  }
  let answer: GraphAnswer
  try {
    if (!opening) throw new Error('the graph worker was not started')
    const pg = await opening
    const rows =
      message.op === 'query'
        ? (await pg.query<Record<string, unknown>>(message.sql ?? '', message.params)).rows
        : message.op === 'exec'
          ? (await pg.exec(message.sql ?? ''), [])
          : (await pg.close(), [])
    answer = { id: message.id, rows }
  } catch (error) {
    const e = error as { message?: unknown; code?: unknown }
    answer = { id: message.id, error: { message: String(e.message ?? error), ...(typeof e.code === 'string' ? { code: e.code } : {}) } }
  }
  self.postMessage(answer)
}
