// The Cypher graphs' database in a thread of its own (src/node/graph-database.ts starts it):
// a PGlite with Apache AGE. A query that runs past its time limit cannot be stopped inside
// PGlite, so the memory ends this thread instead. Plain JavaScript: Node runs it as it is,
// from the sources and from the published package alike.
import { parentPort, workerData } from 'node:worker_threads'
import { PGlite } from '@electric-sql/pglite'
import { age } from '@electric-sql/pglite-age'

const { template, fsBundle } = workerData
const opening = PGlite.create({
  ...(template ? { loadDataDir: template } : {}),
  ...(fsBundle ? { fsBundle } : {}),
  extensions: { age },
})

parentPort.on('message', async ({ id, op, sql, params }) => {
  try {
    const pg = await opening
    const result =
      op === 'query' ? await pg.query(sql, params) : op === 'exec' ? await pg.exec(sql) : await pg.close()
    parentPort.postMessage({ id, rows: op === 'query' ? result.rows : [] })
  } catch (error) {
    parentPort.postMessage({ id, error: { message: String(error?.message ?? error), code: error?.code } })
  }
})
