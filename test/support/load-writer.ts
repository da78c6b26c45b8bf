// One process of a load run (test/support/load.ts): it opens the memory on a PostgreSQL server,
// prints `open`, and on a `go <seconds>` line runs its agents, prints `report <json>`, and exits.
//   ENGRAM_POSTGRES=<connection string> LOAD_PROCESS=<n> LOAD_AGENTS=<n> node bench/run.mjs test/support/load-writer.ts
import { createInterface } from 'node:readline'
import { openMemory } from '../../src/node/index.ts'
import { runAgents } from './load.ts'

const postgres = process.env.ENGRAM_POSTGRES
if (!postgres) throw new Error('ENGRAM_POSTGRES is required')
const p = Number(process.env.LOAD_PROCESS ?? 0)
const agents = Number(process.env.LOAD_AGENTS ?? 10)
const memory = await openMemory({ postgres, indexing: 'manual' })
process.stdout.write('open\n')
const lines = createInterface({ input: process.stdin })
for await (const line of lines) {
  const go = /^go ([\d.]+)$/.exec(line)
  if (!go) continue
  const report = await runAgents(memory, p, agents, performance.now() + Number(go[1]) * 1000)
  process.stdout.write(`report ${JSON.stringify(report)}\n`)
  break
}
lines.close()
await memory.close()
