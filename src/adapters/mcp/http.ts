/**
 * One memory served to several MCP clients at once over Streamable HTTP (`engram-mcp --port`):
 * each client's session gets its own MCP server over the shared memory, acting for the
 * identity the command was given, or the one its `initialize` request names in `x-engram-*`
 * headers. Bound to the loopback interface, with the Host header checked against it.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import { type ToolIdentity, toolIdentity } from '../../core/tools/agent-tools.ts'
import { parseInput } from '../../core/kernel/validate.ts'
import { createMcpServer, type McpMemory } from './server.ts'

/** The path the MCP endpoint answers on. */
export const MCP_PATH = '/mcp'

/** Headers an `initialize` request may carry to act for another identity than the command's. */
const IDENTITY_HEADERS = {
  'x-engram-user': 'userId',
  'x-engram-agent': 'agentId',
  'x-engram-project': 'projectId',
  'x-engram-tenant': 'tenantId',
} as const

/** The most a request body may hold: tool arguments, not files. */
const MAX_BODY_BYTES = 4 * 2 ** 20

/**
 * Sessions a client left without ending them (a crashed client, an editor window reloaded)
 * end after this long without a request; past `MAX_SESSIONS` open at once a new one is refused
 * (503), so that no client can grow the server without bound.
 */
export const SESSION_IDLE_MS = 30 * 60_000
export const MAX_SESSIONS = 256

export interface HttpMcp {
  /** Where clients connect, e.g. `http://127.0.0.1:7077/mcp`. */
  url: string
  /** Sessions open now. */
  sessions(): number
  /** Ends every session and stops listening. */
  close(): Promise<void>
}

/** Starts serving `memory` on 127.0.0.1:`port` (0: any free port). */
export async function serveMcpOverHttp(
  memory: McpMemory,
  options: { port: number; identity: ToolIdentity; idleMs?: number; maxSessions?: number },
): Promise<HttpMcp> {
  // A bad identity is refused before anything listens.
  parseInput(toolIdentity, options.identity, 'MCP server identity')
  const idleMs = options.idleMs ?? SESSION_IDLE_MS
  const maxSessions = options.maxSessions ?? MAX_SESSIONS
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  /** When each session last had a request. */
  const lastSeen = new Map<string, number>()
  let allowedHosts: string[] = []
  const sweep = setInterval(
    () => {
      const now = Date.now()
      for (const [id, at] of lastSeen) {
        if (now - at < idleMs) continue
        lastSeen.delete(id)
        const transport = sessions.get(id)
        sessions.delete(id)
        void transport?.close().catch(() => {})
      }
    },
    Math.max(Math.min(idleMs / 4, 60_000), 10),
  )
  sweep.unref()

  const answer = (res: ServerResponse, status: number, message: string) => {
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
  }

  async function open(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const identity: Record<string, string> = { ...options.identity }
    for (const [header, field] of Object.entries(IDENTITY_HEADERS)) {
      const value = req.headers[header]
      if (typeof value === 'string' && value !== '') identity[field] = value
    }
    let server: ReturnType<typeof createMcpServer>
    try {
      server = createMcpServer(memory, { identity })
    } catch (error) {
      return answer(res, 400, error instanceof Error ? error.message : String(error))
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableDnsRebindingProtection: true,
      allowedHosts,
      onsessioninitialized: (id) => {
        sessions.set(id, transport)
        lastSeen.set(id, Date.now())
      },
      onsessionclosed: (id) => {
        sessions.delete(id)
        lastSeen.delete(id)
      },
    })
    transport.onclose = () => {
      if (transport.sessionId) {
        sessions.delete(transport.sessionId)
        lastSeen.delete(transport.sessionId)
      }
    }
    await server.connect(transport)
    await transport.handleRequest(req, res, body)
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== MCP_PATH) return answer(res, 404, `MCP answers on ${MCP_PATH}`)
    const id = req.headers['mcp-session-id']
    const session = typeof id === 'string' ? sessions.get(id) : undefined
    if (session && typeof id === 'string') lastSeen.set(id, Date.now())
    if (req.method !== 'POST') {
      if (!session) return answer(res, 404, 'No such session')
      return session.handleRequest(req, res)
    }
    const body = await readJson(req)
    if (body === TOO_LARGE) return answer(res, 413, `A request may hold at most ${MAX_BODY_BYTES} bytes`)
    if (body === UNREADABLE) return answer(res, 400, 'The body is not JSON')
    if (session) return session.handleRequest(req, res, body)
    if (typeof id === 'string') return answer(res, 404, 'No such session')
    if (!isInitializeRequest(body)) return answer(res, 400, 'Start a session with an initialize request')
    if (sessions.size >= maxSessions) {
      return answer(res, 503, `${sessions.size} sessions are open, the most this server keeps: end one (DELETE ${MCP_PATH}) first`)
    }
    return open(req, res, body)
  }

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) answer(res, 500, error instanceof Error ? error.message : String(error))
      else res.end()
    })
  })
  await new Promise<void>((done, fail) => {
    http.once('error', fail)
    http.listen(options.port, '127.0.0.1', () => done())
  })
  const { port } = http.address() as AddressInfo
  // A page elsewhere that points a name at 127.0.0.1 (DNS rebinding) is refused by its Host.
  allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`, ...(port === 80 ? ['127.0.0.1', 'localhost'] : [])]
  return {
    url: `http://127.0.0.1:${port}${MCP_PATH}`,
    sessions: () => sessions.size,
    async close() {
      clearInterval(sweep)
      await Promise.all([...sessions.values()].map((t) => t.close()))
      sessions.clear()
      lastSeen.clear()
      http.closeAllConnections()
      await new Promise<void>((done) => http.close(() => done()))
    },
  }
}

const TOO_LARGE = Symbol('too large')
const UNREADABLE = Symbol('unreadable')

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  let bytes = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length
    if (bytes > MAX_BODY_BYTES) return TOO_LARGE
    chunks.push(chunk)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
  } catch {
    return UNREADABLE
  }
}
