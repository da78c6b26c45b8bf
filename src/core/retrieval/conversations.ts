import { type DocumentInfo, type DocumentVersion, toDocument, toVersion, VERSION_COLUMNS } from '../documents/documents.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { EVENT_COLUMNS, type EventRow, type MemoryEvent, toEvent } from '../log/events.ts'
import { EDGE_COLUMNS, type Edge, type EdgeRow, edgeVisibleAt, toEdge } from '../graph/edges.ts'
import { allowedSensitivities, readChannel } from '../privacy/channels.ts'
import { type Channel, identifier } from '../kernel/scope.ts'
import { asOfParam, type TimeInput, timeInput } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'

/** One conversation as a graph: its events, its edges, and the versions and documents they reach. */
export interface ConversationGraph {
  conversationId: string
  tenantId: string
  events: MemoryEvent[]
  /** The conversation's edges, plus the VERSION_OF edges of the versions it touched. */
  edges: Edge[]
  versions: DocumentVersion[]
  documents: DocumentInfo[]
}

const options = z
  .object({ tenantId: identifier.default('default'), asOf: timeInput.optional(), channel: readChannel })
  .strict()

export function createConversationGraph(ctx: EngineContext) {
  return {
    /**
     * The subgraph of one conversation, in recorded order, as of now or `asOf`. Events above
     * what `channel` (default 'private') may show are left out, with the edges that touch
     * them and the versions only they observed.
     *
     * @example
     * const { events, edges, versions } = await memory.graph.conversation('c1', { channel: 'public' })
     */
    async conversation(
      conversationId: string,
      opts: { tenantId?: string; asOf?: TimeInput; channel?: Channel } = {},
    ): Promise<ConversationGraph> {
      parseInput(identifier, conversationId, 'conversation id')
      const o = parseInput(options, opts, 'conversation options')
      const asOf = asOfParam(o.asOf)
      const { rows } = await ctx.db.query<{
        events: EventRow[] | null
        edges: EdgeRow[] | null
        versions: Parameters<typeof toVersion>[0][] | null
        documents: Parameters<typeof toDocument>[0][] | null
      }>(
        `WITH conv AS (
           SELECT * FROM events
           WHERE tenant_id = $1 AND conversation_id = $2 AND ($3::timestamptz IS NULL OR created_at <= $3)
         ), ev AS (
           SELECT * FROM conv WHERE sensitivity = ANY($4::text[])
         ), hidden AS (
           SELECT id FROM events WHERE tenant_id = $1 AND conversation_id = $2 AND NOT sensitivity = ANY($4::text[])
         ), own AS (
           SELECT e.* FROM edges e
           WHERE e.tenant_id = $1 AND e.conversation_id = $2 AND ${edgeVisibleAt('$3')}
             AND NOT EXISTS (SELECT 1 FROM hidden h WHERE h.id = e.src OR h.id = e.dst)
         ), vers AS (
           SELECT v.* FROM doc_versions v
           WHERE (v.id IN (SELECT dst FROM own UNION SELECT src FROM own)
                  OR (v.conversation_id = $2 AND ($3::timestamptz IS NULL OR v.created_at <= $3)
                      AND NOT EXISTS (SELECT 1 FROM hidden h WHERE h.id = v.event_id)))
             AND v.document_id IN (SELECT id FROM documents WHERE tenant_id = $1)
         ), structural AS (
           SELECT e.* FROM edges e
           WHERE e.src IN (SELECT id FROM vers) AND e.rel = (SELECT id FROM relations WHERE name = 'VERSION_OF')
             AND e.tenant_id = $1 AND ${edgeVisibleAt('$3')}
         )
         SELECT
           (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.seq) FROM (SELECT ${EVENT_COLUMNS}, ev.seq FROM ev) x) AS events,
           (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.created_at, x.id) FROM (
              SELECT ${EDGE_COLUMNS} FROM (SELECT * FROM own UNION ALL SELECT * FROM structural) e
              JOIN relations r ON r.id = e.rel) x) AS edges,
           (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.document_id, x.version) FROM (
              SELECT ${VERSION_COLUMNS} FROM vers v) x) AS versions,
           (SELECT jsonb_agg(to_jsonb(d) ORDER BY d.id) FROM documents d
              WHERE d.id IN (SELECT document_id FROM vers)) AS documents`,
        [o.tenantId, conversationId, asOf, allowedSensitivities(o.channel)],
      )
      const row = rows[0]
      return {
        conversationId,
        tenantId: o.tenantId,
        events: (row?.events ?? []).map(toEvent),
        edges: (row?.edges ?? []).map((r) => toEdge(r, asOf)),
        versions: (row?.versions ?? []).map(toVersion),
        documents: (row?.documents ?? []).map(toDocument),
      }
    },
  }
}
