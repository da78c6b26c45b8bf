import { currentId } from '../kernel/aliases.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { identifier } from '../kernel/scope.ts'
import { asOfParam, iso, type TimeInput } from '../kernel/time.ts'
import { parseInput } from '../kernel/validate.ts'
import { type DocumentRef, readOptions, resolveDocument } from './records.ts'

export interface DocumentSignals {
  documentId: string
  canonicalKey: string
  asOf: string | null
  versionCount: number
  latest: { versionId: string; version: number; createdAt: string }
  /** For every version id: how many versions came after it (0 for the latest). */
  staleness: Record<string, number>
  /** Changes per day: (versions − 1) / days from the first to the latest version, at least one day. */
  volatility: number
  /** Distinct conversations that created or touched (by an edge) any version. */
  familiarity: number
  /** Versions found by a read that nobody recorded writing. */
  externalChanges: number
  /** Versions written by an agent. */
  agentChanges: number
}

export interface Staleness {
  versionId: string
  documentId: string
  version: number
  latestVersionId: string
  latestVersion: number
  /** Versions between this one and the latest. */
  staleness: number
}

/** How many versions a document gained since the given version was current (`documents.stalenessOf`). */
export async function versionStaleness(
  ctx: EngineContext,
  versionId: string,
  options: { asOf?: TimeInput; tenantId?: string },
): Promise<Staleness> {
  parseInput(identifier, versionId, 'version id')
  const o = parseInput(readOptions, options, 'staleness options')
  const { rows } = await ctx.db.query<{
    id: string
    document_id: string
    version: number
    latest_id: string
    latest_version: number
  }>(
    `SELECT v.id, v.document_id, v.version, l.id AS latest_id, l.version AS latest_version
     FROM doc_versions v
     JOIN LATERAL (
       SELECT id, version FROM doc_versions
       WHERE document_id = v.document_id AND ($2::timestamptz IS NULL OR created_at <= $2)
       ORDER BY version DESC LIMIT 1
     ) l ON true
     WHERE v.id = ${currentId('$1')} AND ($2::timestamptz IS NULL OR v.created_at <= $2)
       AND v.document_id IN (SELECT id FROM documents WHERE tenant_id = $3)`,
    [versionId, asOfParam(o.asOf), o.tenantId],
  )
  const row = rows[0]
  if (!row) throw new MemoryError('NOT_FOUND', `No document version ${versionId}${o.asOf ? ' at that time' : ''}`)
  return {
    versionId: row.id,
    documentId: row.document_id,
    version: row.version,
    latestVersionId: row.latest_id,
    latestVersion: row.latest_version,
    staleness: row.latest_version - row.version,
  }
}

/** Staleness, volatility and familiarity of a document, in one query (`documents.signals`). */
export async function documentSignals(
  ctx: EngineContext,
  ref: DocumentRef,
  options: { asOf?: TimeInput; tenantId?: string },
): Promise<DocumentSignals> {
  const o = parseInput(readOptions, options, 'signals options')
  const document = await resolveDocument(ctx, ref, o.tenantId)
  const asOf = asOfParam(o.asOf)
  const { rows } = await ctx.db.query<{
    n: number
    latest_id: string | null
    latest_version: number | null
    latest_at: Date | null
    span_days: number | null
    external: number
    agent: number
    staleness: Record<string, number> | null
    familiarity: number
  }>(
    `WITH v AS (
       SELECT * FROM doc_versions WHERE document_id = $1 AND ($2::timestamptz IS NULL OR created_at <= $2)
     ), latest AS (
       SELECT id, version, created_at FROM v ORDER BY version DESC LIMIT 1
     ), touches AS (
       SELECT conversation_id FROM v WHERE conversation_id IS NOT NULL
       UNION
       SELECT e.conversation_id FROM edges e
       WHERE (e.dst IN (SELECT id FROM v) OR e.src IN (SELECT id FROM v))
         AND e.tenant_id = $3 AND e.conversation_id IS NOT NULL
         AND (CASE WHEN $2::timestamptz IS NULL THEN e.tombstoned_at IS NULL
              ELSE e.created_at <= $2 AND (e.tombstoned_at IS NULL OR e.tombstoned_at > $2) END)
     )
     SELECT (SELECT count(*)::int FROM v) AS n,
            (SELECT id FROM latest) AS latest_id,
            (SELECT version FROM latest) AS latest_version,
            (SELECT created_at FROM latest) AS latest_at,
            (SELECT extract(epoch FROM max(created_at) - min(created_at))::float8 / 86400 FROM v) AS span_days,
            (SELECT count(*)::int FROM v WHERE provenance = 'external') AS external,
            (SELECT count(*)::int FROM v WHERE provenance = 'agent') AS agent,
            (SELECT jsonb_object_agg(v.id, (SELECT version FROM latest) - v.version) FROM v) AS staleness,
            (SELECT count(*)::int FROM touches) AS familiarity`,
    [document.id, asOf, document.tenantId],
  )
  const row = rows[0]
  if (!row || row.latest_id === null || row.latest_version === null || row.latest_at === null) {
    throw new MemoryError('NOT_FOUND', `Document ${document.canonicalKey} had no version at that time`)
  }
  return {
    documentId: document.id,
    canonicalKey: document.canonicalKey,
    asOf: asOf === null ? null : iso(asOf),
    versionCount: row.n,
    latest: { versionId: row.latest_id, version: row.latest_version, createdAt: iso(row.latest_at) },
    staleness: row.staleness ?? {},
    volatility: (row.n - 1) / Math.max(row.span_days ?? 0, 1),
    familiarity: row.familiarity,
    externalChanges: row.external,
    agentChanges: row.agent,
  }
}
