/**
 * Reading an export file as a snapshot (`openSnapshot`) against reading the memory it came
 * from. A graph of NODES entities (default 20,000), each with about four links under four
 * relations, a tenth of the links later removed and a tenth of the nodes revised, is written,
 * exported, and then:
 *
 *  - opened RUNS times as a snapshot (check every table, index in memory), and imported as
 *    many times into a fresh migrated memory (`importFile` with `mode: 'replace'`), the way
 *    to read a file with the engine;
 *  - asked QUERIES neighbour reads (`direction: 'both'`, a random node each), alternately by
 *    the snapshot and the engine, in this process; every answer must be the same or the run
 *    fails.
 *
 * Prints p50 / p95 of each and their ratio at p50.
 *
 *   node bench/run.mjs bench/snapshot.ts            # NODES, RUNS (default 5), QUERIES (default 2000)
 */
import { isDeepStrictEqual } from 'node:util'
import { createEngine } from '../src/core/engine.ts'
import { openSnapshot } from '../src/core/portable/snapshot.ts'
import { durableDb, openPGlite } from '../src/runtime/pglite.ts'
import { percentile } from './lib/metrics.ts'

const NODES = Number(process.env.NODES ?? 20_000)
const RUNS = Number(process.env.RUNS ?? 5)
const QUERIES = Number(process.env.QUERIES ?? 2000)
const RELS = ['defines', 'calls', 'imports', 'tests']

const print = (line: string) => process.stdout.write(`${line}\n`)
const p = (xs: number[], q: number) => percentile([...xs].sort((a, b) => a - b), q)
const fmt = (xs: number[]) => `${p(xs, 50).toFixed(3)} / ${p(xs, 95).toFixed(3)} ms`

let seed = 1
/** mulberry32: a repeatable number below n. */
function random(n: number): number {
  seed = (seed + 0x6d2b79f5) >>> 0
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
  return Math.floor((((x ^ (x >>> 14)) >>> 0) / 2 ** 32) * n)
}

async function open(loadDataDir?: Blob) {
  const pg = await openPGlite(loadDataDir ? { loadDataDir } : {})
  const engine = await createEngine({ db: durableDb(pg), indexing: 'manual' })
  return { pg, engine }
}

const fresh = await open()
const template = await fresh.pg.dumpDataDir('gzip')
const { engine: memory } = fresh
const id = (i: number) => `${['file', 'sym', 'module', 'test'][i % 4]}:n${i}`
await memory.graph.putGraph({ relations: RELS.map((name) => ({ name })) })
for (let from = 0; from < NODES; from += 5000) {
  const count = Math.min(5000, NODES - from)
  const nodes = Array.from({ length: count }, (_, k) => ({ id: id(from + k), type: id(from + k).split(':')[0] as string, payload: { line: k } }))
  const edges = nodes.flatMap((n, k) =>
    Array.from({ length: 4 }, () => ({ src: n.id, rel: RELS[random(4)] as string, dst: id(random(from + k + 1)), payload: { w: random(9) } })),
  )
  await memory.graph.putGraph({ nodes, edges })
}
for (let i = 0; i < NODES / 10; i++) {
  const n = random(NODES)
  await memory.graph.putNode({ id: id(n), type: id(n).split(':')[0] as string, payload: { line: -1, revised: i } })
}
const links = await memory.graph.neighbors(Array.from({ length: NODES / 10 }, () => id(random(NODES))), { limit: 100_000 })
for (const l of links.slice(0, NODES / 10)) await memory.graph.removeEdge(l.src, l.rel, l.dst)
const file = await memory.exportFile()
const stats = await openSnapshot(file)
print(
  `${NODES} nodes (${stats.manifest.tables.nodes?.count} revisions), ${stats.manifest.tables.edges?.count} links, export file ${(file.size / 1024).toFixed(0)} KiB; this process:`,
)

const snapshotMs: number[] = []
const importMs: number[] = []
for (let r = 0; r < RUNS; r++) {
  let t = performance.now()
  await openSnapshot(file)
  snapshotMs.push(performance.now() - t)
  const target = await open(template)
  t = performance.now()
  await target.engine.importFile(file, { mode: 'replace' })
  importMs.push(performance.now() - t)
  await target.pg.close()
}

const snap = await openSnapshot(file)
const bySnapshot: number[] = []
const byEngine: number[] = []
let links0 = 0
for (let q = 0; q < QUERIES + 50; q++) {
  const node = id(random(NODES))
  const first = q % 2 === 0
  let a: unknown
  let b: unknown
  const timeSnapshot = () => {
    const t = performance.now()
    a = snap.graph.neighbors(node, { direction: 'both' })
    return performance.now() - t
  }
  const timeEngine = async () => {
    const t = performance.now()
    b = await memory.graph.neighbors(node, { direction: 'both' })
    return performance.now() - t
  }
  const [ms1, ms2] = first ? [timeSnapshot(), await timeEngine()] : [await timeEngine(), timeSnapshot()]
  const [s, e] = first ? [ms1, ms2] : [ms2, ms1]
  if (!isDeepStrictEqual(a, b)) throw new Error(`the snapshot and the engine differ on ${node}`)
  if (q < 50) continue
  links0 += (a as unknown[]).length
  bySnapshot.push(s)
  byEngine.push(e)
}

print('| read | snapshot p50 / p95 | engine p50 / p95 | snapshot / engine at p50 |')
print('| --- | --- | --- | ---: |')
print(`| open the file (${RUNS} runs; the engine: importFile into a fresh memory) | ${fmt(snapshotMs)} | ${fmt(importMs)} | ${(p(snapshotMs, 50) / p(importMs, 50)).toFixed(3)} |`)
print(`| neighbours, both directions (${QUERIES} reads, ${(links0 / QUERIES).toFixed(1)} links each, the same answers) | ${fmt(bySnapshot)} | ${fmt(byEngine)} | ${(p(bySnapshot, 50) / p(byEngine, 50)).toFixed(3)} |`)
process.exit(0)
