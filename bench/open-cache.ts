/**
 * What the page cache costs an open, in Node: an empty memory (the template every new memory
 * starts from) opened with each `cacheMB` in turn, ROUNDS times (default 7), interleaved so
 * that a slower stretch of a noisy machine touches every size alike. Postgres clears its whole
 * buffer pool when it starts, so the open grows with the pool, not with the data.
 *
 *   node bench/run.mjs bench/open-cache.ts
 *   ROUNDS=9 SIZES=16,64,128 node bench/run.mjs bench/open-cache.ts
 */
import { openPGlite } from '../src/runtime/pglite.ts'
import { buildTemplate } from '../src/runtime/template.ts'
import { latency } from './lib/metrics.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 7)
const SIZES = (process.env.SIZES ?? '16,32,64,128,256,512').split(',').map(Number)

const template = await buildTemplate('none')
const opens = new Map<number, number[]>(SIZES.map((mb) => [mb, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const cacheMB of SIZES) {
    const t0 = performance.now()
    const pg = await openPGlite({ loadDataDir: template, cacheMB })
    await pg.query('SELECT 1')
    opens.get(cacheMB)?.push(performance.now() - t0)
    await pg.close()
  }
}
const rows = ['| `cacheMB` | opens | p50 ms | slowest ms |', '| ---: | ---: | ---: | ---: |']
for (const [cacheMB, ms] of opens) {
  rows.push(`| ${cacheMB} | ${ms.length} | ${Math.round(latency(ms).p50 ?? Number.NaN)} | ${Math.round(Math.max(...ms))} |`)
}
process.stdout.write(`${rows.join('\n')}\n`)
