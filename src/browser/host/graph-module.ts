import type { GraphDatabase } from '../../core/cypher/age-graphs.ts'
import { threadGraphDatabase } from '../../core/cypher/graph-client.ts'

/**
 * The Cypher graphs' database in a worker of its own, next to the memory worker's script
 * (bundlers follow this URL), started from `template` (a new memory's, or none: initdb).
 */
export function openWorkerGraphDatabase(template: Blob | null): GraphDatabase {
  const worker = new Worker(new URL('../../../workers/graph.worker.ts', import.meta.url), { type: 'module', name: 'engram-graph' })
  worker.postMessage({ template })
  return threadGraphDatabase({
    post: (request) => worker.postMessage(request),
    listen(listener, failed) {
      worker.onmessage = (event: MessageEvent) => listener(event.data as Parameters<typeof listener>[0])
      worker.onerror = (event) => failed(event.error ?? new Error(event.message))
    },
    terminate: () => worker.terminate(),
  })
}
