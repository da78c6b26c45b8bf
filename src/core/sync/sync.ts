import type { EngineContext } from '../kernel/engine-context.ts'
import type { Queryable } from '../kernel/db.ts'
import { MemoryError } from '../kernel/errors.ts'
import { sha256Hex } from '../kernel/hash.ts'
import { newId } from '../kernel/ids.ts'
import { identifier } from '../kernel/scope.ts'
import { iso } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { type Catalog, readCatalog } from '../portable/portable.ts'
import type { RedactionCount } from '../privacy/redact.ts'
import { cutNow } from '../retrieval/changes.ts'
import { type ApplyHooks, applyRows } from './apply.ts'
import { MAX_PAGE_ROWS, postSync, type SharedVault, sharedVault, type SyncRemote, syncRemote } from './client.ts'
import {
  readVaultRecord,
  toVaultRecord,
  type VaultInput,
  vaultLocked,
  type VaultRecord,
  vaultRecordColumns,
  type VaultRow,
} from '../privacy/vault.ts'

export interface SyncHooks extends ApplyHooks {
  /** Makes this memory's vault from another's record, which `key` opens, and seals what is plain. */
  joinVault: (record: VaultRecord, key: VaultInput) => Promise<void>
}
import { countRows, pageEnd, selectRows, type SyncRows, type SyncTable } from './rows.ts'

export type { SyncRemote } from './client.ts'

/** What `sync` exchanged: rows sent and rows taken, by table. */
export interface SyncReport {
  url: string
  tenantId: string
  /** Rows this device sent, by table. */
  pushed: Partial<Record<SyncTable, number>>
  /** Rows this device added or changed from the server, by table. */
  pulled: Partial<Record<SyncTable, number>>
  /** Secrets replaced in what the server sent, by type. */
  redactions: RedactionCount[]
  /** The server's time the next sync pulls from. */
  until: string
}

export interface SyncDevice {
  deviceId: string
  name: string
  tenantId: string
  createdAt: string
  revokedAt: string | null
  lastSyncAt: string | null
}

/** A pull as the server answers it. */
export interface PullAnswer {
  schemaVersion: number
  tenantId: string
  until: string
  /** The answer stopped at its page's end: ask again from `until`. */
  more: boolean
  /** The tenant's vault, whose key every device of the tenant must hold. */
  vault: SharedVault | null
  rows: SyncRows
}

type Counts = Partial<Record<SyncTable, number>>

function addCounts(into: Counts, more: Counts): void {
  for (const [t, n] of Object.entries(more) as [SyncTable, number][]) into[t] = (into[t] ?? 0) + n
}

const DEFAULT_PAGE_ROWS = 2000

const deviceInput = z.object({ name: identifier, tenantId: identifier.optional() }).strict()
const token = z.string().min(1, 'must not be empty').max(200)
const pullRequest = z
  .object({
    schemaVersion: z.number().int(),
    since: z.iso.datetime({ offset: true }).nullable(),
    limit: z.number().int().min(1).max(MAX_PAGE_ROWS).default(DEFAULT_PAGE_ROWS),
  })
  .strict()
const pushRequest = z
  .object({
    schemaVersion: z.number().int(),
    pulledUntil: z.iso.datetime({ offset: true }).nullable(),
    vault: sharedVault.nullable().default(null),
    rows: z.record(z.string(), z.array(z.record(z.string(), z.unknown()))),
  })
  .strict()

interface DeviceRow {
  id: string
  name: string
  tenant_id: string
  created_at: Date
  revoked_at: Date | null
  last_sync_at: Date | null
}

const toDevice = (r: DeviceRow): SyncDevice => ({
  deviceId: r.id,
  name: r.name,
  tenantId: r.tenant_id,
  createdAt: iso(r.created_at),
  revokedAt: r.revoked_at ? iso(r.revoked_at) : null,
  lastSyncAt: r.last_sync_at ? iso(r.last_sync_at) : null,
})

/** Tokens are 32 random bytes, base64url, after a prefix that says what they are. */
function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return `engram_sync_${btoa(String.fromCharCode(...bytes)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')}`
}

/**
 * Sync between devices and a server memory (docs/sync.md): `sync` on a device, `devices` and
 * `syncServer` on the server, which `createSyncHandler` serves over HTTP.
 */
export function createSync(ctx: EngineContext, schemaVersion: number, hooks: SyncHooks) {
  // The tables and columns a sync reads and writes: the schema is migrated before the engine
  // exists and does not change while it runs, so it is read once.
  let catalog: Catalog | undefined
  const tables = async (q: Queryable) => (catalog ??= await readCatalog(q))

  /** This device's vault as a push carries it (null without one); a locked one cannot sync. */
  async function ownVault(): Promise<SharedVault | null> {
    if (ctx.vault.status === 'none') return null
    if (ctx.vault.status === 'locked') throw vaultLocked('it cannot sync: open it with its key')
    const record = await readVaultRecord(ctx.db)
    return record && { ...record, keyId: await ctx.vault.keyId() }
  }

  /**
   * Device: the server's vault for the tenant and this memory's must hold one key. A memory
   * without a vault joins the server's with the key `given`; one with another key is refused.
   */
  async function agreeOnVault(theirs: SharedVault | null, given: VaultInput | undefined): Promise<void> {
    if (theirs === null && ctx.vault.status !== 'locked') return
    const mine = await ownVault()
    if (theirs === null || mine?.keyId === theirs.keyId) return
    if (mine) throw new MemoryError('CONFLICT', "This memory's vault has another key than the one the server holds for this tenant.")
    if (!given) {
      throw new MemoryError('VAULT_LOCKED', "The server keeps this tenant's memory under a vault: sync with its passphrase or key as `vault` to join it.")
    }
    const { keyId: _, ...record } = theirs
    await hooks.joinVault(record, given)
  }

  /** A server memory holds no vault of its own: it keeps each tenant's sealed rows as they come. */
  const noVault = () => {
    if (ctx.vault.status !== 'none') throw new MemoryError('NOT_SUPPORTED', 'A memory with a vault of its own cannot serve a sync.')
  }

  /** Server: the tenant's vault, or null. */
  async function tenantVault(db: Queryable, tenantId: string): Promise<SharedVault | null> {
    const { rows } = await db.query<VaultRow & { key_id: string }>(
      `SELECT key_id, kind, salt, iterations, wrapped FROM sync_vaults WHERE tenant_id = $1`,
      [tenantId],
    )
    return rows[0] ? { ...toVaultRecord(rows[0]), keyId: rows[0].key_id } : null
  }

  /** Server: a push's vault must be the tenant's; the first one pushed becomes the tenant's. */
  async function checkPushedVault(tx: Queryable, tenantId: string, pushed: SharedVault | null, at: Date): Promise<void> {
    const held = await tenantVault(tx, tenantId)
    if (held === null && pushed === null) return
    if (held && pushed && held.keyId === pushed.keyId) return
    if (held) {
      throw new MemoryError('CONFLICT', pushed ? "The device's vault has another key than this tenant's." : "This tenant's memory has a vault; the device has none.")
    }
    const p = pushed as SharedVault
    await tx.query(
      `INSERT INTO sync_vaults (tenant_id, key_id, kind, salt, iterations, wrapped, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [tenantId, p.keyId, ...vaultRecordColumns(p), at],
    )
  }

  /** The device a token names, or UNAUTHORIZED for a token unknown or revoked. */
  async function deviceOf(db: Queryable, given: unknown): Promise<DeviceRow> {
    const t = parseInput(token, given, 'sync token')
    const { rows } = await db.query<DeviceRow>(`SELECT * FROM sync_devices WHERE token_hash = $1`, [sha256Hex(t)])
    const device = rows[0]
    if (!device) throw new MemoryError('UNAUTHORIZED', 'This sync token is not known to the server.')
    if (device.revoked_at) throw new MemoryError('UNAUTHORIZED', `The device "${device.name}" was revoked; it cannot sync.`)
    return device
  }

  const sameSchema = (theirs: number) => {
    if (theirs !== schemaVersion) {
      throw new MemoryError('NOT_SUPPORTED', `The device's schema is version ${theirs} and the server's ${schemaVersion}: update Engram on both.`)
    }
  }

  /** Device: applies a pull and moves its cursor, in one transaction. */
  async function takePull(url: string, answer: PullAnswer, pushedUntil: Date | null) {
    sameSchema(answer.schemaVersion)
    return ctx.db.transaction(async (tx) => {
      const side = { kind: 'device' as const, pushedUntil, at: new Date(answer.until) }
      const sealed = answer.vault !== null
      const applied = await applyRows(tx, await tables(tx), answer.rows, { side, tenantId: answer.tenantId, sealed }, hooks)
      await tx.query(
        `INSERT INTO sync_remotes (url, tenant_id, pulled_until) VALUES ($1, $2, $3)
         ON CONFLICT (url) DO UPDATE SET tenant_id = excluded.tenant_id, pulled_until = excluded.pulled_until`,
        [url, answer.tenantId, new Date(answer.until)],
      )
      return applied
    })
  }

  return {
    /**
     * Exchanges changes with a server memory: takes what other devices wrote since the last
     * sync, sends what this device wrote, and takes what changed meanwhile. Conversations,
     * curated memories, policy entries, their edges and forgets travel; the merge rules are in
     * docs/sync.md. A sync cut off at any point and run again gives the same memory.
     *
     * @example
     * const report = await memory.sync({ url: 'https://memory.example.com/sync', token })
     */
    async sync(remote: SyncRemote): Promise<SyncReport> {
      const r = parseInput(syncRemote, remote, 'sync remote')
      const limit = r.pageRows ?? DEFAULT_PAGE_ROWS
      const { rows: state } = await ctx.db.query<{ pulled_until: Date | null; pushed_until: Date | null }>(
        `SELECT pulled_until, pushed_until FROM sync_remotes WHERE url = $1`,
        [r.url],
      )
      const report: SyncReport = { url: r.url, tenantId: '', pushed: {}, pulled: {}, redactions: [], until: '' }
      /** Pulls page by page from `since`; each page is stored with its cursor. */
      const pull = async (since: string | null, pushedUntil: Date | null): Promise<string> => {
        for (let from = since; ; ) {
          const answer = (await postSync(r, 'pull', { schemaVersion, since: from, limit })) as PullAnswer
          await agreeOnVault(answer.vault, r.vault)
          const applied = await takePull(r.url, answer, pushedUntil)
          addCounts(report.pulled, applied.changed)
          report.redactions.push(...applied.redactions)
          report.tenantId = answer.tenantId
          if (!answer.more) return answer.until
          from = answer.until
        }
      }
      let pushedUntil = state[0]?.pushed_until ?? null
      const pulledUntil = await pull(state[0]?.pulled_until ? iso(state[0].pulled_until) : null, pushedUntil)
      // Pushes page by page; each page moves the cursor once the server has it.
      const until = cutNow(ctx)
      for (let more = true; more; ) {
        const page = await ctx.db.transaction(async (tx) => {
          const w = { since: pushedUntil, until, tenantId: report.tenantId, server: false }
          const end = await pageEnd(tx, w, limit)
          return { ...end, rows: await selectRows(tx, await tables(tx), { ...w, until: end.until }) }
        })
        const counts = countRows(page.rows)
        if (Object.keys(counts).length > 0) {
          await postSync(r, 'push', { schemaVersion, pulledUntil, vault: await ownVault(), rows: page.rows })
        }
        addCounts(report.pushed, counts)
        await ctx.db.query(`UPDATE sync_remotes SET pushed_until = $2 WHERE url = $1`, [r.url, page.until])
        pushedUntil = page.until
        more = page.more
      }
      report.until = await pull(pulledUntil, until)
      return report
    },

    /** On a server memory: the devices that may sync with it, each with its own token. */
    devices: {
      /**
       * Lets a new device sync the tenant `tenantId` (default `default`). The token is shown
       * once: only its hash is stored.
       *
       * @example
       * const { token } = await server.devices.add({ name: 'ann-laptop' })
       */
      async add(input: { name: string; tenantId?: string }): Promise<SyncDevice & { token: string }> {
        const d = parseInput(deviceInput, input, 'device')
        const secret = newToken()
        const { rows } = await ctx.db.query<DeviceRow>(
          `INSERT INTO sync_devices (id, name, tenant_id, token_hash, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING *`,
          [newId('device'), d.name, d.tenantId ?? 'default', sha256Hex(secret), ctx.now()],
        )
        return { ...toDevice(rows[0] as DeviceRow), token: secret }
      },
      /** Every device, revoked ones included, oldest first. */
      async list(): Promise<SyncDevice[]> {
        const { rows } = await ctx.db.query<DeviceRow>(`SELECT * FROM sync_devices ORDER BY created_at, id`)
        return rows.map(toDevice)
      },
      /** Refuses the device's token from now on; what it synced stays. */
      async revoke(deviceId: string): Promise<SyncDevice> {
        const id = parseInput(identifier, deviceId, 'device id')
        const { rows } = await ctx.db.query<DeviceRow>(
          `UPDATE sync_devices SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING *`,
          [id, ctx.now()],
        )
        if (!rows[0]) throw new MemoryError('NOT_FOUND', `No device ${id}`)
        return toDevice(rows[0])
      },
    },

    /** On a server memory: the two requests a device makes, as `createSyncHandler` passes them. */
    syncServer: {
      /** What changed for the token's tenant after `since`, up to now. */
      async pull(given: string, request: { schemaVersion: number; since: string | null; limit?: number }): Promise<PullAnswer> {
        noVault()
        const device = await deviceOf(ctx.db, given)
        const q = parseInput(pullRequest, request, 'pull request')
        sameSchema(q.schemaVersion)
        const now = cutNow(ctx)
        return ctx.db.transaction(async (tx) => {
          const w = { since: q.since === null ? null : new Date(q.since), until: now, tenantId: device.tenant_id, server: true }
          const { until, more } = await pageEnd(tx, w, q.limit)
          const rows = await selectRows(tx, await tables(tx), { ...w, until })
          await tx.query(`UPDATE sync_devices SET last_sync_at = $2 WHERE id = $1`, [device.id, now])
          const vault = await tenantVault(tx, device.tenant_id)
          return { schemaVersion, tenantId: device.tenant_id, until: iso(until), more, vault, rows }
        })
      },
      /** Applies what a device wrote, by the merge rules, in one transaction. */
      async push(
        given: string,
        request: { schemaVersion: number; pulledUntil: string | null; vault?: SharedVault | null; rows: SyncRows },
      ): Promise<{ changed: Partial<Record<SyncTable, number>> }> {
        noVault()
        const device = await deviceOf(ctx.db, given)
        const q = parseInput(pushRequest, request, 'push request')
        sameSchema(q.schemaVersion)
        // What the device had taken when it chose these rows: forgets that came later win over them.
        const pulledUntil = q.pulledUntil === null ? null : new Date(q.pulledUntil)
        const side = { kind: 'server' as const, deviceId: device.id, at: ctx.now(), pulledUntil }
        const applied = await ctx.db.transaction(async (tx) => {
          await checkPushedVault(tx, device.tenant_id, q.vault, side.at)
          const o = { side, tenantId: device.tenant_id, sealed: q.vault !== null }
          return applyRows(tx, await tables(tx), q.rows, o, hooks)
        })
        return { changed: applied.changed }
      },
    },
  }
}
