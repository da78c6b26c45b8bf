import type { Queryable } from '../kernel/db.ts'
import { type Catalog, exportedColumns, quoteIdent } from '../portable/portable.ts'

/**
 * The tables a sync carries, parents first: conversations, the documents they touched, the
 * entity graph and curated memories. Archives stay on the device that wrote them.
 */
export const SYNC_TABLES = [
  'relations',
  'events',
  'artifacts',
  'documents',
  'doc_versions',
  'memory_contexts',
  'nodes',
  'edges',
  'memories',
  'memory_history',
  'kv',
  'forget_log',
] as const
export type SyncTable = (typeof SYNC_TABLES)[number]

/** Rows by table, each as an export file writes it (JSON, times as text, no vectors). */
export type SyncRows = Partial<Record<SyncTable, Record<string, unknown>[]>>

export interface Window {
  /** Rows changed after this time (null: from the start). */
  since: Date | null
  until: Date
  tenantId: string
  /**
   * A server's pull: rows that arrived from devices in the window count as changed in it,
   * whatever their own time, and a policy key sends all its revisions, as the server numbers
   * them. A device pushes only what it dated in the window.
   */
  server: boolean
}

/** `column` in (since, until]: $1 and $2. */
const within = (column: string) => `(($1::timestamptz IS NULL OR ${column} > $1) AND ${column} <= $2)`

/** Rows of `table` that arrived from a device in (since, until]. */
const arrived = (table: string, alias = 't') =>
  `${alias}.id IN (SELECT row_id FROM sync_received WHERE tbl = '${table}'
     AND ($1::timestamptz IS NULL OR received_at > $1) AND received_at <= $2)`

/** Which rows of each table changed in the window; $3 is the tenant. */
function changedRows(server: boolean): Record<SyncTable, string> {
  const or = (table: string, alias = 't') => (server ? ` OR ${arrived(table, alias)}` : '')
  const events = `SELECT e.id FROM events e WHERE e.tenant_id = $3 AND (${within('e.created_at')}${or('events', 'e')})`
  const versions = (a: string) => `(${within(`${a}.created_at`)}${server ? ` OR ${arrived('doc_versions', a)}` : ''})`
  const kvKeys = `SELECT k.scope, k.namespace, k.key FROM kv k WHERE k.tenant_id = $3 AND (${within('k.created_at')}${or('kv', 'k')})`
  return {
    relations: 'true',
    events: `t.id IN (${events})`,
    artifacts: `t.event_id IN (${events})`,
    // A version goes with its document, which the other side may have forgotten meanwhile.
    documents: `t.tenant_id = $3 AND (${within('t.created_at')}${or('documents')} OR t.id IN (SELECT v.document_id FROM doc_versions v WHERE ${versions('v')}))`,
    doc_versions: `t.document_id IN (SELECT id FROM documents WHERE tenant_id = $3) AND ${versions('t')}`,
    memory_contexts: `t.tenant_id = $3 AND (${within('t.created_at')} OR ${within('t.updated_at')}${or('memory_contexts')})`,
    // A node's revisions have no id: a server sends every revision of a node that gained one.
    nodes: `t.tenant_id = $3 AND (${within('t.created_at')}${or('nodes')})`,
    edges: `t.tenant_id = $3
      AND (${within('t.created_at')} OR ${within('t.tombstoned_at')}${or('edges')})`,
    memories: `t.tenant_id = $3 AND (${within('t.created_at')} OR ${within('t.updated_at')}${or('memories')})`,
    memory_history: `t.tenant_id = $3 AND (${within('t.created_at')}${or('memory_history')})`,
    kv: server
      ? `t.tenant_id = $3 AND (t.scope, t.namespace, t.key) IN (${kvKeys})`
      : `t.tenant_id = $3 AND ${within('t.created_at')}`,
    forget_log: `coalesce(t.target->>'tenantId', t.target->'scope'->>'tenantId') = $3
      AND (${within('t.created_at')}${or('forget_log')})`,
  }
}

/**
 * Where a page of about `limit` changes ends: the time of the `limit`-th change in the window
 * (rows changed at that same time join the page), or the window's end when it holds fewer.
 */
export async function pageEnd(tx: Queryable, w: Window, limit: number): Promise<{ until: Date; more: boolean }> {
  const times = [
    ['events', 'created_at'],
    ['memories', 'created_at'],
    ['memories', 'updated_at'],
    ['edges', 'created_at'],
    ['edges', 'tombstoned_at'],
    ['memory_history', 'created_at'],
    ['kv', 'created_at'],
    ['documents', 'created_at'],
    ['memory_contexts', 'created_at'],
    ['memory_contexts', 'updated_at'],
    ['nodes', 'created_at'],
  ].map(([table, column]) => `SELECT ${column} AS at FROM ${table} WHERE tenant_id = $3 AND ${within(column as string)}`)
  times.push(`SELECT created_at FROM forget_log WHERE ${within('created_at')}`)
  times.push(`SELECT v.created_at FROM doc_versions v JOIN documents d ON d.id = v.document_id
               WHERE d.tenant_id = $3 AND ${within('v.created_at')}`)
  if (w.server) times.push(`SELECT received_at FROM sync_received WHERE ${within('received_at')}`)
  const { rows } = await tx.query<{ at: Date }>(`SELECT at FROM (${times.join(' UNION ALL ')}) x ORDER BY at LIMIT 1 OFFSET $4`, [
    w.since,
    w.until,
    w.tenantId,
    limit - 1,
  ])
  const at = rows[0]?.at
  return at && at < w.until ? { until: at, more: true } : { until: w.until, more: false }
}

/**
 * Columns sent otherwise than stored. A version whose content another version stores
 * (`documents.deduplicate()`) is sent with that content: each side stores contents its own way.
 */
const SENT_AS: Record<string, string> = {
  'doc_versions.content': `coalesce(t.content, (SELECT s.content FROM doc_versions s WHERE s.id = t.content_of)) AS content`,
  'doc_versions.content_of': `NULL::text AS content_of`,
}

/** The rows that changed in the window, by table, in each table's key order. */
export async function selectRows(tx: Queryable, catalog: Catalog, w: Window): Promise<SyncRows> {
  const where = changedRows(w.server)
  const out: SyncRows = {}
  for (const table of SYNC_TABLES) {
    const list = exportedColumns(catalog, table, false)
      .map((c) => SENT_AS[`${table}.${c.column}`] ?? `t.${quoteIdent(c.column)}`)
      .join(', ')
    const { rows } = await tx.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(x) AS row FROM (SELECT ${list} FROM ${table} t WHERE ${where[table]} ORDER BY t.id) x`,
      table === 'relations' ? [] : [w.since, w.until, w.tenantId],
    )
    if (rows.length > 0) out[table] = rows.map((r) => r.row)
  }
  return out
}

/** How many rows each table holds: what a sync reports it sent or took. */
export function countRows(rows: SyncRows): Partial<Record<SyncTable, number>> {
  const counts: Partial<Record<SyncTable, number>> = {}
  for (const table of SYNC_TABLES) {
    const n = table === 'relations' ? 0 : (rows[table]?.length ?? 0)
    if (n > 0) counts[table] = n
  }
  return counts
}
