import { type DocumentInfo, type DocumentVersion, toDocument, toVersion, VERSION_COLUMNS } from '../documents/documents.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { EVENT_COLUMNS, type EventRow, type MemoryEvent, toEvent } from '../log/events.ts'
import { type NodeRecord, type NodeRow, toNode } from '../graph/entities.ts'
import { EDGE_COLUMNS, type Edge, type EdgeRow, toEdge } from '../graph/edges.ts'
import type { JsonObject } from '../kernel/json.ts'
import { type KvEntry, type KvRow, toEntry } from '../kv/kv.ts'
import { type HistoryRow, type MemoryHistoryRecord, toHistory } from '../memories/memories.ts'
import { identifier } from '../kernel/scope.ts'
import { iso, type TimeInput, timeInput, toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'

export interface ForgetEntry {
  id: string
  target: JsonObject
  counts: JsonObject
  reason: string | null
  createdAt: string
}

/** Everything that happened in (since, until]. */
export interface Changes {
  since: string
  until: string
  events: MemoryEvent[]
  documents: DocumentInfo[]
  versions: DocumentVersion[]
  /** Edges created in the window, and edges tombstoned in it. */
  edges: Edge[]
  /** Entity-graph node revisions written in the window; a removal is one with `tombstone: true`. */
  nodes: (NodeRecord & { tombstone: boolean })[]
  /** Policy (kv) revisions written in the window, deletions included. */
  kv: (KvEntry & { tenantId: string })[]
  /** What happened to curated memories in the window (ADD, UPDATE, DELETE), as `memories.history` tells it. */
  memories: (MemoryHistoryRecord & { tenantId: string })[]
  forgets: ForgetEntry[]
}

/** A row read through JSON, its time text again. */
type Json<T> = Omit<T, 'created_at'> & { created_at: string }
const dated = <T extends { created_at: string }>(r: T) => ({ ...r, created_at: new Date(r.created_at) })

const options = z.object({ until: timeInput.optional(), tenantId: identifier.optional() }).strict()

/**
 * Where a list asked for up to now ends: now, or just before the earliest engine call still
 * running began, since what it writes is dated then or later and is not committed yet. The
 * engine's clock then moves past it, so a write after the cut is dated after it too: each row
 * is in the list cut after it was committed, or in the next (since = this until).
 */
export function cutNow(ctx: EngineContext): Date {
  const now = ctx.now()
  const earliest = ctx.earliestCall()
  const to = earliest !== null && earliest <= now.getTime() ? new Date(earliest - 1) : now
  ctx.cutAt(to)
  return to
}

export function createChanges(ctx: EngineContext) {
  return {
    /**
     * What changed after `since` (and up to `until`, default now): new events, documents,
     * versions and edges, edges tombstoned, entity-graph node and policy (kv) revisions, what
     * happened to curated memories, and forgets. Times are the rows' own times, so a
     * back-dated import shows up at the time it claims. Pass `until` back as the next call's
     * `since` to follow the changes: without `until`, a list ends now, or just before the
     * earliest engine call still running began, and the engine's clock moves past it, so no
     * write of this engine lands between two lists. Edges read as of `until`: an edge
     * tombstoned later shows no tombstone.
     *
     * @example
     * const { events, versions } = await memory.diffSince('2025-02-09T00:00:00Z')
     */
    async diffSince(since: TimeInput, opts: { until?: TimeInput; tenantId?: string } = {}): Promise<Changes> {
      const from = toDate(parseInput(timeInput, since, 'since'))
      const o = parseInput(options, opts, 'diff options')
      const to = o.until === undefined ? cutNow(ctx) : toDate(o.until)
      const tenant = o.tenantId ?? null
      const { rows } = await ctx.db.query<{
        events: EventRow[] | null
        documents: Parameters<typeof toDocument>[0][] | null
        versions: Parameters<typeof toVersion>[0][] | null
        edges: EdgeRow[] | null
        nodes: Json<NodeRow>[] | null
        kv: Json<KvRow & { tenant_id: string }>[] | null
        memories: Json<HistoryRow & { tenant_id: string }>[] | null
        forgets: { id: string; target: JsonObject; counts: JsonObject; reason: string | null; created_at: string }[] | null
      }>(
        `SELECT
           (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.created_at, x.seq) FROM (
              SELECT ${EVENT_COLUMNS}, ev.seq FROM events ev
              WHERE ev.created_at > $1 AND ev.created_at <= $2 AND ($3::text IS NULL OR ev.tenant_id = $3)) x) AS events,
           (SELECT jsonb_agg(to_jsonb(d) ORDER BY d.created_at, d.id) FROM documents d
              WHERE d.created_at > $1 AND d.created_at <= $2 AND ($3::text IS NULL OR d.tenant_id = $3)) AS documents,
           (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.created_at, x.id) FROM (
              SELECT ${VERSION_COLUMNS} FROM doc_versions v JOIN documents d ON d.id = v.document_id
              WHERE v.created_at > $1 AND v.created_at <= $2 AND ($3::text IS NULL OR d.tenant_id = $3)) x) AS versions,
           (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.created_at, x.id) FROM (
              SELECT ${EDGE_COLUMNS} FROM edges e JOIN relations r ON r.id = e.rel
              WHERE ((e.created_at > $1 AND e.created_at <= $2) OR (e.tombstoned_at > $1 AND e.tombstoned_at <= $2))
                AND ($3::text IS NULL OR e.tenant_id = $3)) x) AS edges,
           (SELECT jsonb_agg(to_jsonb(n) ORDER BY n.created_at, n.id, n.rev) FROM nodes n
              WHERE n.created_at > $1 AND n.created_at <= $2 AND ($3::text IS NULL OR n.tenant_id = $3)) AS nodes,
           (SELECT jsonb_agg(to_jsonb(k) ORDER BY k.created_at, k.id) FROM kv k
              WHERE k.created_at > $1 AND k.created_at <= $2 AND ($3::text IS NULL OR k.tenant_id = $3)) AS kv,
           (SELECT jsonb_agg(to_jsonb(h) ORDER BY h.created_at, h.id) FROM memory_history h
              WHERE h.created_at > $1 AND h.created_at <= $2 AND ($3::text IS NULL OR h.tenant_id = $3)) AS memories,
           (SELECT jsonb_agg(to_jsonb(f) ORDER BY f.created_at, f.id) FROM forget_log f
              WHERE f.created_at > $1 AND f.created_at <= $2
                AND ($3::text IS NULL OR coalesce(f.target->>'tenantId', f.target->'scope'->>'tenantId') = $3)) AS forgets`,
        [from, to, tenant],
      )
      const row = rows[0]
      return {
        since: iso(from),
        until: iso(to),
        events: (row?.events ?? []).map(toEvent),
        documents: (row?.documents ?? []).map(toDocument),
        versions: (row?.versions ?? []).map(toVersion),
        edges: (row?.edges ?? []).map((r) => toEdge(r, to)),
        nodes: (row?.nodes ?? []).map((r) => ({ ...toNode(dated(r)), tombstone: r.tombstone })),
        kv: (row?.kv ?? []).map((r) => ({ ...toEntry(dated(r)), tenantId: r.tenant_id })),
        memories: (row?.memories ?? []).map((r) => ({ ...toHistory(r), tenantId: r.tenant_id })),
        forgets: (row?.forgets ?? []).map((f) => ({
          id: f.id,
          target: f.target,
          counts: f.counts,
          reason: f.reason,
          createdAt: iso(f.created_at),
        })),
      }
    },
  }
}
