// A process that holds a memory and writes to it back to back, never letting a timer run:
//   ENGRAM_DATA_DIR=… ENGRAM_TEMPLATE=… node bench/run.mjs test/support/lock-holder.ts
// or, for a memory on a PostgreSQL server, ENGRAM_POSTGRES=<connection string>.
// It prints `open` once the memory is open, then `wrote <n>` after every 20th acknowledged write.
import { readFile } from 'node:fs/promises'
import { openMemory } from '../../src/node/index.ts'

const dataDir = process.env.ENGRAM_DATA_DIR
const template = process.env.ENGRAM_TEMPLATE
const postgres = process.env.ENGRAM_POSTGRES
const settings = { indexing: 'manual', statistics: 'manual' } as const
if (!postgres && (!dataDir || !template)) throw new Error('ENGRAM_POSTGRES, or ENGRAM_DATA_DIR and ENGRAM_TEMPLATE, are required')
const memory = postgres
  ? await openMemory({ postgres, ...settings })
  : await openMemory({ dataDir: dataDir ?? '', loadDataDir: new Blob([new Uint8Array(await readFile(template ?? ''))]), cacheMB: 4, ...settings })
process.stdout.write('open\n')
for (let n = 1; ; n++) {
  await memory.remember({ content: `Fact number ${n} written by the holder`, category: 'fact' })
  if (n % 20 === 0) process.stdout.write(`wrote ${n}\n`)
}
