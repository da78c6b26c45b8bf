/**
 * Sync between two devices and a server memory, against moving the same rows with a file.
 * The server is a PostgreSQL server on this machine (a throwaway cluster of Debian's
 * PostgreSQL, keyword-only); the devices are in-memory PGlites in this process, reaching the
 * server over HTTP on 127.0.0.1. Device A holds TURNS turns (default 1,000) and syncs them
 * all; device B then takes them all. Then ROUNDS rounds (default 20): A records 10 turns and
 * syncs, B syncs; and each side syncs once more with nothing new. The peer: A's `exportFile`
 * and a fresh memory's `importFile` of that file.
 *
 *   node bench/run.mjs bench/sync.ts
 */
import pg from 'pg'
import { openMemory, serveSync } from '../src/node/index.ts'
import { buildTemplate } from '../src/runtime/template.ts'
import { databaseUrl, postgresBinaries, startTestPostgres } from '../test/support/postgres-server.ts'
import { latency } from './lib/metrics.ts'

const TURNS = Number(process.env.TURNS ?? 1000)
const ROUNDS = Number(process.env.ROUNDS ?? 20)
const WORDS = ['deploy', 'invoice', 'parser', 'release', 'tests', 'schema', 'cache', 'login', 'report', 'budget']

const turn = (i: number) => ({
  conversationId: `c${i % 50}`,
  scope: { userId: 'ann' },
  user: `What about the ${WORDS[i % WORDS.length]} for item ${i}?`,
  agent: `The ${WORDS[(i * 7) % WORDS.length]} of item ${i} is done.`,
})

const bin = postgresBinaries()
if (!bin) throw new Error('PostgreSQL is not installed (apt-get install postgresql)')
const cluster = await startTestPostgres(bin)
try {
  const admin = new pg.Client(cluster.url)
  await admin.connect()
  await admin.query('CREATE DATABASE engram_sync_bench')
  await admin.end()
  const template = await buildTemplate('none')
  const server = await openMemory({ postgres: databaseUrl(cluster.url, 'engram_sync_bench') })
  const http = await serveSync(server)
  const [a, b] = [await openMemory({ loadDataDir: template }), await openMemory({ loadDataDir: template })]
  const ra = { url: http.url, token: (await server.devices.add({ name: 'a' })).token }
  const rb = { url: http.url, token: (await server.devices.add({ name: 'b' })).token }
  for (let i = 0; i < TURNS; i++) await a.recordTurn(turn(i))

  const timed = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now()
    await fn()
    return performance.now() - t0
  }
  const lines: string[] = []
  const firstPush = await timed(() => a.sync(ra))
  const firstPull = await timed(() => b.sync(rb))
  let file: Blob | undefined
  const exportMs = await timed(async () => (file = await a.exportFile({ includeVectors: false })))
  const fresh = await openMemory({ loadDataDir: template })
  const importMs = await timed(() => fresh.importFile(file as Blob))
  await fresh.close()
  lines.push(`first sync of ${TURNS} turns: A sends ${firstPush.toFixed(0)} ms, B takes ${firstPull.toFixed(0)} ms`)
  lines.push(`the same rows by file: export ${exportMs.toFixed(0)} ms (${(file as Blob).size} bytes), import ${importMs.toFixed(0)} ms`)

  const sends: number[] = []
  const takes: number[] = []
  const idle: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < 10; i++) await a.recordTurn(turn(TURNS + round * 10 + i))
    sends.push(await timed(() => a.sync(ra)))
    takes.push(await timed(() => b.sync(rb)))
    idle.push(await timed(() => a.sync(ra)), await timed(() => b.sync(rb)))
  }
  const row = (name: string, ms: number[]) => {
    const { p50, p95 } = latency(ms)
    return `| ${name} | ${p50 ?? 0} | ${p95 ?? 0} |`
  }
  lines.push('', '| sync | p50 ms | p95 ms |', '| --- | ---: | ---: |')
  lines.push(row('A sends 10 new turns', sends), row('B takes 10 new turns', takes), row('nothing new', idle))
  const [ea, eb] = [await a.stats(), await b.stats()]
  lines.push('', `events: A ${ea.counts.events}, B ${eb.counts.events}, server ${(await server.stats()).counts.events}`)
  process.stdout.write(`${lines.join('\n')}\n`)
  await Promise.all([a.close(), b.close()])
  await http.close()
  await server.close()
} finally {
  await cluster.stop()
}
