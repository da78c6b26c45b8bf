import type { Queryable } from '../kernel/db.ts'
import type { JsonObject } from '../kernel/json.ts'
import { iso } from '../kernel/time.ts'
import { memoriesAsOf } from '../memories/past.ts'
import { COLUMNS, type MemoryRow } from '../memories/rows.ts'
import { readableRow } from '../memories/selection.ts'

/**
 * Who reads the graph, and as of when: the rows a Cypher query may see are those every other
 * read of this caller may see. `sensitivities` are those the caller's channel may show.
 */
export interface GraphView {
  tenantId: string
  userId: string | null
  agentId: string | null
  projectId: string | null
  sensitivities: readonly string[]
  asOf: Date | null
}

/** A node of the graph as drawn from its row; `visible: false` takes it out of the graph. */
export interface NodeDraft {
  label: string
  id: string
  properties: JsonObject
  visible: boolean
}

/** A relationship of the graph as drawn from its edge. */
export interface LinkDraft {
  rel: string
  id: string
  src: string
  dst: string
  properties: JsonObject
  visible: boolean
}

export interface GraphDraft {
  nodes: NodeDraft[]
  links: LinkDraft[]
}

/** Rows changed after `from` (null: all rows) and up to `to`, as `to` sees them. */
export interface Window {
  from: Date | null
  to: Date
}

/** An event's label: its kind in PascalCase (`tool_call` → `ToolCall`). */
export const EVENT_LABELS = {
  message: 'Message',
  tool_call: 'ToolCall',
  tool_result: 'ToolResult',
  decision: 'Decision',
  task_update: 'TaskUpdate',
  artifact: 'Artifact',
} as const

/** Every node label the graph draws. */
export const NODE_LABELS = [...Object.values(EVENT_LABELS), 'Document', 'Version', 'Memory', 'Context', 'Entity'] as const

/** A time as the graph holds it: ISO 8601 text in UTC, so comparing two compares the times. */
const isoSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** Whether a row dated by `column` changed in the window ($5: from, $6: to). */
const inWindow = (column: string) => `(${column} <= $6 AND ($5::timestamptz IS NULL OR ${column} > $5))`

/**
 * The nodes and relationships `view` may see among the rows changed in `window`, read in
 * one snapshot of `q` (a transaction of the caller). A full draw (`from: null`) leaves out
 * what is not visible; a catch-up also lists what became invisible, to take it out.
 */
export async function drawGraph(q: Queryable, view: GraphView, window: Window): Promise<GraphDraft> {
  const params = [view.tenantId, view.userId, view.agentId, view.sensitivities, window.from, window.to]
  const { rows } = await q.query<{ nodes: NodeDraft[] | null; links: LinkDraft[] | null }>(
    `SELECT
       (SELECT jsonb_agg(x) FROM (
          SELECT ev.kind AS label, ev.id, true AS visible, jsonb_build_object(
                   'id', ev.id, 'kind', ev.kind, 'role', ev.actor_type, 'actorId', ev.actor_id,
                   'text', CASE WHEN jsonb_typeof(ev.content -> 'text') = 'string' THEN ev.content ->> 'text' END,
                   -- A message's content is its text: not held twice.
                   'content', CASE WHEN ev.kind <> 'message' THEN ev.content END, 'userId', ev.user_id, 'agentId', ev.agent_id,
                   'conversationId', ev.conversation_id, 'runId', ev.run_id, 'turnIndex', ev.turn_index,
                   'channel', ev.channel, 'sensitivity', ev.sensitivity, 'tags', to_jsonb(ev.tags),
                   'createdAt', ${isoSql('ev.created_at')}) AS properties
          FROM events ev
          WHERE ev.tenant_id = $1 AND ($2::text IS NULL OR ev.user_id = $2) AND ($3::text IS NULL OR ev.agent_id = $3)
            AND ev.sensitivity = ANY($4::text[]) AND ${inWindow('ev.created_at')}
          UNION ALL
          SELECT 'Document', d.id, true, jsonb_build_object(
                   'id', d.id, 'key', d.canonical_key, 'keyKind', d.key_kind, 'mode', d.mode,
                   'createdAt', ${isoSql('d.created_at')})
          FROM documents d WHERE d.tenant_id = $1 AND ${inWindow('d.created_at')}
          UNION ALL
          SELECT 'Version', v.id, true, jsonb_build_object(
                   'id', v.id, 'documentId', v.document_id, 'version', v.version, 'contentHash', v.content_hash,
                   'bytes', v.bytes, 'provenance', v.provenance, 'conversationId', v.conversation_id,
                   'eventId', v.event_id, 'createdAt', ${isoSql('v.created_at')})
          FROM doc_versions v JOIN documents d ON d.id = v.document_id
          WHERE d.tenant_id = $1 AND ${inWindow('v.created_at')}
          UNION ALL
          SELECT 'Context', c.id, true, jsonb_build_object(
                   'id', c.id, 'name', c.name, 'description', c.description, 'userId', c.user_id,
                   'priority', c.priority, 'createdAt', ${isoSql('c.created_at')})
          FROM memory_contexts c
          WHERE c.tenant_id = $1 AND ($2::text IS NULL OR c.user_id IS NULL OR c.user_id = $2) AND ${inWindow('c.created_at')}
          UNION ALL
          SELECT 'Entity', n.id, NOT n.tombstone, jsonb_build_object(
                   'id', n.id, 'type', n.type, 'rev', n.rev, 'scope', n.scope, 'payload', n.payload,
                   'updatedAt', ${isoSql('n.created_at')})
          FROM (SELECT DISTINCT ON (n.id) n.* FROM nodes n
                WHERE n.tenant_id = $1 AND n.created_at <= $6
                  AND ($5::timestamptz IS NULL
                       OR n.id IN (SELECT id FROM nodes WHERE tenant_id = $1 AND ${inWindow('created_at')}))
                ORDER BY n.id, n.rev DESC) n
          WHERE $5::timestamptz IS NOT NULL OR NOT n.tombstone) x) AS nodes,
       (SELECT jsonb_agg(x) FROM (
          SELECT r.name AS rel, e.id, e.src, e.dst, (e.tombstoned_at IS NULL OR e.tombstoned_at > $6) AS visible,
                 jsonb_build_object(
                   'id', e.id, 'rel', r.name, 'props', e.props, 'conversationId', e.conversation_id,
                   'runId', e.run_id, 'taskId', e.task_id, 'turnIndex', e.turn_index,
                   'createdAt', ${isoSql('e.created_at')}, 'validFrom', ${isoSql('e.valid_from')},
                   'validTo', ${isoSql('e.valid_to')}) AS properties
          FROM edges e JOIN relations r ON r.id = e.rel
          WHERE e.tenant_id = $1 AND e.created_at <= $6
            AND CASE WHEN $5::timestamptz IS NULL THEN e.tombstoned_at IS NULL OR e.tombstoned_at > $6
                     ELSE e.created_at > $5 OR (e.tombstoned_at > $5 AND e.tombstoned_at <= $6) END) x) AS links`,
    params,
  )
  const drawn = rows[0]
  const nodes = (drawn?.nodes ?? []).map((n) => ({
    ...n,
    label: (EVENT_LABELS as Record<string, string>)[n.label] ?? n.label,
  }))
  nodes.push(...(await drawMemories(q, view, window)))
  return { nodes, links: drawn?.links ?? [] }
}

/**
 * The memories `view` may see, as they were at the window's end: live or superseded, not
 * expired, of a sensitivity the channel shows, and readable by the view's user.
 */
async function drawMemories(q: Queryable, view: GraphView, window: Window): Promise<NodeDraft[]> {
  const { rows: current } = await q.query<MemoryRow>(
    `SELECT ${COLUMNS} FROM memories m
     WHERE m.tenant_id = $1 AND m.created_at <= $2
       AND ($3::timestamptz IS NULL OR m.created_at > $3 OR m.updated_at > $3 OR (m.expires_at > $3 AND m.expires_at <= $2))`,
    [view.tenantId, window.to, window.from],
  )
  const rows = view.asOf === null ? current : await memoriesAsOf(q, current, window.to)
  const now = new Map(current.map((r) => [r.id, r]))
  return rows.map((m) => ({
    label: 'Memory',
    id: m.id,
    visible:
      m.status !== 'deleted' &&
      (m.expires_at === null || m.expires_at > window.to) &&
      view.sensitivities.includes(m.sensitivity) &&
      view.sensitivities.includes(now.get(m.id)?.sensitivity ?? '') &&
      (view.userId === null || readableRow(m, view.userId, view.projectId)) &&
      (view.agentId === null || m.agent_id === view.agentId),
    properties: {
      id: m.id,
      content: m.content,
      category: m.category,
      source: m.source,
      confidence: m.confidence,
      scope: m.scope,
      status: m.status,
      key: m.key,
      userId: m.user_id,
      agentId: m.agent_id,
      runId: m.run_id,
      projectId: m.project_id,
      sensitivity: m.sensitivity,
      metadata: m.metadata as JsonObject,
      supersededBy: m.superseded_by,
      createdAt: iso(m.created_at),
      updatedAt: iso(m.updated_at),
      expiresAt: m.expires_at === null ? null : iso(m.expires_at),
    },
  }))
}
