/**
 * Write-path load: TURNS turns (default 10 000) of 3 procedures each through recordTurn —
 * a file read, a file write and a test run with output — across 100 conversations and 500
 * files. Reports turns/s and p50/p95/p99 latency per turn, and writes them to
 * bench/results/record-turn.json.
 *
 *   npx vitest run --config bench/vitest.bench.config.ts bench/record-turn.bench-run.ts
 *
 * Environment: TURNS=<n>; BENCH_DATA_DIR=<folder> to use a file data dir (default: in memory).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { expect, it } from 'vitest'
import { openMemory } from '../src/node/index.ts'

const TURNS = Number(process.env.TURNS ?? 10_000)
const CONVERSATIONS = 100
const FILES = 500

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

it(`records ${TURNS} turns with 3 procedures each`, async () => {
  const dataDir = process.env.BENCH_DATA_DIR
  if (dataDir) await rm(dataDir, { recursive: true, force: true })
  const memory = await openMemory({
    ...(dataDir ? { dataDir } : {}),
    workspace: { mode: 'local', root: '/bench/repo' },
  })
  const fileBody = (f: number, rev: number) =>
    `// src/mod${f}.ts rev ${rev}\n${'export const value = 1 // padding to a realistic size\n'.repeat(40)}`
  const revision = new Array<number>(FILES).fill(0)
  const latencies: number[] = []
  const start = performance.now()
  for (let n = 0; n < TURNS; n++) {
    const read = (n * 7) % FILES
    const written = (n * 13 + 1) % FILES
    // Every 10th read finds the file changed outside the agent: an external version.
    if (n % 10 === 0) revision[read] = (revision[read] ?? 0) + 1
    revision[written] = (revision[written] ?? 0) + 1
    const t0 = performance.now()
    await memory.recordTurn({
      conversationId: `conv-${n % CONVERSATIONS}`,
      scope: { userId: 'bench-user', agentId: 'bench-agent' },
      user: `Turn ${n}: please look at src/mod${read}.ts and update src/mod${written}.ts so the tests pass.`,
      agent: `I read src/mod${read}.ts, changed src/mod${written}.ts and ran the tests; all ${n % 50} passed.`,
      procedures: [
        {
          tool: 'read_file',
          args: { path: `src/mod${read}.ts` },
          document: { path: `src/mod${read}.ts`, content: fileBody(read, revision[read] ?? 0), effect: 'read' },
        },
        {
          tool: 'edit_file',
          args: { path: `src/mod${written}.ts`, find: 'value = 1', replace: 'value = 2' },
          document: { path: `src/mod${written}.ts`, content: fileBody(written, revision[written] ?? 0), effect: 'write' },
        },
        { tool: 'run_tests', args: { filter: `mod${written}` }, output: `PASS src/mod${written}.test.ts (${n % 50} tests)\n` },
      ],
    })
    latencies.push(performance.now() - t0)
  }
  const seconds = (performance.now() - start) / 1000
  const sorted = [...latencies].sort((a, b) => a - b)
  const stats = await memory.stats()
  const result = {
    turns: TURNS,
    storage: dataDir ? 'file' : 'memory',
    seconds: Number(seconds.toFixed(1)),
    turnsPerSecond: Number((TURNS / seconds).toFixed(1)),
    latencyMs: {
      p50: Number(percentile(sorted, 50).toFixed(2)),
      p95: Number(percentile(sorted, 95).toFixed(2)),
      p99: Number(percentile(sorted, 99).toFixed(2)),
      max: Number((sorted[sorted.length - 1] ?? 0).toFixed(2)),
    },
    counts: stats.counts,
    databaseBytes: stats.bytes,
  }
  await memory.close()
  await mkdir('bench/results', { recursive: true })
  await writeFile('bench/results/record-turn.json', `${JSON.stringify(result, null, 2)}\n`)
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  expect(stats.counts.events).toBe(TURNS * 4)
})
