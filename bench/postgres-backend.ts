/**
 * The same calls on the two backends in one run: an in-memory PGlite in this process, and a
 * PostgreSQL server on this machine (a throwaway cluster of Debian's PostgreSQL, over TCP on
 * 127.0.0.1, keyword-only). Both memories have no embedder, so both search by keywords.
 * Each memory first gets EVENTS turns; then the calls alternate between the two memories,
 * ROUNDS times each (defaults 300 and 200).
 *
 *   node bench/run.mjs bench/postgres-backend.ts
 */
import { openMemory } from '../src/node/index.ts'
import { buildTemplate } from '../src/runtime/template.ts'
import { latency } from './lib/metrics.ts'
import { databaseUrl, postgresBinaries, startTestPostgres } from '../test/support/postgres-server.ts'
import pg from 'pg'

const EVENTS = Number(process.env.EVENTS ?? 300)
const ROUNDS = Number(process.env.ROUNDS ?? 200)
const WORDS = ['deploy', 'invoice', 'parser', 'release', 'tests', 'schema', 'cache', 'login', 'report', 'budget']

const bin = postgresBinaries()
if (!bin) throw new Error('PostgreSQL is not installed (apt-get install postgresql)')
const server = await startTestPostgres(bin)
try {
  const admin = new pg.Client(server.url)
  await admin.connect()
  await admin.query('CREATE DATABASE engram_bench')
  await admin.end()
  const memories = {
    pglite: await openMemory({ loadDataDir: await buildTemplate('none') }),
    postgres: await openMemory({ postgres: databaseUrl(server.url, 'engram_bench') }),
  }
  const turn = (i: number) => ({
    conversationId: `c${i % 20}`,
    scope: { userId: 'ann' },
    user: `What about the ${WORDS[i % WORDS.length]} for item ${i}?`,
    agent: `The ${WORDS[(i * 7) % WORDS.length]} of item ${i} is done.`,
  })
  for (const memory of Object.values(memories)) {
    for (let i = 0; i < EVENTS / 2; i++) await memory.recordTurn(turn(i))
    await memory.refreshStatistics()
  }
  const times: Record<string, number[]> = {}
  const time = async (name: string, fn: () => Promise<unknown>) => {
    const t0 = performance.now()
    await fn()
    ;(times[name] ??= []).push(performance.now() - t0)
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [backend, memory] of Object.entries(memories)) {
      const word = WORDS[round % WORDS.length] ?? 'deploy'
      await time(`recordTurn ${backend}`, () => memory.recordTurn(turn(EVENTS + round)))
      await time(`search ${backend}`, () => memory.search(`${word} item`, { scope: { userId: 'ann' }, limit: 10 }))
      await time(`remember ${backend}`, () => memory.remember({ content: `Ann noted ${word} ${round}`, category: 'fact', userId: 'ann' }))
    }
  }
  for (const memory of Object.values(memories)) await memory.close()
  const rows = ['| call | backend | p50 ms | p95 ms |', '| --- | --- | ---: | ---: |']
  for (const [name, ms] of Object.entries(times)) {
    const { p50, p95 } = latency(ms)
    const [call, backend] = name.split(' ')
    rows.push(`| ${call} | ${backend} | ${p50?.toFixed(1)} | ${p95?.toFixed(1)} |`)
  }
  process.stdout.write(`${rows.join('\n')}\n`)
} finally {
  await server.stop()
}
