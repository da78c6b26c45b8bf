import type { Queryable } from '../kernel/db.ts'
import { MemoryError } from '../kernel/errors.ts'
import { type Catalog, checkCounters, exportedColumns, judgeRows, quoteIdent } from '../portable/portable.ts'
import { ARRIVING_COUNTER, PARKED_COUNTER } from '../kernel/limits.ts'
import { judgeImportedRows, redactImportedRows } from '../portable/import-rules.ts'
import type { RedactionCount } from '../privacy/redact.ts'
import { replacements } from '../kernel/aliases.ts'
import { settleKeys } from '../memories/keys.ts'
import { type Ctx, insertNew, insertRows, type Side } from './apply-context.ts'
import { applyContexts, applyDocuments, applyNodes, applyVersions, settleChains } from './apply-named.ts'
import { countRows, SYNC_TABLES, type SyncRows, type SyncTable } from './rows.ts'

export type { Side } from './apply-context.ts'

/** The sender a device notes for the rows its server sent. */
const FROM_SERVER = 'server'

export interface ApplyHooks {
  /** Forgets again what a forget from the other side named, up to its time. */
  replayForget: (tx: Queryable, target: unknown, upTo: Date) => Promise<void>
  /** Cuts the chunks of new events (and seals them under a vault). */
  rebuild: (tx: Queryable, eventIds: string[]) => Promise<unknown>
  /** Tells the planner statistics how many rows changed. */
  changed: (rows: number) => void
}

export interface Applied {
  /** Rows added or changed, by table. */
  changed: Partial<Record<SyncTable, number>>
  redactions: RedactionCount[]
}

/** Checks rows from the other side by the import rules, then applies them by the merge rules. */
export async function applyRows(
  tx: Queryable,
  catalog: Catalog,
  rows: SyncRows,
  o: { side: Side; tenantId: string; sealed: boolean },
  hooks: ApplyHooks,
): Promise<Applied> {
  const redactions = judge(rows, catalog, o.tenantId, o.sealed)
  // Relations come with every page; without other rows there is nothing to merge, and the
  // Cypher graph need not be drawn again.
  if (Object.keys(countRows(rows)).length === 0) return { changed: {}, redactions }
  const c: Ctx = { tx, catalog, side: o.side, tenantId: o.tenantId, received: [], sentTurns: new Map() }
  // Numbers a sync moves (a turn's, a revision's) are changed in place, as only forget may.
  await tx.query(`SET LOCAL engram.forgetting = 'on'`)
  // Rows come with their own, earlier times: the Cypher graph redraws itself whole.
  await tx.query(`SELECT nextval('graph_resets')`)
  const rel = await applyRelations(c, rows.relations ?? [])
  // The other side's forgets first: its rows already obey them, and a row here that one
  // erases must not absorb one of theirs first (a version folded into it, a context renamed).
  const forgets = await applyForgets(c, rows.forget_log ?? [], hooks)
  const { inserted: eventIds, moved } = await applyEvents(c, rows.events ?? [])
  const changed: Partial<Record<SyncTable, number>> = { forget_log: forgets, events: eventIds.length }
  changed.artifacts = await insertNew(c, 'artifacts', rows.artifacts ?? [])
  const documents = await applyDocuments(c, rows.documents ?? [])
  changed.documents = documents.added
  const versions = await applyVersions(c, rows.doc_versions ?? [], documents.renamed)
  changed.doc_versions = versions.added
  changed.memory_contexts = await applyContexts(c, rows.memory_contexts ?? [])
  changed.nodes = await applyNodes(c, rows.nodes ?? [])
  changed.edges = await applyEdges(c, rows.edges ?? [], rel, moved)
  changed.memories = await applyMemories(c, rows.memories ?? [])
  changed.memory_history = await insertNew(c, 'memory_history', rows.memory_history ?? [])
  changed.kv = await applyKv(c, rows.kv ?? [])
  await replayUnseenForgets(c, hooks)
  await settleChains(c, versions.touched)
  await hooks.rebuild(tx, eventIds)
  await noteReceived(c, c.side.kind === 'server' ? c.side.deviceId : FROM_SERVER, c.side.at)
  for (const t of SYNC_TABLES) if (!changed[t]) delete changed[t]
  hooks.changed(Object.values(changed).reduce((n, k) => n + k, 0))
  return { changed, redactions }
}

/**
 * The import rules (row shapes, no secrets, no sealed text unless both sides share a vault
 * key), and one tenant only.
 */
function judge(rows: SyncRows, catalog: Catalog, tenantId: string, sealed: boolean): RedactionCount[] {
  const map = new Map<string, Record<string, unknown>[]>()
  for (const [table, list] of Object.entries(rows)) {
    if (!(SYNC_TABLES as readonly string[]).includes(table) || !Array.isArray(list)) {
      throw new MemoryError('INVALID_INPUT', `A sync carries no table "${table.slice(0, 80)}"`)
    }
    map.set(table, list)
  }
  judgeImportedRows(map, catalog.keys)
  for (const [table, list] of map) checkCounters(table, list)
  const redactions = redactImportedRows(map)
  judgeRows(map, { sealed })
  for (const [table, list] of map) {
    for (const r of list) {
      // A version's tenant is its document's, which `applyVersions` checks.
      const tenant =
        table === 'forget_log' ? forgetTenant(r.target) : table === 'relations' || table === 'doc_versions' ? tenantId : r.tenant_id
      if (tenant !== tenantId) {
        throw new MemoryError('INVALID_INPUT', `A sync row of "${table}" belongs to another tenant than this sync's (${tenantId})`, {
          details: { table, id: r.id },
        })
      }
    }
  }
  return redactions
}

function forgetTenant(target: unknown): unknown {
  const t = target as { tenantId?: unknown; scope?: { tenantId?: unknown } } | null
  return t?.tenantId ?? t?.scope?.tenantId
}

/** Relations are matched by name; the other side's ids map to this side's. */
async function applyRelations(c: Ctx, rows: readonly Record<string, unknown>[]): Promise<Map<number, number>> {
  if (rows.length === 0) return new Map()
  await c.tx.query(
    `INSERT INTO relations (name, description, builtin, created_at)
     SELECT x.name, x.description, x.builtin, x.created_at
       FROM jsonb_populate_recordset(NULL::relations, $1::jsonb) x
     ON CONFLICT (name) DO NOTHING`,
    [JSON.stringify(rows)],
  )
  const { rows: mapped } = await c.tx.query<{ from: number; to: number }>(
    `SELECT x.id AS from, r.id AS to FROM jsonb_to_recordset($1::jsonb) AS x(id int, name text) JOIN relations r ON r.name = x.name`,
    [JSON.stringify(rows)],
  )
  return new Map(mapped.map((m) => [m.from, m.to]))
}

/** A turn's key: tenant, conversation and number. */
const turnKey = (tenant: unknown, conversation: unknown, turn: unknown) => JSON.stringify([tenant, conversation, turn])

/**
 * Events are a union by id. A server gives a pushed turn whose number another side's turn
 * holds the conversation's next free number, and every later pushed turn of that conversation
 * the numbers after it. A device takes the server's numbers for the events it holds, and moves
 * its own turns the server does not hold yet after the server's.
 */
async function applyEvents(c: Ctx, rows: Record<string, unknown>[]): Promise<{ inserted: string[]; moved: Map<string, number> }> {
  const { rows: known } = await c.tx.query<{ id: string; turn_index: number | null }>(
    `SELECT id, turn_index FROM events WHERE id = ANY($1::text[])`,
    [rows.map((r) => String(r.id))],
  )
  const held = new Map(known.map((k) => [k.id, k.turn_index]))
  const fresh = rows.filter((r) => !held.has(String(r.id)))
  const moved = c.side.kind === 'server' ? await numberPushedTurns(c, c.side.deviceId, fresh) : new Map<string, number>()
  for (const r of fresh) {
    c.sentTurns.set(String(r.id), r.turn_index)
    const to = moved.get(turnKey(r.tenant_id, r.conversation_id, r.turn_index))
    if (to !== undefined) r.turn_index = to
  }
  if (c.side.kind === 'device') {
    const adopted = rows.filter((r) => held.has(String(r.id)) && held.get(String(r.id)) !== r.turn_index)
    if (adopted.length > 0) {
      await c.tx.query(
        `UPDATE events e SET turn_index = x.turn_index FROM jsonb_to_recordset($1::jsonb) AS x(id text, turn_index int) WHERE e.id = x.id`,
        [JSON.stringify(adopted.map((r) => ({ id: r.id, turn_index: r.turn_index })))],
      )
    }
  }
  const inserted = await insertRows(c, 'events', fresh)
  if (c.side.kind === 'device') await moveUnpushedTurns(c, c.side.pushedUntil, rows)
  return { inserted, moved }
}

/** Server: the new number of each pushed turn that must move, by `turnKey`. */
async function numberPushedTurns(c: Ctx, deviceId: string, fresh: readonly Record<string, unknown>[]): Promise<Map<string, number>> {
  const turns = new Map<string, { tenant_id: unknown; conversation_id: unknown; turn_index: number }>()
  for (const r of fresh) {
    if (typeof r.turn_index !== 'number') continue
    turns.set(turnKey(r.tenant_id, r.conversation_id, r.turn_index), { tenant_id: r.tenant_id, conversation_id: r.conversation_id, turn_index: r.turn_index })
  }
  if (turns.size === 0) return new Map()
  // Each pushed turn: where this device's earlier events of that number went, whether another
  // side holds the number (another device, the server itself, an archive, or this device's turn
  // moved there from another number), and the conversation's next free number.
  const { rows } = await c.tx.query<{ tenant_id: string; conversation_id: string; turn_index: number; sent_to: number | null; taken: boolean; next_free: number }>(
    `SELECT x.tenant_id, x.conversation_id, x.turn_index,
            (SELECT e.turn_index FROM events e JOIN sync_received r ON r.tbl = 'events' AND r.row_id = e.id
              WHERE e.tenant_id = x.tenant_id AND e.conversation_id = x.conversation_id
                AND r.device_id = $2 AND r.turn_index = x.turn_index LIMIT 1) AS sent_to,
            EXISTS (SELECT 1 FROM events e LEFT JOIN sync_received r ON r.tbl = 'events' AND r.row_id = e.id
              WHERE e.tenant_id = x.tenant_id AND e.conversation_id = x.conversation_id AND e.turn_index = x.turn_index
                AND (r.device_id IS DISTINCT FROM $2 OR r.turn_index IS DISTINCT FROM x.turn_index))
              OR EXISTS (SELECT 1 FROM archives a WHERE a.tenant_id = x.tenant_id AND a.conversation_id = x.conversation_id
                AND a.next_turn_index > x.turn_index) AS taken,
            greatest((SELECT max(turn_index) + 1 FROM events e WHERE e.tenant_id = x.tenant_id AND e.conversation_id = x.conversation_id),
                     (SELECT max(next_turn_index) FROM archives a WHERE a.tenant_id = x.tenant_id AND a.conversation_id = x.conversation_id),
                     0)::int AS next_free
       FROM jsonb_to_recordset($1::jsonb) AS x(tenant_id text, conversation_id text, turn_index int)
      ORDER BY x.tenant_id, x.conversation_id, x.turn_index`,
    [JSON.stringify([...turns.values()]), deviceId],
  )
  // Per conversation, in order: a turn keeps its number until the first one taken; that one
  // and every later one take the next free numbers, past every number pushed.
  const moved = new Map<string, number>()
  let conversation = ''
  let next: number | null = null
  for (const t of rows) {
    const key = JSON.stringify([t.tenant_id, t.conversation_id])
    if (key !== conversation) [conversation, next] = [key, null]
    const k = turnKey(t.tenant_id, t.conversation_id, t.turn_index)
    if (t.sent_to !== null) {
      if (t.sent_to !== t.turn_index) moved.set(k, t.sent_to)
      continue
    }
    if (next === null && t.taken) {
      const top = Math.max(...rows.filter((r) => JSON.stringify([r.tenant_id, r.conversation_id]) === key).map((r) => r.turn_index))
      next = Math.max(t.next_free, top + 1)
    }
    if (next !== null) moved.set(k, next++)
  }
  return moved
}

/**
 * Device: in each conversation the pull touched, this device's turns the server does not hold
 * yet move after the highest number the server's events hold, in their order, with their edges.
 */
async function moveUnpushedTurns(c: Ctx, pushedUntil: Date | null, rows: readonly Record<string, unknown>[]): Promise<void> {
  const conversations = new Map<string, [unknown, unknown]>()
  for (const r of rows) conversations.set(JSON.stringify([r.tenant_id, r.conversation_id]), [r.tenant_id, r.conversation_id])
  const ids = rows.map((r) => String(r.id))
  for (const [tenant, conversation] of conversations.values()) {
    // Mine: dated after the last push, not among the server's rows just received, nor
    // received from it before.
    const mine = (a: string) =>
      `(($3::timestamptz IS NULL OR ${a}.created_at > $3) AND ${a}.id <> ALL($4::text[])
        AND NOT EXISTS (SELECT 1 FROM sync_received r WHERE r.tbl = '${a === 'e' ? 'events' : 'edges'}' AND r.row_id = ${a}.id))`
    await c.tx.query(
      `WITH ours AS (
         SELECT DISTINCT e.turn_index FROM events e
          WHERE e.tenant_id = $1 AND e.conversation_id = $2 AND e.turn_index IS NOT NULL AND ${mine('e')}
       ), settled AS (
         SELECT max(e.turn_index) AS top FROM events e WHERE e.tenant_id = $1 AND e.conversation_id = $2 AND NOT ${mine('e')}
       ), moves AS (
         SELECT o.turn_index AS old, s.top + row_number() OVER (ORDER BY o.turn_index) AS new
           FROM ours o, settled s WHERE (SELECT min(turn_index) FROM ours) <= s.top
       ), events_moved AS (
         UPDATE events e SET turn_index = moves.new FROM moves
          WHERE e.tenant_id = $1 AND e.conversation_id = $2 AND e.turn_index = moves.old AND ${mine('e')}
       )
       UPDATE edges g SET turn_index = moves.new FROM moves
        WHERE g.tenant_id = $1 AND g.conversation_id = $2 AND g.turn_index = moves.old AND ${mine('g')}`,
      [tenant, conversation, pushedUntil, ids],
    )
  }
}

/**
 * Edges are a union by id, relations mapped by name, a pushed turn's edges moved with it. A
 * tombstone set on either side holds (the earlier time); a device takes the server's turn numbers.
 */
async function applyEdges(c: Ctx, all: Record<string, unknown>[], rel: Map<number, number>, moved: Map<string, number>): Promise<number> {
  // An edge of a retired document or version joins the row that took its place; a folded
  // version's VERSION_OF goes with it (the kept version has its own).
  const retired = await replacements(c.tx, all.flatMap((r) => [String(r.src), String(r.dst)]))
  const { rows: found } = await c.tx.query<{ id: number }>(`SELECT id FROM relations WHERE name = 'VERSION_OF'`)
  const versionOf = found[0]?.id
  const rows = all.filter((r) => !(retired.has(String(r.src)) && (rel.get(Number(r.rel)) ?? r.rel) === versionOf))
  for (const r of rows) {
    r.rel = rel.get(Number(r.rel)) ?? r.rel
    r.src = retired.get(String(r.src)) ?? r.src
    r.dst = retired.get(String(r.dst)) ?? r.dst
    // Filled again here from the version the edge reaches.
    r.document_id = null
    const to = moved.get(turnKey(r.tenant_id, r.conversation_id, r.turn_index))
    if (to !== undefined) r.turn_index = to
  }
  const added = await insertRows(c, 'edges', rows)
  const fresh = new Set(added)
  const rest = rows.filter((r) => !fresh.has(String(r.id)))
  if (rest.length === 0) return added.length
  const { rows: changed } = await c.tx.query<{ id: string }>(
    `UPDATE edges g
        SET tombstoned_at = CASE WHEN g.tombstoned_at IS NULL OR x.tombstoned_at < g.tombstoned_at
                                 THEN coalesce(x.tombstoned_at, g.tombstoned_at) ELSE g.tombstoned_at END,
            turn_index = CASE WHEN $2 THEN x.turn_index ELSE g.turn_index END
       FROM jsonb_to_recordset($1::jsonb) AS x(id text, tombstoned_at timestamptz, turn_index int)
      WHERE g.id = x.id
        AND ((x.tombstoned_at IS NOT NULL AND (g.tombstoned_at IS NULL OR x.tombstoned_at < g.tombstoned_at))
             OR ($2 AND g.turn_index IS DISTINCT FROM x.turn_index))
      RETURNING g.id`,
    [JSON.stringify(rest), c.side.kind === 'device'],
  )
  for (const r of changed) c.received.push({ tbl: 'edges', id: r.id })
  return added.length + changed.length
}

/**
 * A curated memory is one row that changes: the later change (`updated_at`) wins, ties broken
 * by the text's hash. A changed text loses its vector, to be embedded again. On a server, two
 * memories saved under one key on two devices become one: the later saved supersedes the
 * other (`settleKeys`), and devices take that with their next pull.
 */
async function applyMemories(c: Ctx, rows: readonly Record<string, unknown>[]): Promise<number> {
  if (rows.length === 0) return 0
  // Without its vector, a memory comes without the model's name: it is embedded here.
  const names = exportedColumns(c.catalog, 'memories', false)
    .map((col) => col.column)
    .filter((n) => n !== 'embed_model')
  const columns = names.map(quoteIdent).join(', ')
  const updates = names
    .filter((n) => n !== 'id')
    .map((n) => `${quoteIdent(n)} = excluded.${quoteIdent(n)}`)
    .join(', ')
  const { rows: changed } = await c.tx.query<{ id: string }>(
    `INSERT INTO memories AS m (${columns})
     SELECT ${columns} FROM jsonb_populate_recordset(NULL::memories, $1::jsonb)
     ON CONFLICT (id) DO UPDATE SET ${updates},
       vector = CASE WHEN m.content = excluded.content THEN m.vector END,
       embed_model = CASE WHEN m.content = excluded.content THEN m.embed_model END
     WHERE (excluded.updated_at, excluded.hash) > (m.updated_at, m.hash)
     RETURNING m.id`,
    [JSON.stringify(rows)],
  )
  for (const r of changed) c.received.push({ tbl: 'memories', id: r.id })
  if (c.side.kind === 'server') await settleKeys(c.tx, changed.map((r) => r.id), c.side.at)
  return changed.length
}

/**
 * Policy revisions are a union by id, each key's revisions numbered by time, ties by id, on
 * the server. A device takes the server's numbers for the revisions the server sent (a key's
 * whole list), and numbers its own the server does not hold yet after them.
 */
async function applyKv(c: Ctx, rows: readonly Record<string, unknown>[]): Promise<number> {
  if (rows.length === 0) return 0
  // New revisions come in above any number in use, then every touched key is numbered again:
  // first to PARKED + its number, then down by PARKED, each step into numbers none holds.
  const parked = rows.map((r, i) => ({ ...r, rev: ARRIVING_COUNTER + i }))
  const added = await insertRows(c, 'kv', parked)
  const server = c.side.kind === 'server'
  await c.tx.query(
    `WITH keys AS (SELECT DISTINCT tenant_id, scope, namespace, key FROM jsonb_populate_recordset(NULL::kv, $1::jsonb)),
          sent AS (SELECT id, rev FROM jsonb_to_recordset($1::jsonb) AS x(id text, rev int)),
          ranked AS (
            SELECT k.id, s.rev AS sent_rev,
                   row_number() OVER (PARTITION BY k.tenant_id, k.scope, k.namespace, k.key
                                      ORDER BY CASE WHEN $2 THEN NULL ELSE s.rev END NULLS LAST, k.created_at, k.id) AS n,
                   max(s.rev) OVER (PARTITION BY k.tenant_id, k.scope, k.namespace, k.key) AS top_sent,
                   count(s.rev) OVER (PARTITION BY k.tenant_id, k.scope, k.namespace, k.key) AS sent_count
              FROM kv k JOIN keys USING (tenant_id, scope, namespace, key) LEFT JOIN sent s ON s.id = k.id
          )
     UPDATE kv SET rev = ${PARKED_COUNTER} + CASE WHEN $2 THEN r.n
                                          WHEN r.sent_rev IS NOT NULL THEN r.sent_rev
                                          ELSE r.top_sent + r.n - r.sent_count END
       FROM ranked r WHERE kv.id = r.id`,
    [JSON.stringify(rows), server],
  )
  await c.tx.query(`UPDATE kv SET rev = rev - ${PARKED_COUNTER} WHERE rev > ${PARKED_COUNTER}`)
  return added.length
}

/** A forget from the other side is stored as it was logged, and forgets here what it named, up to its time. */
async function applyForgets(c: Ctx, rows: readonly Record<string, unknown>[], hooks: ApplyHooks): Promise<number> {
  const added = new Set(await insertRows(c, 'forget_log', rows))
  for (const r of rows) {
    if (added.has(String(r.id))) await hooks.replayForget(c.tx, r.target, new Date(String(r.created_at)))
  }
  return added.size
}

/**
 * Forgets the other side had not seen when it chose these rows win over them: on a device, its
 * own forgets not pushed yet; on a server, those that reached it after the device's last pull.
 */
async function replayUnseenForgets(c: Ctx, hooks: ApplyHooks): Promise<void> {
  const server = c.side.kind === 'server'
  const { rows } = await c.tx.query<{ target: unknown; created_at: Date }>(
    `SELECT f.target, f.created_at FROM forget_log f
       LEFT JOIN sync_received r ON r.tbl = 'forget_log' AND r.row_id = f.id
      WHERE coalesce(f.target->>'tenantId', f.target->'scope'->>'tenantId') = $1
        AND ${server ? `coalesce(r.device_id, '') <> $3 AND ($2::timestamptz IS NULL OR coalesce(r.received_at, f.created_at) > $2)` : `r.row_id IS NULL AND ($2::timestamptz IS NULL OR f.created_at > $2)`}
      ORDER BY f.created_at, f.id`,
    c.side.kind === 'server' ? [c.tenantId, c.side.pulledUntil, c.side.deviceId] : [c.tenantId, c.side.pushedUntil],
  )
  for (const r of rows) await hooks.replayForget(c.tx, r.target, r.created_at)
}

/** Who sent each row, and when; a row sent again keeps its first sender. */
async function noteReceived(c: Ctx, sender: string, at: Date): Promise<void> {
  if (c.received.length === 0) return
  // A node's revisions are noted once, by the node's id.
  const once = new Map(c.received.map((r) => [`${r.tbl} ${r.id}`, r]))
  const rows = [...once.values()].map((r) => ({ ...r, turn_index: r.tbl === 'events' ? (c.sentTurns.get(r.id) ?? null) : null }))
  await c.tx.query(
    `INSERT INTO sync_received (tbl, row_id, device_id, received_at, turn_index)
     SELECT x.tbl, x.id, $2, $3, x.turn_index FROM jsonb_to_recordset($1::jsonb) AS x(tbl text, id text, turn_index int)
     ON CONFLICT (tbl, row_id) DO UPDATE SET received_at = excluded.received_at`,
    [JSON.stringify(rows), sender, at],
  )
}
