import { currentId } from '../kernel/aliases.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { storableText } from '../kernel/json.ts'
import { canonicalKeyOf, URL_SCHEME, type Workspace } from './paths.ts'
import { identifier } from '../kernel/scope.ts'
import { iso, timeInput } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'
import type { Provenance } from './observation.ts'

/** A document (the identity behind all its versions) as reads return it. */
export interface DocumentInfo {
  id: string
  tenantId: string
  canonicalKey: string
  keyKind: 'path' | 'url'
  mode: Workspace['mode']
  createdAt: string
}

export interface DocumentVersion {
  id: string
  documentId: string
  version: number
  contentHash: string
  bytes: number | null
  provenance: Provenance
  conversationId: string | null
  eventId: string | null
  createdAt: string
  /**
   * The version that stores this one's content, when `documents.deduplicate()` found the
   * same content there (in this document or another); null when the version stores its own.
   */
  contentOf: string | null
  /** Only from `documents.version`; null when only a hash was seen or the content was forgotten. */
  content?: string | null
}

/** A document by id, path or URL: `'doc_…'`, `'src/a.ts'`, `'https://…'`, or an object. */
export type DocumentRef = string | { documentId: string } | { path: string } | { url: string }

const DOCUMENT_ID = /^doc_[0-7][0-9a-hjkmnp-tv-z]{25}$/

const documentRef = z.union([
  storableText.pipe(z.string().min(1)),
  z.object({ documentId: identifier }).strict(),
  z.object({ path: storableText.pipe(z.string().min(1)) }).strict(),
  z.object({ url: storableText.pipe(z.string().min(1)) }).strict(),
])
/** The options every document read takes. */
export const readOptions = z.object({ asOf: timeInput.optional(), tenantId: identifier.default('default') }).strict()
export const tenantOption = z.object({ tenantId: identifier.default('default') }).strict()

export interface VersionRow {
  id: string
  document_id: string
  version: number
  content_hash: string
  bytes: number | null
  provenance: Provenance
  conversation_id: string | null
  event_id: string | null
  created_at: Date | string
  content_of: string | null
  content?: string | null
}

export function toVersion(row: VersionRow): DocumentVersion {
  return {
    id: row.id,
    documentId: row.document_id,
    version: row.version,
    contentHash: row.content_hash,
    bytes: row.bytes,
    provenance: row.provenance,
    conversationId: row.conversation_id,
    eventId: row.event_id,
    createdAt: iso(row.created_at),
    contentOf: row.content_of ?? null,
    ...(row.content === undefined ? {} : { content: row.content }),
  }
}

export const VERSION_COLUMNS = `v.id, v.document_id, v.version, v.content_hash, v.bytes, v.provenance, v.conversation_id,
  v.event_id, v.created_at, v.content_of`

interface DocumentRow {
  id: string
  tenant_id: string
  canonical_key: string
  key_kind: 'path' | 'url'
  mode: Workspace['mode']
  created_at: Date | string
}

export function toDocument(row: DocumentRow): DocumentInfo {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    canonicalKey: row.canonical_key,
    keyKind: row.key_kind,
    mode: row.mode,
    createdAt: iso(row.created_at),
  }
}

/**
 * The document a reference names in the tenant; NOT_FOUND when there is none. An id a sync
 * retired names the document that took its key.
 */
export async function resolveDocument(ctx: EngineContext, ref: DocumentRef, tenantId: string): Promise<DocumentInfo> {
  const r = parseInput(documentRef, ref, 'document reference')
  let byId: string | undefined
  let key: { keyKind: 'path' | 'url'; canonicalKey: string } | undefined
  if (typeof r === 'string') {
    if (DOCUMENT_ID.test(r)) byId = r
    else key = canonicalKeyOf(URL_SCHEME.test(r) ? { url: r } : { path: r }, ctx.workspace, ctx.resolvePath)
  } else if ('documentId' in r) byId = r.documentId
  else key = canonicalKeyOf(r, ctx.workspace, ctx.resolvePath)
  const { rows } = await ctx.db.query<DocumentRow>(
    byId !== undefined
      ? `SELECT * FROM documents WHERE tenant_id = $1 AND id = ${currentId('$2')}`
      : 'SELECT * FROM documents WHERE tenant_id = $1 AND key_kind = $2 AND canonical_key = $3',
    byId !== undefined ? [tenantId, byId] : [tenantId, key?.keyKind, key?.canonicalKey],
  )
  const row = rows[0]
  if (!row) throw new MemoryError('NOT_FOUND', `No document ${byId ?? key?.canonicalKey}`, { details: { ref } })
  return toDocument(row)
}
