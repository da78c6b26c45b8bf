// Past turns: for each event, the question and answer it belongs to, the answer's procedures
// and the document versions they saw; rendered for the evidence section, or viewed by `turns`.
import { edgeVisibleAt } from '../graph/edges.ts'
import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import type { JsonValue } from '../kernel/json.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import { toDate } from '../kernel/time.ts'
import type { CheckedTurnsOptions } from './context-input.ts'
import { day } from './context-render.ts'
import { PREPARED } from './context-sections.ts'

/** An event's turn as `expandTurns` reads it. */
export interface TurnRow {
  hit_id: string
  user_event_id: string | null
  user_text: string | null
  reply_event_id: string | null
  reply_text: string | null
  procedures: { tool: string; args: JsonValue; version_id: string | null; key: string | null; version: number | null; latest: number | null }[] | null
  truncated_artifact: string | null
}

/** A past turn as a search hit leads to it: the question, the answer, and what the answer did. */
export interface TurnView {
  /** The event asked about (a hit's `eventId`). */
  eventId: string
  /** The turn's question and answer; null for an event recorded outside a turn. */
  userEventId: string | null
  userText: string | null
  replyEventId: string | null
  replyText: string | null
  /** The reply's procedures, in order, each with the document version it read or wrote. */
  procedures: {
    tool: string
    args: JsonValue
    versionId: string | null
    /** The document's canonical key (its path or URL). */
    document: string | null
    version: number | null
    latestVersion: number | null
    /** Versions the document has had since the one seen (0: current). */
    staleness: number | null
  }[]
}


/** How a past turn's rendering names the documents its procedures saw, and how stale they are. */
export const DOCUMENTS_LINE = 'Documents: '

/** For each hit: its turn (question and reply), the procedures of the reply and the versions they saw. */
export async function expandTurns(db: Queryable, eventIds: string[], tenantId: string, asOf: Date | null): Promise<Map<string, TurnRow>> {
  if (eventIds.length === 0) return new Map()
  const { rows } = await db.query<TurnRow>(
    `WITH msg AS (SELECT id FROM relations WHERE name = 'MESSAGE'),
     hit AS (SELECT DISTINCT unnest($1::text[]) AS id),
     -- A turn's tool event stands for the reply that made the call: a result leads to its
     -- call (RESULT), a call to the message whose tool edge (not a builtin one) points at it.
     tool AS MATERIALIZED (
       SELECT h.id AS hit_id, coalesce(
                (SELECT r.src FROM edges r WHERE r.dst = h.id AND r.tenant_id = $2
                   AND r.rel = (SELECT id FROM relations WHERE name = 'RESULT') ORDER BY r.id LIMIT 1),
                h.id) AS call_id
       FROM hit h
       WHERE (SELECT e.kind FROM events e WHERE e.id = h.id) IN ('tool_call', 'tool_result')
     ),
     via AS MATERIALIZED (
       SELECT h.id AS hit_id,
              coalesce((SELECT c.src FROM tool t
                        JOIN edges c ON c.dst = t.call_id AND c.tenant_id = $2
                        JOIN relations rr ON rr.id = c.rel AND NOT rr.builtin
                        JOIN events r ON r.id = c.src AND r.kind = 'message'
                        WHERE t.hit_id = h.id ORDER BY c.id LIMIT 1), h.id) AS id
       FROM hit h
     ),
     -- Materialized: each lookup runs once per hit, not once per column that reads it.
     turn AS MATERIALIZED (
       SELECT h.hit_id,
              coalesce((SELECT m.src FROM edges m WHERE m.dst = h.id AND m.rel = (SELECT id FROM msg)
                        AND m.tenant_id = $2 ORDER BY m.id LIMIT 1),
                       CASE WHEN (SELECT 1 FROM edges m WHERE m.src = h.id AND m.rel = (SELECT id FROM msg) LIMIT 1) = 1
                            THEN h.id END) AS user_event_id,
              h.id AS at_id
       FROM via h
     ), turn2 AS MATERIALIZED (
       SELECT t.hit_id, t.user_event_id,
              coalesce((SELECT m.dst FROM edges m WHERE m.src = t.user_event_id AND m.rel = (SELECT id FROM msg)
                        ORDER BY m.id LIMIT 1), t.at_id) AS reply_event_id
       FROM turn t
     )
     SELECT t.hit_id, t.user_event_id,
            (SELECT u.content ->> 'text' FROM events u WHERE u.id = t.user_event_id) AS user_text,
            t.reply_event_id,
            CASE WHEN t.user_event_id IS NULL THEN NULL
                 ELSE (SELECT r.content ->> 'text' FROM events r WHERE r.id = t.reply_event_id) END AS reply_text,
            (SELECT jsonb_agg(jsonb_build_object(
                      'tool', rel.name, 'args', coalesce(p.props -> 'args', '{}'::jsonb), 'version_id', v.id,
                      'key', d.canonical_key, 'version', v.version,
                      'latest', (SELECT max(l.version) FROM doc_versions l
                                 WHERE l.document_id = v.document_id AND ($3::timestamptz IS NULL OR l.created_at <= $3)))
                    ORDER BY p.created_at, p.id)
             FROM edges p
             JOIN relations rel ON rel.id = p.rel AND NOT rel.builtin
             LEFT JOIN doc_versions v ON v.id = p.dst
             LEFT JOIN documents d ON d.id = v.document_id
             WHERE t.user_event_id IS NOT NULL AND p.src = t.reply_event_id AND ${edgeVisibleAt('$3', 'p')}
            ) AS procedures,
            (SELECT CASE WHEN (h.content ->> 'truncated')::boolean THEN h.content ->> 'artifactId' END
             FROM events h WHERE h.id = t.hit_id) AS truncated_artifact
     -- One index lookup per hit (scalar subqueries): a hash join would read every event.
     FROM turn2 t`,
    [eventIds, tenantId, asOf],
    PREPARED,
  )
  return new Map(rows.map((r) => [r.hit_id, r]))
}

/** A hit as the evidence section shows it: its whole turn when it has one, else its own text. */
export function renderTurn(hit: { kind: string; conversationId: string; createdAt: string; text: string }, turn: TurnRow | undefined): string {
  const head = `[${turn?.user_event_id ? 'past turn' : hit.kind} · conversation ${hit.conversationId} · ${day(hit.createdAt)}]`
  if (!turn?.user_event_id) return `${head}\n${hit.text}`
  const lines = [head, `Q: ${turn.user_text ?? ''}`]
  const procs = turn.procedures ?? []
  if (procs.length > 0) {
    lines.push(`Procedures: ${procs.map((p) => `${p.tool} ${JSON.stringify(p.args)}`).join('; ')}`)
  }
  // A hit on one of the turn's tool events: what it said, which is what the query matched.
  if (hit.kind === 'tool_result' || hit.kind === 'tool_call') lines.push(`${hit.kind === 'tool_result' ? 'Output' : 'Call'}: ${hit.text}`)
  lines.push(`A: ${turn.reply_text ?? ''}`)
  const docs = procs.filter((p) => p.key !== null && p.version !== null)
  if (docs.length > 0) {
    lines.push(
      `${DOCUMENTS_LINE}${docs
        .map((p) => {
          const behind = (p.latest ?? 0) - (p.version ?? 0)
          return behind > 0
            ? `${p.key} (seen v${p.version}, now v${p.latest}: ${behind} newer version${behind === 1 ? '' : 's'})`
            : `${p.key} (v${p.version}, current)`
        })
        .join(', ')}`,
    )
  }
  return lines.join('\n')
}


/** The turns of `ids` visible to `o.tenantId` on `o.channel`, in the order asked. */
export async function readTurns(ctx: EngineContext, ids: string[], o: CheckedTurnsOptions): Promise<TurnView[]> {
  const asOf = o.asOf === undefined ? null : toDate(o.asOf)
  return ctx.db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT id FROM events WHERE id = ANY($1::text[]) AND tenant_id = $2 AND sensitivity = ANY($3::text[])
         AND ($4::timestamptz IS NULL OR created_at <= $4)`,
      [ids, o.tenantId, allowedSensitivities(o.channel), asOf],
    )
    const visible = new Set(rows.map((r) => r.id))
    const found = await expandTurns(tx, [...visible], o.tenantId, asOf)
    return ids.flatMap((id) => {
      const t = found.get(id)
      if (!visible.has(id) || !t) return []
      return [turnView(id, t)]
    })
  })
}

/** A turn row as `turns` returns it: no question or answer for an event outside a turn. */
function turnView(eventId: string, t: TurnRow): TurnView {
  return {
    eventId,
    userEventId: t.user_event_id,
    userText: t.user_event_id ? t.user_text : null,
    replyEventId: t.user_event_id ? t.reply_event_id : null,
    replyText: t.user_event_id ? t.reply_text : null,
    procedures: (t.procedures ?? []).map((p) => ({
      tool: p.tool,
      args: p.args,
      versionId: p.version_id,
      document: p.key,
      version: p.version,
      latestVersion: p.latest,
      staleness: p.version === null || p.latest === null ? null : p.latest - p.version,
    })),
  }
}
