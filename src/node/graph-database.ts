import { Worker } from 'node:worker_threads'
import type { GraphDatabase } from '../core/cypher/age-graphs.ts'
import { type GraphAnswer, threadGraphDatabase } from '../core/cypher/graph-client.ts'
import { bundledTemplate, pgliteFsBundle } from './template.ts'

/**
 * The database `memory.cypher` keeps its graphs in: an in-memory PGlite with Apache AGE in a
 * thread of its own (src/node/graph-worker.mjs), started from `template` (default: the
 * bundled one) on the first Cypher query. A memory that never runs Cypher never loads AGE,
 * and a query past its time limit ends with the thread.
 */
export async function openGraphDatabase(template?: Blob): Promise<GraphDatabase> {
  const [loadDataDir, fsBundle] = await Promise.all([template ?? bundledTemplate(), pgliteFsBundle()])
  const worker = new Worker(new URL('./graph-worker.mjs', import.meta.url), {
    workerData: { template: loadDataDir ?? null, fsBundle: fsBundle ?? null },
    // Not the process's own flags: `--input-type`, say, refuses to start a file.
    execArgv: [],
  })
  // The thread keeps the process alive only while a call waits for it: a memory left open
  // does not hold Node up.
  worker.unref()
  return threadGraphDatabase({
    post: (request) => worker.postMessage(request),
    listen(listener, failed) {
      worker.on('message', (answer: GraphAnswer) => listener(answer))
      worker.on('error', failed)
      worker.on('exit', (code) => failed(new Error(`the graph thread exited with code ${code}`)))
    },
    terminate: () => void worker.terminate(),
    hold: (busy) => (busy ? worker.ref() : worker.unref()),
  })
}
