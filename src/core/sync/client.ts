import { isErrorCode, MemoryError } from '../kernel/errors.ts'
import { identifier } from '../kernel/scope.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { type VaultInput, vaultInput, vaultRecord } from '../privacy/vault.ts'

/** A tenant's vault as the server holds it: the wrapped key, and the keyed id of the key. */
export const sharedVault = vaultRecord.extend({ keyId: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 hex digits') })
export type SharedVault = z.output<typeof sharedVault>

/** The most changed rows one request may ask for. */
export const MAX_PAGE_ROWS = 20_000

type Fetch = (input: string, init: { method: string; headers: Record<string, string>; body: string }) => Promise<Response>

/** Where a device syncs: the server's sync address, the device's token, and optionally how to reach it. */
export interface SyncRemote {
  /** The address `createSyncHandler` answers at, e.g. `https://memory.example.com/sync`. */
  url: string
  /** The token `devices.add` gave this device on the server. */
  token: string
  /** Replaces the global `fetch` (Node only: a function does not cross to the worker). */
  fetch?: Fetch
  /** About how many changed rows one request carries (default 2,000): a larger sync takes several. */
  pageRows?: number
  /**
   * The passphrase or key of the vault the server holds for this tenant: a memory without a
   * vault joins it on its first sync (its `high` rows are sealed under that key).
   */
  vault?: VaultInput
}

export const syncRemote = z
  .object({
    url: z
      .string()
      .max(2000)
      .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'must be an http or https address'),
    token: z.string().min(1, 'must not be empty').max(200),
    fetch: z.custom<Fetch>((f) => typeof f === 'function', 'must be a function').optional(),
    pageRows: z.number().int().min(1).max(MAX_PAGE_ROWS).optional(),
    vault: vaultInput.optional(),
  })
  .strict()

const pullAnswer = z
  .object({
    schemaVersion: z.number().int(),
    tenantId: identifier,
    until: z.iso.datetime({ offset: true }),
    more: z.boolean(),
    vault: sharedVault.nullable(),
    rows: z.record(z.string(), z.array(z.record(z.string(), z.unknown()))),
  })
  .strict()

/** Sends one request to the sync server; its refusal comes back as the server's error. */
export async function postSync(remote: z.output<typeof syncRemote>, op: 'pull' | 'push', body: unknown): Promise<unknown> {
  const base = remote.url.endsWith('/') ? remote.url : `${remote.url}/`
  const where = new URL(base).origin
  const send: Fetch = remote.fetch ?? ((input, init) => fetch(input, init))
  let response: Response
  try {
    response = await send(new URL(op, base).href, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${remote.token}` },
      body: JSON.stringify(body),
    })
  } catch (cause) {
    throw new MemoryError('STORAGE_UNAVAILABLE', `The sync server at ${where} cannot be reached.`, { cause })
  }
  let answer: unknown
  try {
    answer = await response.json()
  } catch (cause) {
    throw new MemoryError('STORAGE_UNAVAILABLE', `The sync server at ${where} answered ${response.status} without JSON.`, { cause })
  }
  if (!response.ok) {
    const e = (answer as { error?: { code?: unknown; message?: unknown } } | null)?.error
    const code = isErrorCode(e?.code) ? e.code : 'STORAGE_UNAVAILABLE'
    throw new MemoryError(code, `The sync server at ${where} refused the ${op}: ${typeof e?.message === 'string' ? e.message : response.status}`)
  }
  return op === 'pull' ? parseInput(pullAnswer, answer, 'sync server answer') : answer
}
