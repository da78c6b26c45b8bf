import { currentId } from '../kernel/aliases.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { edgeVisibleAt } from '../graph/edges.ts'
import { allowedSensitivities, readChannel } from '../privacy/channels.ts'
import { identifier } from '../kernel/scope.ts'
import { asOfParam, iso, type TimeInput, timeInput } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'
import {
  type DocumentInfo,
  type DocumentRef,
  type DocumentVersion,
  readOptions,
  resolveDocument,
  tenantOption,
  toVersion,
  VERSION_COLUMNS,
  type VersionRow,
} from './records.ts'

const interactionOptions = z
  .object({
    asOf: timeInput.optional(),
    tenantId: identifier.default('default'),
    /** Only events this channel may show (default 'private'). */
    channel: readChannel,
    limit: z.number().int().min(1).max(1000).default(50),
  })
  .strict()
export type InteractionOptions = z.input<typeof interactionOptions>

/** A conversation's touch of a document: which event read or wrote which version, and when. */
export interface DocumentInteraction {
  edgeId: string
  /** The tool (or relation) of the touch, e.g. `read_file`. */
  rel: string
  eventId: string
  conversationId: string
  versionId: string
  version: number
  /** Versions the document has had since the one touched (0: the latest then). */
  staleness: number
  createdAt: string
}

/** A document by reference (`documents.get`). */
export async function getDocument(ctx: EngineContext, ref: DocumentRef, options: { tenantId?: string }): Promise<DocumentInfo> {
  const o = parseInput(readOptions, options, 'document options')
  return resolveDocument(ctx, ref, o.tenantId)
}

/** A document's versions, oldest first, without content (`documents.history`). */
export async function documentHistory(
  ctx: EngineContext,
  ref: DocumentRef,
  options: { asOf?: TimeInput; tenantId?: string },
): Promise<{ document: DocumentInfo; versions: DocumentVersion[] }> {
  const o = parseInput(readOptions, options, 'history options')
  const document = await resolveDocument(ctx, ref, o.tenantId)
  const { rows } = await ctx.db.query<VersionRow>(
    `SELECT ${VERSION_COLUMNS} FROM doc_versions v
     WHERE v.document_id = $1 AND ($2::timestamptz IS NULL OR v.created_at <= $2)
     ORDER BY v.version`,
    [document.id, asOfParam(o.asOf)],
  )
  return { document, versions: rows.map(toVersion) }
}

/** The conversations' touches of a document, newest first (`documents.interactions`). */
export async function documentInteractions(
  ctx: EngineContext,
  ref: DocumentRef,
  options: InteractionOptions,
): Promise<DocumentInteraction[]> {
  const o = parseInput(interactionOptions, options, 'interaction options')
  const document = await resolveDocument(ctx, ref, o.tenantId)
  const { rows } = await ctx.db.query<{
    edge_id: string
    rel: string
    event_id: string
    conversation_id: string
    version_id: string
    version: number
    staleness: number
    created_at: Date
  }>(
    `SELECT e.id AS edge_id, r.name AS rel, e.src AS event_id, e.conversation_id, e.dst AS version_id, v.version,
            (SELECT max(l.version) FROM doc_versions l
             WHERE l.document_id = $1 AND ($2::timestamptz IS NULL OR l.created_at <= $2)) - v.version AS staleness,
            e.created_at
     FROM edges e
     JOIN relations r ON r.id = e.rel
     JOIN doc_versions v ON v.id = e.dst
     JOIN events ev ON ev.id = e.src AND ev.sensitivity = ANY($4::text[])
     WHERE e.document_id = $1 AND e.tenant_id = $3 AND e.conversation_id IS NOT NULL AND ${edgeVisibleAt('$2')}
     ORDER BY e.created_at DESC, e.id DESC
     LIMIT $5`,
    [document.id, asOfParam(o.asOf), document.tenantId, allowedSensitivities(o.channel), o.limit],
  )
  return rows.map((r) => ({
    edgeId: r.edge_id,
    rel: r.rel,
    eventId: r.event_id,
    conversationId: r.conversation_id,
    versionId: r.version_id,
    version: r.version,
    staleness: r.staleness,
    createdAt: iso(r.created_at),
  }))
}

/**
 * One version with its content, read through `contentOf` (`documents.version`). A version a
 * sync folded into an equal one is read as that one.
 */
export async function documentVersion(ctx: EngineContext, versionId: string, options: { tenantId?: string }): Promise<DocumentVersion> {
  parseInput(identifier, versionId, 'version id')
  const o = parseInput(tenantOption, options, 'version options')
  const { rows } = await ctx.db.query<VersionRow>(
    `SELECT ${VERSION_COLUMNS}, coalesce(v.content, s.content) AS content FROM doc_versions v
     LEFT JOIN doc_versions s ON s.id = v.content_of
     WHERE v.id = ${currentId('$1')} AND v.document_id IN (SELECT id FROM documents WHERE tenant_id = $2)`,
    [versionId, o.tenantId],
  )
  const row = rows[0]
  if (!row) throw new MemoryError('NOT_FOUND', `No document version ${versionId}`)
  return toVersion(row)
}
