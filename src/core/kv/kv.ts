import type { EngineContext } from '../kernel/engine-context.ts'
import { identifier } from '../kernel/scope.ts'
import { newId } from '../kernel/ids.ts'
import { redactUnknown } from '../privacy/redact.ts'
import { jsonValue } from '../kernel/json.ts'
import { MAX_REVISION } from '../kernel/limits.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { timeDate } from '../kernel/time.ts'
import { storedName } from '../graph/edges.ts'

/** One revision of a policy entry (a decision, constraint or procedure). */
export interface KvEntry {
  scope: string
  namespace: string
  key: string
  rev: number
  payload: unknown
  deleted: boolean
  runId: string | null
  taskId: string | null
  createdAt: Date
}

const name = storedName(500)
const writeOptions = z.strictObject({
  tenantId: identifier.default('default'),
  runId: identifier.optional(),
  taskId: identifier.optional(),
})
export type KvWriteOptions = z.input<typeof writeOptions>

/** `history`'s options, as a snapshot's `kv.history` takes them too. */
export const kvHistoryOptions = z.strictObject({ tenantId: identifier.default('default') })

/** The run and task a read belongs to, for its telemetry event. */
const readProvenance = { runId: identifier.optional(), taskId: identifier.optional() }

const getOptions = z.strictObject({
  tenantId: identifier.default('default'),
  ...readProvenance,
  /** A time (a Date or an ISO string), or a revision number of this key. */
  asOf: z
    .union([
      z.number().int().min(1).max(MAX_REVISION, `a number is a revision (1–${MAX_REVISION}); pass a Date for a time`),
      timeDate,
    ])
    .optional(),
})
export type KvGetOptions = z.input<typeof getOptions>

const listOptions = z.strictObject({
  tenantId: identifier.default('default'),
  ...readProvenance,
  /** A time, as a Date or an ISO string (a number would read as a revision in `get`, so none is taken here). */
  asOf: timeDate.optional(),
})
export type KvListOptions = z.input<typeof listOptions>


export interface KvRow {
  id: string
  scope: string
  namespace: string
  key: string
  rev: number
  payload: unknown
  deleted: boolean
  run_id: string | null
  task_id: string | null
  created_at: Date
}

export function toEntry(r: KvRow): KvEntry {
  return {
    scope: r.scope,
    namespace: r.namespace,
    key: r.key,
    rev: r.rev,
    payload: r.payload,
    deleted: r.deleted,
    runId: r.run_id,
    taskId: r.task_id,
    createdAt: r.created_at,
  }
}

/**
 * Policy memory: decisions, constraints and procedures by scope / namespace / key. Every
 * put is a new revision and nothing is overwritten, so any earlier state can be read back.
 */
export function kvApi(ctx: EngineContext) {
  const { db, telemetry } = ctx

  async function append(
    scope: string,
    namespace: string,
    key: string,
    payload: unknown,
    options: KvWriteOptions,
    deleted: boolean,
  ): Promise<KvRow | undefined> {
    const at = ctx.now()
    const o = parseInput(writeOptions, options, 'kv options')
    const { rows } = await db.query<KvRow>(
      `WITH prev AS (
         SELECT rev, deleted FROM kv
         WHERE tenant_id = $2 AND scope = $3 AND namespace = $4 AND key = $5
         ORDER BY rev DESC LIMIT 1
       )
       INSERT INTO kv (id, tenant_id, scope, namespace, key, rev, payload, deleted, run_id, task_id, created_at)
       SELECT $1, $2, $3, $4, $5, coalesce((SELECT rev FROM prev), 0) + 1, $6::jsonb, $7, $8, $9, $10
       WHERE NOT $7 OR EXISTS (SELECT 1 FROM prev WHERE NOT prev.deleted)
       RETURNING *`,
      [
        newId('kv'),
        o.tenantId,
        scope,
        namespace,
        key,
        deleted ? null : JSON.stringify(payload),
        deleted,
        o.runId ?? null,
        o.taskId ?? null,
        at,
      ],
    )
    const row = rows[0]
    if (row) {
      telemetry.emit({
        op: deleted ? 'delete' : row.rev > 1 ? 'overwrite' : 'write',
        memoryId: row.id,
        entityType: 'kv',
        scope,
        runId: o.runId ?? null,
        taskId: o.taskId ?? null,
        at,
        detail: { namespace, key, rev: row.rev },
      })
    }
    return row
  }

  return {
    /**
     * Writes a new revision of an entry. Secrets in the payload's strings are replaced by
     * `[REDACTED:<type>]` before it is stored.
     *
     * @example
     * await memory.kv.put('repo:engram', 'constraints', 'no-network', { text: 'Never call the network' })
     * // → { rev: 1, … }
     */
    async put(
      scope: string,
      namespace: string,
      key: string,
      payload: unknown,
      options: KvWriteOptions = {},
    ): Promise<KvEntry> {
      const k = parseInput(
        z.tuple([name, name, name, jsonValue]),
        [scope, namespace, key, payload],
        'kv entry',
      )
      // Policy text is stored like any other: secrets in its strings are replaced first.
      const { value } = redactUnknown(k[3])
      return toEntry((await append(k[0], k[1], k[2], value, options, false)) as KvRow)
    },

    /**
     * The entry as it is now, or at `asOf` (a time or a revision number); null when it did
     * not exist or was deleted then.
     *
     * @example
     * const first = await memory.kv.get('repo:engram', 'constraints', 'no-network', { asOf: 1 })
     */
    async get(
      scope: string,
      namespace: string,
      key: string,
      options: KvGetOptions = {},
    ): Promise<KvEntry | null> {
      const k = parseInput(z.tuple([name, name, name]), [scope, namespace, key], 'kv key')
      const o = parseInput(getOptions, options, 'kv read options')
      const rev = typeof o.asOf === 'number' ? o.asOf : null
      const time = o.asOf instanceof Date ? o.asOf : null
      const { rows } = await db.query<KvRow>(
        `SELECT * FROM kv
         WHERE tenant_id = $1 AND scope = $2 AND namespace = $3 AND key = $4
           AND ($5::int IS NULL OR rev <= $5) AND ($6::timestamptz IS NULL OR created_at <= $6)
         ORDER BY rev DESC LIMIT 1`,
        [o.tenantId, k[0], k[1], k[2], rev, time],
      )
      const row = rows[0]
      telemetry.emit({
        op: 'read',
        memoryId: row?.id ?? null,
        entityType: 'kv',
        scope: k[0],
        runId: o.runId ?? null,
        taskId: o.taskId ?? null,
        detail: { namespace: k[1], key: k[2] },
      })
      return row && !row.deleted ? toEntry(row) : null
    },

    /**
     * Live entries of a namespace (as they are now, or at `asOf`), by key.
     *
     * @example
     * const rules = await memory.kv.list('repo:engram', 'constraints')
     */
    async list(scope: string, namespace: string, options: KvListOptions = {}): Promise<KvEntry[]> {
      const k = parseInput(z.tuple([name, name]), [scope, namespace], 'kv namespace')
      const o = parseInput(listOptions, options, 'kv list options')
      const { rows } = await db.query<KvRow>(
        `SELECT * FROM (
           SELECT DISTINCT ON (key) * FROM kv
           WHERE tenant_id = $1 AND scope = $2 AND namespace = $3 AND ($4::timestamptz IS NULL OR created_at <= $4)
           ORDER BY key, rev DESC
         ) latest
         WHERE NOT deleted
         ORDER BY key`,
        [o.tenantId, k[0], k[1], o.asOf ?? null],
      )
      telemetry.emit({
        op: 'query',
        memoryId: null,
        entityType: 'kv',
        scope: k[0],
        runId: o.runId ?? null,
        taskId: o.taskId ?? null,
        detail: { namespace: k[1], results: rows.length },
      })
      return rows.map(toEntry)
    },

    /**
     * The namespaces of a scope that hold a live entry (now, or at `asOf`), in order.
     *
     * @example
     * const namespaces = await memory.kv.namespaces('repo:engram') // ['constraints', 'decisions']
     */
    async namespaces(scope: string, options: KvListOptions = {}): Promise<string[]> {
      const k = parseInput(name, scope, 'kv scope')
      const o = parseInput(listOptions, options, 'kv namespaces options')
      const { rows } = await db.query<{ namespace: string }>(
        `SELECT namespace FROM (
           SELECT DISTINCT ON (namespace, key) namespace, deleted FROM kv
           WHERE tenant_id = $1 AND scope = $2 AND ($3::timestamptz IS NULL OR created_at <= $3)
           ORDER BY namespace, key, rev DESC
         ) latest
         WHERE NOT deleted
         GROUP BY namespace
         ORDER BY namespace`,
        [o.tenantId, k, o.asOf ?? null],
      )
      telemetry.emit({
        op: 'query',
        memoryId: null,
        entityType: 'kv',
        scope: k,
        runId: o.runId ?? null,
        taskId: o.taskId ?? null,
        detail: { results: rows.length },
      })
      return rows.map((r) => r.namespace)
    },

    /**
     * Every revision of an entry, oldest first, deletions included.
     *
     * @example
     * const revs = await memory.kv.history('repo:engram', 'constraints', 'no-network')
     */
    async history(
      scope: string,
      namespace: string,
      key: string,
      options: { tenantId?: string } = {},
    ): Promise<KvEntry[]> {
      const k = parseInput(z.tuple([name, name, name]), [scope, namespace, key], 'kv key')
      const o = parseInput(kvHistoryOptions, options, 'kv options')
      const { rows } = await db.query<KvRow>(
        `SELECT * FROM kv WHERE tenant_id = $1 AND scope = $2 AND namespace = $3 AND key = $4 ORDER BY rev`,
        [o.tenantId, k[0], k[1], k[2]],
      )
      return rows.map(toEntry)
    },

    /**
     * Deletes an entry by writing a tombstone revision; earlier revisions stay readable.
     *
     * @example
     * await memory.kv.delete('repo:engram', 'constraints', 'no-network')
     */
    async delete(
      scope: string,
      namespace: string,
      key: string,
      options: KvWriteOptions = {},
    ): Promise<{ deleted: boolean; rev: number | null }> {
      const k = parseInput(z.tuple([name, name, name]), [scope, namespace, key], 'kv key')
      const row = await append(k[0], k[1], k[2], null, options, true)
      return { deleted: row !== undefined, rev: row?.rev ?? null }
    },
  }
}

/** The read options' schemas, for readers of an exported file (snapshot.ts). */
export { getOptions as kvGetOptions, listOptions as kvListOptions, name as kvName }
