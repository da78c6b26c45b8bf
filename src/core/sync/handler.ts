import { MemoryError } from '../kernel/errors.ts'
import type { ErrorCode } from '../kernel/errors.ts'

/** What the handler needs of a server memory. */
export interface SyncServing {
  syncServer: {
    pull: (token: string, request: never) => Promise<unknown>
    push: (token: string, request: never) => Promise<unknown>
  }
}

export interface SyncHandlerOptions {
  /** The largest request body taken, in bytes (default 64 MiB): a device's first push can be large. */
  maxBytes?: number
  /**
   * The web origin whose pages may sync (`Access-Control-Allow-Origin`), default `*`. The
   * token travels in a header, never a cookie, so another site's page cannot use a device's.
   */
  allowOrigin?: string
}

const STATUS: Partial<Record<ErrorCode, number>> = {
  UNAUTHORIZED: 401,
  INVALID_INPUT: 400,
  IMPORT_CORRUPT: 400,
  NOT_SUPPORTED: 409,
  CONFLICT: 409,
  NOT_FOUND: 404,
  STORAGE_UNAVAILABLE: 503,
}


/**
 * Serves a server memory's sync to devices: `POST <base>/pull` and `POST <base>/push`, each
 * with the device's token as `Authorization: Bearer <token>`. A standard `Request` in, a
 * `Response` out, so it mounts in any server that speaks the Fetch API (`serveSync` is one).
 *
 * @example
 * const handle = createSyncHandler(server)
 * const response = await handle(request) // a Fetch-API Request, e.g. from a route handler
 */
export function createSyncHandler(memory: SyncServing, options: SyncHandlerOptions = {}): (request: Request) => Promise<Response> {
  const maxBytes = options.maxBytes ?? 64 * 2 ** 20
  // A page syncs from its own origin: the browser asks first (a preflight) for these.
  const cors = {
    'access-control-allow-origin': options.allowOrigin ?? '*',
    'access-control-allow-methods': 'POST',
    'access-control-allow-headers': 'authorization, content-type',
    'access-control-max-age': '600',
  }
  const answer = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...cors } })
  const refusal = (code: ErrorCode, message: string) => answer(STATUS[code] ?? 500, { error: { code, message } })
  return async (request) => {
    const op = /\/(pull|push)$/.exec(new URL(request.url).pathname)?.[1] as 'pull' | 'push' | undefined
    if (!op) return refusal('NOT_FOUND', 'A sync server answers POST …/pull and POST …/push only.')
    if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: cors })
    if (request.method !== 'POST') return refusal('NOT_SUPPORTED', `${op} takes POST.`)
    const token = /^Bearer (\S+)$/.exec(request.headers.get('authorization') ?? '')?.[1]
    if (!token) return refusal('UNAUTHORIZED', 'A sync request needs "Authorization: Bearer <token>".')
    const length = Number(request.headers.get('content-length') ?? 0)
    if (length > maxBytes) return refusal('INVALID_INPUT', `The request is over ${maxBytes} bytes.`)
    let body: never
    try {
      const text = await request.text()
      if (text.length > maxBytes) return refusal('INVALID_INPUT', `The request is over ${maxBytes} bytes.`)
      body = JSON.parse(text) as never
    } catch {
      return refusal('INVALID_INPUT', 'The request body is not JSON.')
    }
    try {
      return answer(200, await memory.syncServer[op](token, body))
    } catch (error) {
      if (error instanceof MemoryError) return refusal(error.code, error.message)
      return refusal('INTERNAL', 'The sync server failed.')
    }
  }
}
