/**
 * What a new in-memory memory costs to open in Node: the migrated template loaded by PGlite's
 * own `loadDataDir` (it parses the tarball and reads `pglite.data` at every open), against
 * `openPGlite` (the parsed template copied in, `pglite.data` read once per process), and
 * `openMemory` on top (the engine started too). Interleaved, ROUNDS times each (default 15),
 * so that a slower stretch of a noisy machine touches each alike. The unit suite opens a
 * memory like this for most of its tests.
 *
 *   node bench/run.mjs bench/node-open.ts
 */
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { openMemory } from '../src/node/index.ts'
import { pgliteFsBundle } from '../src/node/template.ts'
import { cacheSetting, INITDB_PARAMS, openPGlite, WAL_SETTINGS } from '../src/runtime/pglite.ts'
import { buildTemplate } from '../src/runtime/template.ts'
import { latency } from './lib/metrics.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 15)
const CACHE_MB = 4

const template = new Blob([new Uint8Array(await (await buildTemplate('none')).arrayBuffer())])
const fsBundle = await pgliteFsBundle()
if (!fsBundle) throw new Error("pglite.data was not found beside PGlite's module")

const ways: Record<string, () => Promise<{ close(): Promise<void> }>> = {
  "PGlite's loadDataDir": () =>
    PGlite.create({
      loadDataDir: template,
      extensions: { vector },
      initDbStartParams: [...INITDB_PARAMS],
      startParams: [...PGlite.defaultStartParams, ...[...WAL_SETTINGS, cacheSetting(CACHE_MB)].flatMap((s) => ['-c', s])],
    }),
  openPGlite: () => openPGlite({ loadDataDir: template, fsBundle, cacheMB: CACHE_MB }),
  'openMemory (in memory)': () => openMemory({ loadDataDir: template, cacheMB: CACHE_MB }),
}
const times = new Map<string, number[]>(Object.keys(ways).map((name) => [name, []]))
const cpu = new Map<string, number>(Object.keys(ways).map((name) => [name, 0]))
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, open] of Object.entries(ways)) {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const opened = await open()
    times.get(name)?.push(performance.now() - t0)
    await opened.close()
    const used = process.cpuUsage(cpu0)
    cpu.set(name, (cpu.get(name) ?? 0) + (used.user + used.system) / 1000)
  }
}
const rows = ['| open | p50 ms | p95 ms | CPU per open, ms |', '| --- | ---: | ---: | ---: |']
for (const [name, ms] of times) {
  const { p50, p95 } = latency(ms)
  rows.push(`| ${name} | ${Math.round(p50 ?? Number.NaN)} | ${Math.round(p95 ?? Number.NaN)} | ${Math.round((cpu.get(name) ?? 0) / ms.length)} |`)
}
process.stdout.write(`${rows.join('\n')}\n`)
