/**
 * `engram-mcp` (src/node/mcp-bin.ts): a memory on this machine served to an MCP client (Claude
 * Desktop, VS Code, OpenCode …) over stdio, or to several at once over HTTP (`--port`). Run
 * `engram-mcp --help` for the options.
 */
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { createTransformersEmbedder, openMemory } from './index.ts'
import { serveMcpOverHttp } from '../adapters/mcp/http.ts'
import { createMcpServer } from '../adapters/mcp/server.ts'
import { toolIdentity } from '../core/tools/agent-tools.ts'
import { parseInput } from '../core/kernel/validate.ts'

const HELP = `engram-mcp — long-term memory for an MCP client, kept on this machine

Options:
  --data-dir DIR        where the memory lives (default ~/.engram/mcp)
  --postgres URL        keep the memory on a PostgreSQL server instead (a connection
                        string; needs the pg package), e.g. with --port for many clients
  --user ID             whose memories the tools read and write (default: none)
  --agent ID            the agent the tools act as
  --project ID          the project for project-scoped memories
  --tenant ID           the tenant (default 'default')
  --workspace-root DIR  document paths are kept relative to this folder
  --no-embedder         keyword search only (no embedding model is loaded)
  --port N              serve several clients at once over HTTP on 127.0.0.1:N (0: any
                        free port) at /mcp, instead of one over stdio; a client may act
                        for another identity with x-engram-user, x-engram-agent,
                        x-engram-project or x-engram-tenant headers on its initialize
  --help                this text
`

export interface CliIo {
  stdin: NodeJS.ReadableStream
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
  /** Ends the session as a closed stdin does (the command aborts it on SIGINT and SIGTERM). */
  signal?: AbortSignal
}

/**
 * Parses the options, opens the memory and serves it until the client closes the stream.
 * Resolves once the memory is closed again.
 */
export async function runMcpCli(argv: readonly string[], io: CliIo): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'data-dir': { type: 'string' },
      postgres: { type: 'string' },
      user: { type: 'string' },
      agent: { type: 'string' },
      project: { type: 'string' },
      tenant: { type: 'string' },
      'workspace-root': { type: 'string' },
      'no-embedder': { type: 'boolean' },
      port: { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  })
  if (values.help) {
    io.stderr.write(HELP)
    return
  }
  // Digits only: Number() would read '' as 0 (any port) and '0x1F90' as 8080.
  const port = values.port === undefined ? undefined : /^\d{1,5}$/.test(values.port) ? Number(values.port) : Number.NaN
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    throw new Error(`--port takes a port number from 0 to 65535, not "${values.port}"`)
  }
  const identity = {
    ...(values.user === undefined ? {} : { userId: values.user }),
    ...(values.agent === undefined ? {} : { agentId: values.agent }),
    ...(values.project === undefined ? {} : { projectId: values.project }),
    ...(values.tenant === undefined ? {} : { tenantId: values.tenant }),
  }
  // Refused before the memory opens (which takes seconds).
  parseInput(toolIdentity, identity, '--user, --agent, --project or --tenant')
  const postgres = values.postgres
  if (postgres !== undefined && values['data-dir'] !== undefined) throw new Error('--data-dir and --postgres name two places for one memory: give one')
  const dataDir = resolve(values['data-dir'] ?? join(homedir(), '.engram', 'mcp'))
  // What the log names: the folder, or the server without its password.
  const where = postgres === undefined ? dataDir : withoutPassword(postgres)
  const root = values['workspace-root']
  // The model loads while the memory already answers (by keywords until it is there).
  const embedder = values['no-embedder'] ? undefined : createTransformersEmbedder()
  const memory = await openMemory({
    ...(postgres === undefined ? { dataDir } : { postgres }),
    ...(embedder ? { embedder } : {}),
    ...(root === undefined ? {} : { workspace: { mode: 'local' as const, root } }),
  })
  if (port !== undefined) {
    let http: Awaited<ReturnType<typeof serveMcpOverHttp>>
    try {
      http = await serveMcpOverHttp(memory, { port, identity })
    } catch (error) {
      await memory.close()
      throw error
    }
    io.stderr.write(`engram-mcp: serving ${where} at ${http.url}\n`)
    // Served until the process is stopped.
    await new Promise<void>((done) => {
      if (io.signal?.aborted) done()
      io.signal?.addEventListener('abort', () => done(), { once: true })
    })
    await http.close()
    await memory.close()
    return
  }
  const server = createMcpServer(memory, { identity })
  const transport = new StdioServerTransport(io.stdin as never, io.stdout as never)
  const closed = new Promise<void>((done) => {
    server.onclose = done
  })
  await server.connect(transport)
  io.stderr.write(`engram-mcp: serving ${where}\n`)
  // The client ends the session by closing our stdin, or stops the process.
  io.stdin.on('end', () => void server.close())
  if (io.signal?.aborted) void server.close()
  io.signal?.addEventListener('abort', () => void server.close(), { once: true })
  await closed
  await memory.close()
}

/** A connection string with its password blanked, for the log. */
function withoutPassword(connection: string): string {
  try {
    const url = new URL(connection)
    if (url.password) url.password = '***'
    return url.toString()
  } catch {
    return 'a PostgreSQL server'
  }
}
