/**
 * What sealing `high` content at rest costs (src/core/privacy/vault.ts). Two memories in this process,
 * each in memory, one without a vault and one with a passphrase vault, record the same turns
 * (3 procedures, unique texts) alternately: `none` and `high` in each. Then each lists a
 * conversation's events and builds a context without retrieval, alternately; in the vault's
 * memory half of those events are sealed. Last, opening an engine over a memory that has a
 * vault: without a key (locked), with its passphrase (PBKDF2, 600,000 iterations) and with a
 * `CryptoKey`. The first WARMUP rounds are not counted. Prints p50 / p95.
 *
 *   node bench/run.mjs bench/vault.ts            # ROUNDS (default 300)
 */
import { createEngine } from '../src/core/engine.ts'
import { createHashEmbedder } from '../src/embed/hash-embedder.ts'
import { durableDb, openPGlite } from '../src/runtime/pglite.ts'
import { percentile } from './lib/metrics.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 300)
const WARMUP = 40
const PASSPHRASE = 'correct horse battery'

const print = (line: string) => process.stdout.write(`${line}\n`)
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const show = (xs: number[]) => `p50 ${percentile(sorted(xs), 50).toFixed(2)} ms, p95 ${percentile(sorted(xs), 95).toFixed(2)} ms`

async function open(vault?: { passphrase: string } | { key: CryptoKey }) {
  const db = durableDb(await openPGlite({}))
  const engine = await createEngine({
    db,
    embedder: createHashEmbedder({ dims: 384 }),
    indexing: 'manual',
    ...(vault ? { vault } : {}),
  })
  return { db, engine }
}

const plain = await open()
const vaulted = await open({ passphrase: PASSPHRASE })

const turn = (i: number, sensitivity: 'none' | 'high') => ({
  conversationId: `c${i % 20}`,
  sensitivity,
  user: `Question ${i}: why does the invoice export drop the currency column on account ${i}?`,
  agent: `Answer ${i}: the exporter trims columns past the twelfth; currency was the thirteenth.`,
  procedures: [
    { tool: 'read_file', args: { path: `/repo/src/export${i % 7}.ts` }, output: `const MAX_COLUMNS = ${i}\n`.repeat(20) },
    { tool: 'run_tests', args: { filter: `export ${i}` }, output: `currency column missing: ${i} failed` },
    { tool: 'grep', args: { pattern: 'currency' }, output: 'src/export.ts:12: currency' },
  ],
})
const writes = {
  'none, no vault': (i: number) => plain.engine.recordTurn(turn(i, 'none')),
  'high, no vault': (i: number) => plain.engine.recordTurn(turn(i, 'high')),
  'none, vault': (i: number) => vaulted.engine.recordTurn(turn(i, 'none')),
  'high, vault (sealed)': (i: number) => vaulted.engine.recordTurn(turn(i, 'high')),
}
const written: Record<string, number[]> = Object.fromEntries(Object.keys(writes).map((k) => [k, []]))
for (let i = 0; i < WARMUP + ROUNDS; i++) {
  for (const [name, run] of Object.entries(writes)) {
    const started = performance.now()
    await run(i)
    if (i >= WARMUP) written[name]?.push(performance.now() - started)
  }
}
for (const [name, xs] of Object.entries(written)) print(`recordTurn ${name}: ${show(xs)}`)

const reads = { list: { plain: [] as number[], vault: [] as number[] }, context: { plain: [] as number[], vault: [] as number[] } }
for (let i = 0; i < WARMUP + ROUNDS; i++) {
  for (const [name, m] of [['plain', plain.engine], ['vault', vaulted.engine]] as const) {
    let started = performance.now()
    await m.events.list({ conversationId: `c${i % 20}`, limit: 50 })
    if (i >= WARMUP) reads.list[name].push(performance.now() - started)
    started = performance.now()
    await m.buildContext({ query: 'currency column', conversationId: `c${i % 20}`, maxTokens: 4000, retrieval: false })
    if (i >= WARMUP) reads.context[name].push(performance.now() - started)
  }
}
print(`events.list (50 events): no vault ${show(reads.list.plain)} | vault ${show(reads.list.vault)}`)
print(`buildContext without retrieval: no vault ${show(reads.context.plain)} | vault ${show(reads.context.vault)}`)

const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])
const keyed = await open({ key })
const opens: Record<string, number[]> = { locked: [], passphrase: [], key: [] }
for (let i = 0; i < 12; i++) {
  for (const [name, run] of [
    ['locked', () => createEngine({ db: vaulted.db, indexing: 'manual' })],
    ['passphrase', () => createEngine({ db: vaulted.db, indexing: 'manual', vault: { passphrase: PASSPHRASE } })],
    ['key', () => createEngine({ db: keyed.db, indexing: 'manual', vault: { key } })],
  ] as const) {
    const started = performance.now()
    const engine = await run()
    const ms = performance.now() - started
    await engine.stopIndexing()
    if (i >= 2) opens[name]?.push(ms)
  }
}
print(`createEngine over a memory with a vault: ${Object.entries(opens).map(([k, xs]) => `${k} p50 ${percentile(sorted(xs), 50).toFixed(1)} ms`).join(', ')}`)
for (const m of [plain, vaulted, keyed]) await m.engine.stopIndexing()
process.exit(0)
