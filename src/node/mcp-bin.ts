#!/usr/bin/env node
// `engram-mcp`: see src/node/mcp-cli.ts. The MCP SDK is an optional peer dependency of Engram.
import type * as Cli from './mcp-cli.ts'

// Only protocol messages may reach stdout: whatever a library logs goes to stderr.
Object.assign(console, { log: console.error, info: console.error, warn: console.error })

function fail(message: string): never {
  process.stderr.write(`engram-mcp: ${message}\n`)
  process.exit(1)
}

let cli: typeof Cli
try {
  cli = await import('./mcp-cli.ts')
} catch (error) {
  const missing = (error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String(error).includes('@modelcontextprotocol/sdk')
  fail(missing ? 'needs the MCP SDK next to Engram: npm install @modelcontextprotocol/sdk' : String(error))
}
// Stopped by the client, the server closes the memory before it exits.
const stop = new AbortController()
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort())
cli.runMcpCli(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, signal: stop.signal }).then(
  () => process.exit(0),
  (error: unknown) => fail(error instanceof Error ? error.message : String(error)),
)
