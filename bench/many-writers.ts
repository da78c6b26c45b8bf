/**
 * Many agents writing one memory at once, on the two backends. On a PostgreSQL server (a
 * throwaway cluster of Debian's PostgreSQL on 127.0.0.1, keyword-only): PROCESSES writer
 * processes of AGENTS agents each, while this process follows the changes with `diffSince`. On
 * PGlite: one in-memory memory in this process, the same PROCESSES × AGENTS agents on it (no
 * embedder either). Each agent records a turn, remembers a fact, puts a kv entry and searches,
 * round after round, for LOAD_SECONDS. Then both are checked (test/support/load.ts): no error, turn
 * numbers 0, 1, 2… per conversation, every acknowledged write stored once, kv revisions in
 * order, every event listed once by the follower.
 *
 *   node bench/run.mjs bench/many-writers.ts     # LOAD_SECONDS=60 PROCESSES=4 AGENTS=10
 */
import pg from 'pg'
import { createEngine } from '../src/core/engine.ts'
import { openMemory } from '../src/node/index.ts'
import { openPGlite } from '../src/runtime/pglite.ts'
import { buildTemplate } from '../src/runtime/template.ts'
import { latency } from './lib/metrics.ts'
import { checkLoad, LOAD_CALLS, type LoadReport, mergeReports, emptyReport, runAgents } from '../test/support/load.ts'
import { runWriterProcesses } from '../test/support/load-run.ts'
import { databaseUrl, postgresBinaries, startTestPostgres } from '../test/support/postgres-server.ts'

const SECONDS = Number(process.env.LOAD_SECONDS ?? 60)
const PROCESSES = Number(process.env.PROCESSES ?? 4)
const AGENTS = Number(process.env.AGENTS ?? 10)

const bin = postgresBinaries()
if (!bin) throw new Error('PostgreSQL is not installed (apt-get install postgresql)')
const server = await startTestPostgres(bin)
const results: Record<string, { report: LoadReport; broken: string[]; extra: string }> = {}
try {
  const admin = new pg.Client(server.url)
  await admin.connect()
  await admin.query('CREATE DATABASE engram_load')
  await admin.end()
  const url = databaseUrl(server.url, 'engram_load')
  const follower = await openMemory({ postgres: url, indexing: 'manual' })
  let since = new Date(0).toISOString()
  const listed: string[] = []
  let lists = 0
  const follow = async () => {
    const changes = await follower.diffSince(since)
    listed.push(...changes.events.map((e) => e.id))
    since = changes.until
    lists++
  }
  const report = await runWriterProcesses(url, {
    processes: PROCESSES,
    agents: AGENTS,
    seconds: SECONDS,
    during: async (stop) => {
      while (!stop.aborted) await follow()
    },
  })
  await follow()
  await follower.close()
  const client = new pg.Client(url)
  await client.connect()
  const query = async <T>(sql: string) => (await client.query(sql)).rows as T[]
  const broken = await checkLoad(query, report)
  const events = (await query<{ id: string }>('SELECT id FROM events')).map((e) => e.id).sort()
  if (JSON.stringify([...listed].sort()) !== JSON.stringify(events)) broken.push('the change lists did not list every event once')
  await client.end()
  results.postgres = { report, broken, extra: `${lists} change lists` }
} finally {
  await server.stop()
}

{
  const pglite = await openPGlite({ loadDataDir: await buildTemplate('none') })
  const memory = await createEngine({ db: pglite, indexing: 'manual' })
  const deadline = performance.now() + SECONDS * 1000
  const reports = await Promise.all(Array.from({ length: PROCESSES }, (_, p) => runAgents(memory, p, AGENTS, deadline)))
  const report = reports.reduce(mergeReports, emptyReport())
  const broken = await checkLoad(async (sql) => (await pglite.query(sql)).rows as never[], report)
  await memory.stopIndexing()
  await pglite.close()
  results.pglite = { report, broken, extra: 'one process' }
}

const lines = [
  `${PROCESSES} × ${AGENTS} agents for ${SECONDS} s, keyword-only.`,
  '',
  '| backend | call | calls/s | p50 ms | p95 ms |',
  '| --- | --- | ---: | ---: | ---: |',
]
for (const [backend, { report }] of Object.entries(results)) {
  let total = 0
  for (const call of LOAD_CALLS) {
    const ms = report.ms[call]
    total += ms.length
    const { p50, p95 } = latency(ms)
    lines.push(`| ${backend} | ${call} | ${(ms.length / SECONDS).toFixed(1)} | ${p50 ?? ''} | ${p95 ?? ''} |`)
  }
  lines.push(`| ${backend} | all | ${(total / SECONDS).toFixed(1)} | | |`)
}
lines.push('')
for (const [backend, { report, broken, extra }] of Object.entries(results)) {
  lines.push(`${backend}: ${report.errors.length} errors, ${broken.length} broken rules${broken.length ? ` (${broken.join('; ')})` : ''}; ${extra}.`)
}
process.stdout.write(`${lines.join('\n')}\n`)
