/**
 * What the MCP server adds to a tool call. One memory in this process with the bundled model,
 * 300 curated memories; then `recall_memories` and `save_memory` called three ways,
 * alternately: `memory.callTool` in-process, through an MCP client and server over the SDK's
 * in-memory transport (JSON-RPC, validation, JSON), over Streamable HTTP on the loopback
 * interface (`serveMcpOverHttp`, this process), and through the built `engram-mcp` over stdio
 * (a second process with its own copy of the same memory, `npm run build` first). The
 * first WARMUP rounds are not counted. Prints p50 / p95 and the ratios to in-process.
 *
 *   node bench/run.mjs bench/mcp.ts            # ROUNDS (default 200)
 */
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createMcpServer, serveMcpOverHttp } from '../src/adapters/mcp/index.ts'
import { createTransformersEmbedder, openMemory } from '../src/node/index.ts'
import { percentile } from './lib/metrics.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 200)
const WARMUP = 30
const MEMORIES = 300
const USER = { userId: 'ann' }

const print = (line: string) => process.stdout.write(`${line}\n`)
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const p = (xs: number[], q: number) => percentile(sorted(xs), q)

const topics = ['deploys', 'tests', 'reviews', 'naming', 'logging', 'errors', 'docs', 'releases', 'storage', 'search']
const base = await mkdtemp(join(tmpdir(), 'engram-mcp-bench-'))
const dataDir = join(base, 'memory')
const memory = await openMemory({ dataDir, embedder: createTransformersEmbedder(), indexing: 'manual' })
for (let i = 0; i < MEMORIES; i++) {
  const topic = topics[i % topics.length] as string
  await memory.remember({ content: `Rule ${i} about ${topic}: keep ${topic} ${i % 7 === 0 ? 'short' : 'explicit'} and reviewed`, category: 'convention', ...USER })
}
await memory.indexNow()
// The stdio server opens a copy: a data folder is held by one open at a time.
await memory.close()
const copyDir = join(base, 'copy')
await cp(dataDir, copyDir, { recursive: true })
const local = await openMemory({ dataDir, embedder: createTransformersEmbedder(), indexing: 'manual' })

const server = createMcpServer(local, { identity: USER })
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
const inMemory = new Client({ name: 'bench', version: '1' })
await Promise.all([server.connect(serverSide), inMemory.connect(clientSide)])
const http = await serveMcpOverHttp(local, { port: 0, identity: USER })
const overHttp = new Client({ name: 'bench', version: '1' })
await overHttp.connect(new StreamableHTTPClientTransport(new URL(http.url)))
const stdio = new Client({ name: 'bench', version: '1' })
const transport = new StdioClientTransport({
  command: process.execPath,
  args: ['dist/lib/src/node/mcp-bin.js', '--data-dir', copyDir, '--user', USER.userId],
  stderr: 'pipe',
})
await stdio.connect(transport)

const ways = {
  'in-process callTool': (name: string, args: Record<string, unknown>) => local.callTool(name, args, USER),
  'MCP, in-memory transport': (name: string, args: Record<string, unknown>) => inMemory.callTool({ name, arguments: args }),
  'MCP, Streamable HTTP': (name: string, args: Record<string, unknown>) => overHttp.callTool({ name, arguments: args }),
  'MCP, stdio (engram-mcp)': (name: string, args: Record<string, unknown>) => stdio.callTool({ name, arguments: args }),
} as const
type Way = keyof typeof ways
const times: Record<string, Record<Way, number[]>> = {}
const call = async (op: string, way: Way, name: string, args: Record<string, unknown>, counted: boolean) => {
  const t = performance.now()
  const result = await ways[way](name, args)
  const ms = performance.now() - t
  if ((result as { isError?: boolean }).isError) throw new Error(`${way} ${name} failed: ${JSON.stringify(result)}`)
  if (counted) ((times[op] ??= {} as Record<Way, number[]>)[way] ??= []).push(ms)
}

// The stdio server's model loads beside it: wait until it recalls by meaning.
for (let tries = 0; ; tries++) {
  const r = await stdio.callTool({ name: 'recall_memories', arguments: { query: 'how should errors be handled' } })
  if ((r.content as { text: string }[])[0]?.text.includes('errors')) break
  if (tries > 100) throw new Error('the stdio server never answered by meaning')
  await new Promise((done) => setTimeout(done, 200))
}

const order = Object.keys(ways) as Way[]
for (let round = 0; round < WARMUP + ROUNDS; round++) {
  const counted = round >= WARMUP
  const topic = topics[round % topics.length] as string
  for (let k = 0; k < order.length; k++) {
    const way = order[(round + k) % order.length] as Way
    await call('recall_memories', way, 'recall_memories', { query: `what do we do about ${topic}?`, limit: 5 }, counted)
    await call('save_memory', way, 'save_memory', { content: `Note ${round} via ${way}: ${topic} matter`, category: 'fact' }, counted)
  }
}

print(`MCP tool calls, ${ROUNDS} timed rounds after ${WARMUP}, ${MEMORIES} memories, the bundled model (p50 / p95, ratio to in-process at p50 / p95):`)
for (const [op, byWay] of Object.entries(times)) {
  const direct = byWay['in-process callTool']
  for (const way of order) {
    const xs = byWay[way]
    print(
      `  ${op.padEnd(16)} ${way.padEnd(26)} ${p(xs, 50).toFixed(2)} / ${p(xs, 95).toFixed(2)} ms   ${(p(xs, 50) / p(direct, 50)).toFixed(2)}× / ${(p(xs, 95) / p(direct, 95)).toFixed(2)}×`,
    )
  }
}
await stdio.close()
await overHttp.close()
await http.close()
await inMemory.close()
await local.close()
await rm(base, { recursive: true, force: true })
process.exit(0)
