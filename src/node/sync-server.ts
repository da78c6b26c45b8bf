import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createSyncHandler, type SyncHandlerOptions, type SyncServing } from '../core/sync/handler.ts'

export interface SyncServer {
  /** The address devices sync with, e.g. `http://127.0.0.1:8787/sync`. */
  url: string
  close: () => Promise<void>
}

/**
 * Serves a server memory's sync over HTTP at `http://<host>:<port>/sync` (host 127.0.0.1 and
 * a free port by default). Put it behind HTTPS before devices reach it over a network.
 *
 * @example
 * const server = await openMemory({ postgres: process.env.DATABASE_URL })
 * const { url } = await serveSync(server, { port: 8787 })
 */
export async function serveSync(
  memory: SyncServing,
  options: SyncHandlerOptions & { port?: number; host?: string } = {},
): Promise<SyncServer> {
  const handle = createSyncHandler(memory, options)
  const host = options.host ?? '127.0.0.1'
  const maxBytes = options.maxBytes ?? 64 * 2 ** 20
  const server: Server = createServer((req, res) => {
    void toRequest(req, host, maxBytes)
      .then(handle)
      .then(async (response) => {
        res.writeHead(response.status, Object.fromEntries(response.headers))
        res.end(Buffer.from(await response.arrayBuffer()))
      })
      .catch((error: unknown) => {
        const tooLarge = error instanceof RangeError
        res.writeHead(tooLarge ? 400 : 500, { 'content-type': 'application/json', connection: 'close' })
        const refusal = tooLarge
          ? { code: 'INVALID_INPUT', message: `The request is over ${maxBytes} bytes.` }
          : { code: 'INTERNAL', message: 'The sync server failed.' }
        res.end(JSON.stringify({ error: refusal }))
      })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/sync`,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  }
}

/** The Fetch-API form of a request; a RangeError once its body passes `maxBytes`. */
async function toRequest(req: IncomingMessage, host: string, maxBytes: number): Promise<Request> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > maxBytes) throw new RangeError('request too large')
    chunks.push(chunk as Buffer)
  }
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value)
  }
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks)
  return new Request(`http://${host}${req.url ?? '/'}`, { method: req.method ?? 'GET', headers, ...(body ? { body } : {}) })
}
