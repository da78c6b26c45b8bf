// What the Cypher graph's write counters (schema migration 21: a statement trigger on each
// table the graph is drawn from) cost `recordTurn`. One in-memory engine records 300 turns,
// then 12 blocks of 100 with the triggers enabled and disabled in turn; p50 / p95 of each.
//
//   node bench/run.mjs bench/graph-counters.ts
import { createEngine } from '../src/core/engine.ts'
import { createHashEmbedder } from '../src/embed/hash-embedder.ts'
import { durableDb, openPGlite } from '../src/runtime/pglite.ts'
import { makeTurns, sessionShape } from './lib/data.ts'
import { latency } from './lib/metrics.ts'
const pg = await openPGlite({})
const engine = await createEngine({ db: durableDb(pg), embedder: createHashEmbedder({ dims: 384 }), indexing: 'manual', workspace: { mode: 'local', root: '/bench/repo' } })
const turns = makeTurns(sessionShape(12000), 7)
let n = 0
for (; n < 300; n++) await engine.recordTurn(turns[n]!)
const triggers = ['events_graph ON events', 'documents_graph ON documents', 'doc_versions_graph ON doc_versions', 'memory_contexts_graph ON memory_contexts', 'nodes_graph ON nodes', 'edges_graph ON edges', 'edges_graph_reset ON edges', 'memories_graph ON memories', 'memories_graph_reset ON memories']
const set = async (on: boolean) => { for (const t of triggers) { const [name, table] = t.split(' ON '); await pg.exec(`ALTER TABLE ${table} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${name}`) } }
const times = { on: [] as number[], off: [] as number[] }
for (let block = 0; block < 12; block++) {
  const on = block % 2 === 0
  await set(on)
  for (let i = 0; i < 100; i++, n++) { const t0 = performance.now(); await engine.recordTurn(turns[n]!); times[on ? 'on' : 'off'].push(performance.now() - t0) }
}
process.stdout.write(`with counters: ${JSON.stringify(latency(times.on))}\n`)
process.stdout.write(`without: ${JSON.stringify(latency(times.off))}\n`)
await pg.close()
