import type { Queryable, QueryOptions } from '../kernel/db.ts'
import { MemoryError } from '../kernel/errors.ts'
import { normalizeMemoryText } from '../kernel/hash.ts'
import type { JsonObject, JsonValue } from '../kernel/json.ts'
import { z } from '../kernel/validate.ts'
import type { ContentKeys, Vault, VaultInput, VaultStatus } from '../kernel/engine-context.ts'

export type { ContentKeys, Vault, VaultInput, VaultStatus }

/**
 * Encryption at rest for `high` sensitivity.
 *
 * A memory opened with a vault (`{ passphrase }` or `{ key }`) stores the text of its `high`
 * events, artifacts, tool-call edges and curated memories sealed with AES-256-GCM, and keeps no
 * derived text of them (no chunks, no vectors, no keyword terms). Reads open the sealed strings
 * again before they leave the engine.
 *
 * Keys: the memory's data key is 32 random bytes, made when a vault is first given and stored
 * wrapped (AES-GCM) under the vault key, in the `vault` table (never exported). A passphrase
 * becomes the vault key through PBKDF2-SHA-256 with a salt kept beside the wrapped key; a
 * `CryptoKey` (AES-GCM, encrypt and decrypt) is used as it is. From the data key, HKDF derives
 * the sealing key (AES-GCM) and a MAC key (HMAC-SHA-256).
 *
 * A sealed string is `SEALED_PREFIX` + base64(iv ‖ ciphertext ‖ tag). The iv is random, except
 * for what the task state groups by (`EVENT_CONTENT_KEYS.equal`: a task's id, name and title):
 * there it is the first 12 bytes of an HMAC of the text, so equal texts seal equally and the
 * database can still group them, learning which of those sealed strings are equal, nothing more.
 */
export const SEALED_PREFIX = '\uE000sealed1:'
/** `SEALED_PREFIX` as an SQL literal. */
export const SEALED_SQL = "U&'\\E000sealed1:'"
const SEALED_TOKEN = /\uE000sealed1:([A-Za-z0-9+/]+={0,2})/g
const PBKDF2_ITERATIONS = 600_000
const DATA_KEY_BYTES = 32


export const vaultInput = z.union([
  z.object({ passphrase: z.string().min(8, 'a vault passphrase has at least 8 characters') }).strict(),
  z
    .object({
      key: z.custom<CryptoKey>(
        (k) =>
          typeof CryptoKey === 'function' &&
          k instanceof CryptoKey &&
          k.algorithm.name === 'AES-GCM' &&
          k.usages.includes('encrypt') &&
          k.usages.includes('decrypt'),
        'the vault key must be an AES-GCM CryptoKey with the encrypt and decrypt usages',
      ),
    })
    .strict(),
])




/**
 * How a sealed event's content keys are sealed: names, states and ids the database reads stay
 * plain; what the task state groups by is sealed so that equal texts seal equally; every other
 * string under a random iv.
 */
export const EVENT_CONTENT_KEYS: ContentKeys = {
  plain: new Set(['tool', 'status', 'to', 'artifactId', 'truncated', 'supersedes', 'mediaType']),
  equal: new Set(['taskId', 'task', 'title']),
}

export function isSealed(value: unknown): boolean {
  return typeof value === 'string' && value.startsWith(SEALED_PREFIX)
}

/**
 * Refuses text that reads as sealed: a sealed value is told apart from plain text by its
 * prefix alone, so no plain text written may contain it (`INVALID_INPUT`).
 */
export function refuseSealedLookalike(value: unknown, field: string): void {
  const text = typeof value === 'string' ? value : JSON.stringify(value)
  if (text?.includes(SEALED_PREFIX)) {
    throw new MemoryError('INVALID_INPUT', `${field} contains "\\uE000sealed1:", which marks text sealed at rest; remove it.`, {
      details: { field },
    })
  }
}

/**
 * Whether a vault was made (`vault.setKey` on a memory without one) after a write read
 * `before` to prepare its rows: the write then seals them in its own transaction, which
 * runs after the one that made the vault and sealed what was stored.
 */
export function vaultMadeSince(before: Vault, current: Vault): boolean {
  return before.status === 'none' && current.status !== 'none'
}

export function vaultLocked(what: string): MemoryError {
  return new MemoryError(
    'VAULT_LOCKED',
    `This memory encrypts 'high' content and was opened without its vault key: ${what}. Open it with createMemory({ vault }).`,
  )
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

function toBase64(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text)
  const out = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i)
  return out
}

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('')
}

/** A memory without a vault: nothing is sealed, and nothing needs opening. */
const NO_VAULT: Vault = {
  status: 'none',
  seal: () => Promise.reject(new Error('vault: no vault')),
  sealJson: () => Promise.reject(new Error('vault: no vault')),
  open: (value) => Promise.resolve(value),
  mac: () => Promise.reject(new Error('vault: no vault')),
  rewrap: () => Promise.reject(new Error('vault: no vault')),
  keyId: () => Promise.reject(new Error('vault: no vault')),
}

const LOCKED: Vault = {
  ...NO_VAULT,
  status: 'locked',
  seal: () => Promise.reject(vaultLocked("'high' content cannot be written")),
  sealJson: () => Promise.reject(vaultLocked("'high' content cannot be written")),
  mac: () => Promise.reject(vaultLocked("'high' content cannot be written")),
  rewrap: () => Promise.reject(vaultLocked('its key cannot be changed')),
  keyId: () => Promise.reject(vaultLocked('its key is not known')),
}

export function noVault(): Vault {
  return NO_VAULT
}

async function sealingVault(dataKey: Uint8Array<ArrayBuffer>): Promise<Vault> {
  const material = await crypto.subtle.importKey('raw', dataKey, 'HKDF', false, ['deriveKey'])
  const derive = (info: string, algorithm: AesKeyGenParams | HmacKeyGenParams, usages: KeyUsage[]) =>
    crypto.subtle.deriveKey(
      { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: encoder.encode(info) },
      material,
      algorithm,
      false,
      usages,
    )
  const aes = await derive('engram vault: seal', { name: 'AES-GCM', length: 256 }, ['encrypt', 'decrypt'])
  const hmac = await derive('engram vault: mac', { name: 'HMAC', hash: 'SHA-256', length: 256 }, ['sign'])
  const sign = async (domain: string, text: string) =>
    new Uint8Array(await crypto.subtle.sign('HMAC', hmac, encoder.encode(`${domain}\u0000${text}`)))

  const cache = new Map<string, string>()
  async function openToken(token: string): Promise<string> {
    const known = cache.get(token)
    if (known !== undefined) return known
    let text: string
    try {
      const bytes = fromBase64(token)
      const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, 12) }, aes, bytes.subarray(12))
      text = decoder.decode(plain)
    } catch {
      // Sealed under another vault, or altered: left as it is stored.
      return SEALED_PREFIX + token
    }
    if (cache.size > 10_000) cache.clear()
    cache.set(token, text)
    return text
  }
  /** The sealed tokens in `value`'s strings (a walk without promises). */
  function collectTokens(value: unknown, into: Set<string>): void {
    if (typeof value === 'string') {
      if (value.includes(SEALED_PREFIX)) for (const m of value.matchAll(SEALED_TOKEN)) into.add(m[1] as string)
    } else if (Array.isArray(value)) {
      for (const v of value) collectTokens(v, into)
    } else if (value !== null && typeof value === 'object' && isPlainObject(value)) {
      for (const v of Object.values(value)) collectTokens(v, into)
    }
  }
  /** `value` with every sealed token replaced by its text; parts without one are kept as they are. */
  function replaceTokens(value: unknown, opened: ReadonlyMap<string, string>): unknown {
    if (typeof value === 'string') {
      return value.includes(SEALED_PREFIX) ? value.replace(SEALED_TOKEN, (_, t: string) => opened.get(t) ?? SEALED_PREFIX + t) : value
    }
    if (Array.isArray(value)) return value.map((v) => replaceTokens(v, opened))
    if (value !== null && typeof value === 'object' && isPlainObject(value)) {
      // From entries: a key named __proto__ stays a key.
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceTokens(v, opened)]))
    }
    return value
  }
  /** Finds the sealed tokens first, opens them all at once, then rebuilds: nothing to open, nothing copied. */
  async function openDeep(value: unknown): Promise<unknown> {
    const tokens = new Set<string>()
    collectTokens(value, tokens)
    if (tokens.size === 0) return value
    const list = [...tokens]
    const texts = await Promise.all(list.map((t) => openToken(t)))
    return replaceTokens(value, new Map(list.map((t, i) => [t, texts[i] as string])))
  }
  // A text sealed with `equal` again (a task's title restated) is taken from here, not from
  // two more crypto calls.
  const equalCache = new Map<string, string>()
  async function seal(text: string, equal = false): Promise<string> {
    if (text.startsWith(SEALED_PREFIX)) return text
    if (!equal) return sealUnder(crypto.getRandomValues(new Uint8Array(12)), text)
    const short = text.length <= 1024
    const known = short ? equalCache.get(text) : undefined
    if (known !== undefined) return known
    const sealed = await sealUnder((await sign('iv', text)).subarray(0, 12), text)
    if (short) {
      if (equalCache.size >= 2_000) equalCache.clear()
      equalCache.set(text, sealed)
    }
    return sealed
  }
  async function sealUnder(iv: Uint8Array<ArrayBuffer>, text: string): Promise<string> {
    const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, aes, encoder.encode(text)))
    const out = new Uint8Array(iv.length + sealed.length)
    out.set(iv)
    out.set(sealed, iv.length)
    return SEALED_PREFIX + toBase64(out)
  }
  async function sealDeep(value: JsonValue, equal: boolean): Promise<JsonValue> {
    if (typeof value === 'string') return seal(value, equal)
    if (Array.isArray(value)) return Promise.all(value.map((v) => sealDeep(v, equal)))
    if (value !== null && typeof value === 'object') {
      const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await sealDeep(v, equal)] as const))
      return Object.fromEntries<JsonValue>(entries)
    }
    return value
  }
  return {
    status: 'open',
    seal,
    async sealJson<T extends JsonValue>(value: T, keys: ContentKeys = {}): Promise<T> {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return (await sealDeep(value, false)) as T
      const entries = await Promise.all(
        Object.entries(value).map(
          async ([k, v]) => [k, keys.plain?.has(k) ? v : await sealDeep(v, keys.equal?.has(k) ?? false)] as const,
        ),
      )
      return Object.fromEntries(entries) as T
    },
    open: async <T>(value: T) => (await openDeep(value)) as T,
    mac: async (text) => hex((await sign('hash', text)).buffer),
    rewrap: (db, input) => storeDataKey(db, dataKey, input),
    keyId: async () => hex((await sign('key id', '')).buffer),
  }
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

async function keyFromPassphrase(passphrase: string, salt: Uint8Array<ArrayBuffer>, iterations: number) {
  const material = await crypto.subtle.importKey('raw', encoder.encode(passphrase), 'PBKDF2', false, ['deriveKey'])
  return crypto.subtle.deriveKey(
    { name: 'PBKDF2', hash: 'SHA-256', salt, iterations },
    material,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  )
}

export interface VaultRow {
  kind: 'passphrase' | 'key'
  salt: Uint8Array | null
  iterations: number | null
  wrapped: Uint8Array
}

/**
 * The memory's vault: made with a new data key when `input` is given to a memory without one,
 * opened when the key fits (`WRONG_PASSPHRASE` when it does not), locked when the memory has
 * one and no key is given.
 */
export async function openVault(db: Queryable, input: VaultInput | undefined): Promise<Vault> {
  const { rows } = await db.query<VaultRow>(`SELECT kind, salt, iterations, wrapped FROM vault`)
  const row = rows[0]
  if (!input) return row ? LOCKED : NO_VAULT
  if (!row) {
    const dataKey = crypto.getRandomValues(new Uint8Array(DATA_KEY_BYTES))
    await storeDataKey(db, dataKey, input)
    return sealingVault(dataKey)
  }
  const wanted = row.kind === 'passphrase' ? 'a passphrase' : 'a CryptoKey'
  if (('passphrase' in input ? 'passphrase' : 'key') !== row.kind) {
    throw new MemoryError('WRONG_PASSPHRASE', `This memory's vault was made with ${wanted}; open it with the same.`)
  }
  const wrappingKey =
    'passphrase' in input
      ? await keyFromPassphrase(input.passphrase, new Uint8Array(row.salt ?? []), row.iterations ?? PBKDF2_ITERATIONS)
      : input.key
  const wrapped = new Uint8Array(row.wrapped)
  let dataKey: Uint8Array<ArrayBuffer>
  try {
    dataKey = new Uint8Array(
      await crypto.subtle.decrypt({ name: 'AES-GCM', iv: wrapped.subarray(0, 12) }, wrappingKey, wrapped.subarray(12)),
    )
  } catch (cause) {
    throw new MemoryError('WRONG_PASSPHRASE', `Wrong vault ${row.kind === 'passphrase' ? 'passphrase' : 'key'} for this memory.`, {
      cause,
    })
  }
  return sealingVault(dataKey)
}

/** A vault's stored row as a sync carries it: the data key wrapped, never the key. */
export interface VaultRecord {
  kind: 'passphrase' | 'key'
  /** Base64, for a passphrase. */
  salt: string | null
  iterations: number | null
  /** Base64: iv, then the data key sealed under the passphrase's key. */
  wrapped: string
}

export const vaultRecord = z
  .object({
    kind: z.enum(['passphrase', 'key']),
    salt: z.base64().max(64).nullable(),
    iterations: z.number().int().min(1).max(10_000_000).nullable(),
    wrapped: z.base64().max(256),
  })
  .strict()

/** A stored vault row (this memory's, or a tenant's on a sync server) as a record. */
export function toVaultRecord(row: VaultRow): VaultRecord {
  return {
    kind: row.kind,
    salt: row.salt ? toBase64(new Uint8Array(row.salt)) : null,
    iterations: row.iterations,
    wrapped: toBase64(new Uint8Array(row.wrapped)),
  }
}

/** A record as the columns `kind, salt, iterations, wrapped` store it. */
export function vaultRecordColumns(record: VaultRecord): [string, Uint8Array | null, number | null, Uint8Array] {
  return [record.kind, record.salt === null ? null : fromBase64(record.salt), record.iterations, fromBase64(record.wrapped)]
}

/** This memory's vault row as a record, or null without a vault. */
export async function readVaultRecord(db: Queryable): Promise<VaultRecord | null> {
  const { rows } = await db.query<VaultRow>(`SELECT kind, salt, iterations, wrapped FROM vault`)
  return rows[0] ? toVaultRecord(rows[0]) : null
}

/** Stores another memory's vault row as this memory's own (it has none): its key opens it. */
export async function storeVaultRecord(db: Queryable, record: VaultRecord): Promise<void> {
  await db.query(`INSERT INTO vault (kind, salt, iterations, wrapped, created_at) VALUES ($1, $2, $3, $4, now())`, vaultRecordColumns(record))
}

/** Stores the data key wrapped under `input`, replacing the wrapping it had. */
async function storeDataKey(db: Queryable, dataKey: Uint8Array<ArrayBuffer>, input: VaultInput): Promise<void> {
  const salt = 'passphrase' in input ? crypto.getRandomValues(new Uint8Array(16)) : null
  const wrappingKey = salt && 'passphrase' in input ? await keyFromPassphrase(input.passphrase, salt, PBKDF2_ITERATIONS) : (input as { key: CryptoKey }).key
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, wrappingKey, dataKey))
  const wrapped = new Uint8Array(iv.length + sealed.length)
  wrapped.set(iv)
  wrapped.set(sealed, iv.length)
  await db.query(
    `INSERT INTO vault (kind, salt, iterations, wrapped, created_at) VALUES ($1, $2, $3, $4, now())
     ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, salt = EXCLUDED.salt, iterations = EXCLUDED.iterations,
                                    wrapped = EXCLUDED.wrapped`,
    ['passphrase' in input ? 'passphrase' : 'key', salt, salt ? PBKDF2_ITERATIONS : null, wrapped],
  )
}

/**
 * Reads through `q` with every sealed string of the rows opened: for reads that format or cut
 * text after the query (context sections). `q` itself when nothing is sealed to be read.
 */
export function openingReads(vault: Vault, q: Queryable): Queryable {
  if (vault.status !== 'open') return q
  return {
    exec: (sql) => q.exec(sql),
    async query<T>(sql: string, params?: unknown[], options?: QueryOptions) {
      const result = await q.query<T>(sql, params, options)
      return { ...result, rows: await vault.open(result.rows) }
    },
  }
}

/**
 * Seals what is stored plain though it should not be, in the caller's transaction: every
 * `high` event not yet sealed (its content, artifacts and tool-call edges; its chunks are
 * deleted), and every `high` memory whose content is plain (content, hash, history; its vector
 * is dropped). Runs when a vault is first given to a memory, and after an import or an
 * archive restore brings rows in. Returns how many events and memories it sealed.
 */
export async function sealStored(
  tx: Queryable,
  vault: Vault,
): Promise<{ events: number; memories: number }> {
  if (vault.status === 'none') return { events: 0, memories: 0 }
  const { rows: events } = await tx.query<{ id: string; content: JsonObject; meta: JsonObject }>(
    `SELECT id, content, meta FROM events WHERE sensitivity = 'high' AND NOT meta ? 'sealed' ORDER BY id`,
  )
  const { rows: memories } = await tx.query<{ id: string; content: string }>(
    `SELECT id, content FROM memories WHERE sensitivity = 'high' AND NOT starts_with(content, ${SEALED_SQL}) ORDER BY id`,
  )
  if (events.length === 0 && memories.length === 0) return { events: 0, memories: 0 }
  if (vault.status === 'locked') throw vaultLocked(`${events.length + memories.length} 'high' rows would be stored plain`)
  await tx.exec(`SET LOCAL engram.forgetting = 'on'`)
  try {
    if (events.length > 0) {
      const ids = events.map((e) => e.id)
      const contents = await Promise.all(events.map((e) => vault.sealJson(e.content, EVENT_CONTENT_KEYS)))
      await tx.query(
        `UPDATE events e SET content = x.content::jsonb, meta = e.meta || '{"sealed":true}'
           FROM unnest($1::text[], $2::text[]) AS x(id, content) WHERE e.id = x.id`,
        [ids, contents.map((c) => JSON.stringify(c))],
      )
      await tx.query(`DELETE FROM chunks WHERE source_id = ANY($1)`, [ids])
      const { rows: artifacts } = await tx.query<{ id: string; content: string }>(
        `SELECT id, content FROM artifacts WHERE event_id = ANY($1) AND NOT starts_with(content, $2)`,
        [ids, SEALED_PREFIX],
      )
      if (artifacts.length > 0) {
        await tx.query(
          `UPDATE artifacts a SET content = x.content FROM unnest($1::text[], $2::text[]) AS x(id, content) WHERE a.id = x.id`,
          [artifacts.map((a) => a.id), await Promise.all(artifacts.map((a) => vault.seal(a.content)))],
        )
      }
      const { rows: edges } = await tx.query<{ id: string; props: JsonObject }>(
        `SELECT id, props FROM edges WHERE (src = ANY($1) OR dst = ANY($1)) AND props ? 'args'`,
        [ids],
      )
      if (edges.length > 0) {
        const props = await Promise.all(edges.map((e) => sealEdgeProps(vault, e.props)))
        await tx.query(
          `UPDATE edges g SET props = x.props::jsonb FROM unnest($1::text[], $2::text[]) AS x(id, props) WHERE g.id = x.id`,
          [edges.map((e) => e.id), props.map((p) => JSON.stringify(p))],
        )
      }
    }
    if (memories.length > 0) {
      const ids = memories.map((m) => m.id)
      const sealed = await Promise.all(memories.map((m) => vault.seal(m.content)))
      const hashes = await Promise.all(memories.map((m) => vault.mac(normalizeMemoryText(m.content))))
      await tx.query(
        `UPDATE memories m SET content = x.content, hash = x.hash, vector = NULL, embed_model = NULL
           FROM unnest($1::text[], $2::text[], $3::text[]) AS x(id, content, hash) WHERE m.id = x.id`,
        [ids, sealed, hashes],
      )
      await sealHistory(tx, vault, ids)
    }
  } finally {
    await tx.exec(`SET LOCAL engram.forgetting = 'off'`)
  }
  return { events: events.length, memories: memories.length }
}

/** The `args` of a tool-call edge of a sealed turn, sealed; its other properties stay. */
async function sealEdgeProps(vault: Vault, props: JsonObject): Promise<JsonObject> {
  return props.args === undefined ? props : { ...props, args: await vault.sealJson(props.args) }
}

/** Seals the plain old and new values in the history of `memoryIds`. */
async function sealHistory(tx: Queryable, vault: Vault, memoryIds: readonly string[]): Promise<void> {
  const { rows } = await tx.query<{ id: string; old_value: string | null; new_value: string | null }>(
    `SELECT id, old_value, new_value FROM memory_history
      WHERE memory_id = ANY($1)
        AND (NOT starts_with(coalesce(old_value, $2), $2) OR NOT starts_with(coalesce(new_value, $2), $2))`,
    [memoryIds, SEALED_PREFIX],
  )
  if (rows.length === 0) return
  const seal = (v: string | null) => (v === null ? Promise.resolve(null) : vault.seal(v))
  await tx.query(
    `UPDATE memory_history h SET old_value = x.old_value, new_value = x.new_value
       FROM unnest($1::text[], $2::text[], $3::text[]) AS x(id, old_value, new_value) WHERE h.id = x.id`,
    [rows.map((r) => r.id), await Promise.all(rows.map((r) => seal(r.old_value))), await Promise.all(rows.map((r) => seal(r.new_value)))],
  )
}


/** `call` with what it returns opened by the vault, as the vault is when the call ends. */
export function openedCall(call: (...args: unknown[]) => unknown, vault: () => Vault) {
  return (...args: unknown[]): unknown => {
    const result = call(...args)
    if (!(result instanceof Promise)) return result
    // The vault as the call ends: a key set while the call waited has sealed what it read.
    return (result as Promise<unknown>).then((r: unknown) => {
      const v = vault()
      return v.status === 'open' ? v.open(r) : r
    })
  }
}
