import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { requireConversation } from '../log/events.ts'
import { sha256Hex } from '../kernel/hash.ts'
import { newId } from '../kernel/ids.ts'
import { storableText } from '../kernel/json.ts'
import { formatBytes, MAX_DOCUMENT_BYTES, utf8Length } from '../kernel/limits.ts'
import { edgeVisibleAt, insertEdges } from '../graph/edges.ts'
import { canonicalKeyOf, type PathResolver, URL_SCHEME, type Workspace } from './paths.ts'
import { allowedSensitivities, readChannel } from '../privacy/channels.ts'
import { countRedactions, type RedactionCount, redact } from '../privacy/redact.ts'
import { identifier, turnScope } from '../kernel/scope.ts'
import { asOfParam, iso, type TimeInput, timeInput, toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'

export const PROVENANCES = ['initial', 'agent', 'external'] as const
/**
 * Why a version exists: `initial` — the first time Engram saw the document; `agent` — an
 * agent's write produced it; `external` — a later read found content nobody recorded.
 */
export type Provenance = (typeof PROVENANCES)[number]

/** What caused an observation: a read (the default) or the agent's own write. */
export const OBSERVATION_CAUSES = ['read', 'agent_write'] as const
export type ObservationCause = (typeof OBSERVATION_CAUSES)[number]

const sha256 = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'must be a hex SHA-256 (64 characters)')
  .transform((s) => s.toLowerCase())

/** A document reference with what was seen: path or url, content or its hash. */
export const documentSight = z
  .object({
    path: storableText.pipe(z.string().min(1).max(4096)).optional(),
    url: storableText.pipe(z.string().min(1).max(8192)).optional(),
    content: storableText.optional(),
    contentHash: sha256.optional(),
  })
  .strict()
  .refine((d) => (d.path === undefined) !== (d.url === undefined), 'give exactly one of path or url')
  .refine((d) => d.content !== undefined || d.contentHash !== undefined, 'give content or contentHash')

export type DocumentSight = z.input<typeof documentSight>

export interface PreparedSight {
  keyKind: 'path' | 'url'
  canonicalKey: string
  hash: string
  content: string | null
  bytes: number | null
  /** Secrets replaced in the stored content (the hash is of the content as seen). */
  redactions: RedactionCount[]
}

/**
 * Canonicalises the key, checks the size, hashes the content as seen (so identical files
 * match) and redacts what will be stored. Throws before anything is written.
 */
export async function prepareSight(
  sight: z.output<typeof documentSight>,
  workspace: Workspace,
  resolvePath?: PathResolver,
): Promise<PreparedSight> {
  const key = canonicalKeyOf(sight, workspace, resolvePath)
  if (sight.content === undefined) {
    return { ...key, hash: sight.contentHash as string, content: null, bytes: null, redactions: [] }
  }
  const bytes = utf8Length(sight.content)
  if (bytes > MAX_DOCUMENT_BYTES) {
    throw new MemoryError(
      'INVALID_INPUT',
      `Document content is ${formatBytes(bytes)}; the limit is ${formatBytes(MAX_DOCUMENT_BYTES)} (MAX_DOCUMENT_BYTES). ` +
        'Observe it by contentHash instead.',
      { details: { bytes, limit: MAX_DOCUMENT_BYTES } },
    )
  }
  const hash = await sha256Hex(sight.content)
  if (sight.contentHash !== undefined && sight.contentHash !== hash) {
    throw new MemoryError('INVALID_INPUT', 'contentHash does not match the SHA-256 of content', {
      details: { given: sight.contentHash, computed: hash },
    })
  }
  const redacted = redact(sight.content)
  return { ...key, hash, content: redacted.text, bytes, redactions: countRedactions(redacted.findings) }
}

export interface Observation {
  documentId: string
  versionId: string
  version: number
  /** True when this observation created the version (the content was new). */
  created: boolean
  /** True when this observation created the document itself. */
  documentCreated: boolean
  provenance: Provenance
  canonicalKey: string
  keyKind: 'path' | 'url'
  contentHash: string
  /** The VERSION_OF edge written with a new version; null when the version already existed. */
  versionOfEdgeId: string | null
  /** Secrets replaced before the content was stored, by type; absent when there were none. */
  redactions?: RedactionCount[]
}

/**
 * Finds or creates the document and adds a version only when the hash differs from the
 * latest one, inside the caller's transaction. Each new version is tied to its document by
 * a VERSION_OF edge (structural: it belongs to no conversation).
 */
export async function observeInTx(
  tx: Queryable,
  w: PreparedSight & {
    tenantId: string
    mode: Workspace['mode']
    cause: ObservationCause
    conversationId: string | null
    eventId: string | null
    createdAt: Date
    /** The engine's time now: a new version may not be dated later (it would hold back every version after). */
    now: Date
  },
): Promise<Observation> {
  const { rows } = await tx.query<{
    document_id: string
    version_id: string | null
    version: number | null
    content_hash: string | null
    provenance: Provenance | null
    created_at: Date | null
  }>(
    `SELECT d.id AS document_id, v.id AS version_id, v.version, v.content_hash, v.provenance, v.created_at
     FROM documents d
     LEFT JOIN LATERAL (
       SELECT id, version, content_hash, provenance, created_at FROM doc_versions
       WHERE document_id = d.id ORDER BY version DESC LIMIT 1
     ) v ON true
     WHERE d.tenant_id = $1 AND d.key_kind = $2 AND d.canonical_key = $3`,
    [w.tenantId, w.keyKind, w.canonicalKey],
    { prepare: true },
  )
  const found = rows[0]
  const base = { canonicalKey: w.canonicalKey, keyKind: w.keyKind, contentHash: w.hash }
  if (found?.version_id && found.content_hash === w.hash) {
    return {
      ...base,
      documentId: found.document_id,
      versionId: found.version_id,
      version: found.version as number,
      created: false,
      documentCreated: false,
      provenance: found.provenance as Provenance,
      versionOfEdgeId: null,
    }
  }
  // Versions are numbered in time: a new one dated before the latest would be newer by number
  // and older by time, and every staleness as of a time between them would be wrong.
  if (w.createdAt > w.now) {
    throw new MemoryError(
      'INVALID_INPUT',
      `A new version of ${w.canonicalKey} cannot be dated ${w.createdAt.toISOString()}, a time to come (now ${w.now.toISOString()})`,
      { details: { field: 'createdAt' } },
    )
  }
  if (found?.created_at && w.createdAt < found.created_at) {
    throw new MemoryError(
      'INVALID_INPUT',
      `A new version of ${w.canonicalKey} cannot be dated ${w.createdAt.toISOString()}, before its latest (v${found.version}, ${found.created_at.toISOString()})`,
      { details: { field: 'createdAt' } },
    )
  }
  const documentId = found?.document_id ?? newId('document')
  const versionId = newId('version')
  const version = (found?.version ?? 0) + 1
  const versionOfEdgeId = newId('edge')
  const provenance: Provenance = w.cause === 'agent_write' ? 'agent' : found?.version_id ? 'external' : 'initial'
  await tx.query(
    `WITH d AS (
       INSERT INTO documents (id, tenant_id, canonical_key, key_kind, mode, created_at)
       SELECT $1, $2, $3, $4, $5, $12 WHERE $13::boolean
     ), v AS (
       INSERT INTO doc_versions (id, document_id, version, content_hash, content, bytes, provenance,
                                 conversation_id, event_id, created_at)
       VALUES ($6, $1, $7, $8, $9, $10, $11, $14, $15, $12)
     )
     INSERT INTO edges (id, src, rel, dst, tenant_id, created_at)
     VALUES ($16, $6, (SELECT id FROM relations WHERE name = 'VERSION_OF'), $1, $2, $12)`,
    [
      documentId,
      w.tenantId,
      w.canonicalKey,
      w.keyKind,
      w.mode,
      versionId,
      version,
      w.hash,
      w.content,
      w.bytes,
      provenance,
      w.createdAt,
      found === undefined,
      w.conversationId,
      w.eventId,
      versionOfEdgeId,
    ],
    { prepare: true },
  )
  return {
    ...base,
    documentId,
    versionId,
    version,
    created: true,
    documentCreated: found === undefined,
    provenance,
    versionOfEdgeId,
  }
}

const observeInput = z
  .object({
    path: z.string().optional(),
    url: z.string().optional(),
    content: z.string().optional(),
    contentHash: z.string().optional(),
    conversationId: identifier,
    cause: z.enum(OBSERVATION_CAUSES).default('read'),
    scope: turnScope.default({ tenantId: 'default' }),
    /** The event (e.g. a tool call) the observation belongs to. */
    eventId: identifier.optional(),
    createdAt: timeInput.optional(),
  })
  .strict()

export type ObserveDocumentInput = z.input<typeof observeInput>

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

export interface DeduplicateResult {
  /** Distinct contents that were stored more than once. */
  contents: number
  /** Versions emptied: each now reads its content from the version named in `contentOf`. */
  versions: number
  /** Bytes of stored content no longer kept twice. */
  bytesFreed: number
}

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

/** A document by id, path or URL: `'doc_…'`, `'src/a.ts'`, `'https://…'`, or an object. */
export type DocumentRef = string | { documentId: string } | { path: string } | { url: string }

const DOCUMENT_ID = /^doc_[0-7][0-9a-hjkmnp-tv-z]{25}$/

const documentRef = z.union([
  storableText.pipe(z.string().min(1)),
  z.object({ documentId: identifier }).strict(),
  z.object({ path: storableText.pipe(z.string().min(1)) }).strict(),
  z.object({ url: storableText.pipe(z.string().min(1)) }).strict(),
])
const readOptions = z.object({ asOf: timeInput.optional(), tenantId: identifier.default('default') }).strict()
const tenantOption = z.object({ tenantId: identifier.default('default') }).strict()
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

interface VersionRow {
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

/** Refuses an observation's event that is not one of the tenant's, in that conversation. */
async function requireEventIn(tx: Queryable, eventId: string, tenantId: string, conversationId: string): Promise<void> {
  const { rows } = await tx.query<{ conversation_id: string }>('SELECT conversation_id FROM events WHERE id = $1 AND tenant_id = $2', [
    eventId,
    tenantId,
  ])
  const event = rows[0]
  if (!event) throw new MemoryError('NOT_FOUND', `No event ${eventId}`, { details: { eventId } })
  if (event.conversation_id !== conversationId) {
    throw new MemoryError('INVALID_INPUT', `Event ${eventId} belongs to conversation ${event.conversation_id}, not ${conversationId}`, {
      details: { eventId },
    })
  }
}

/** observeDocument and the document reads. */
export function createDocuments(ctx: EngineContext) {
  async function resolve(ref: DocumentRef, tenantId: string): Promise<DocumentInfo> {
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
        ? 'SELECT * FROM documents WHERE tenant_id = $1 AND id = $2'
        : 'SELECT * FROM documents WHERE tenant_id = $1 AND key_kind = $2 AND canonical_key = $3',
      byId !== undefined ? [tenantId, byId] : [tenantId, key?.keyKind, key?.canonicalKey],
    )
    const row = rows[0]
    if (!row) throw new MemoryError('NOT_FOUND', `No document ${byId ?? key?.canonicalKey}`, { details: { ref } })
    return toDocument(row)
  }

  async function stalenessOf(versionId: string, options: { asOf?: TimeInput; tenantId?: string } = {}): Promise<Staleness> {
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
       WHERE v.id = $1 AND ($2::timestamptz IS NULL OR v.created_at <= $2)
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

  return {
    /**
     * Read-wrapped versioning: records what a document looks like now. The document (by
     * canonical path or URL) is created on first sight; a version is added only when the
     * content hash differs from the latest. Provenance: `initial` the first time, `agent`
     * when the cause is the agent's own write, `external` when a read finds an unrecorded change.
     *
     * @example
     * const seen = await memory.observeDocument({ path: 'README.md', content, conversationId: 'c1' })
     * seen.created // false when the file is unchanged since the last observation
     */
    async observeDocument(input: ObserveDocumentInput): Promise<Observation> {
      requireConversation(input, 'top')
      const i = parseInput(observeInput, input, 'document observation')
      const sight = parseInput(
        documentSight,
        {
          ...(i.path === undefined ? {} : { path: i.path }),
          ...(i.url === undefined ? {} : { url: i.url }),
          ...(i.content === undefined ? {} : { content: i.content }),
          ...(i.contentHash === undefined ? {} : { contentHash: i.contentHash }),
        },
        'document observation',
      )
      const prepared = await prepareSight(sight, ctx.workspace, ctx.resolvePath)
      const createdAt = i.createdAt === undefined ? ctx.now() : toDate(i.createdAt)
      const seen = await ctx.db.transaction(async (tx) => {
        if (i.eventId !== undefined) await requireEventIn(tx, i.eventId, i.scope.tenantId, i.conversationId)
        const seen = await observeInTx(tx, {
          ...prepared,
          tenantId: i.scope.tenantId,
          mode: ctx.workspace.mode,
          cause: i.cause,
          conversationId: i.conversationId,
          eventId: i.eventId ?? null,
          now: ctx.now(),
          createdAt,
        })
        // The event that read or wrote it touched this version: as a turn's procedure does, so
        // documents.interactions and buildContext's document links find it.
        if (i.eventId !== undefined) {
          await insertEdges(tx, [
            {
              src: i.eventId,
              rel: 'OBSERVED',
              dst: seen.versionId,
              props: { cause: i.cause },
              tenantId: i.scope.tenantId,
              conversationId: i.conversationId,
              ...(i.scope.runId === undefined ? {} : { runId: i.scope.runId }),
              createdAt,
            },
          ])
        }
        return seen
      })
      return prepared.redactions.length > 0 ? { ...seen, redactions: prepared.redactions } : seen
    },

    documents: {
      /**
       * A document by id, path or URL (paths are canonicalised as on write).
       *
       * @example
       * const doc = await memory.documents.get('src/auth.ts')
       */
      async get(ref: DocumentRef, options: { tenantId?: string } = {}): Promise<DocumentInfo> {
        const o = parseInput(readOptions, options, 'document options')
        return resolve(ref, o.tenantId)
      },

      /**
       * The versions of a document, oldest first (without content).
       *
       * @example
       * const { document, versions } = await memory.documents.history('README.md')
       */
      async history(
        ref: DocumentRef,
        options: { asOf?: TimeInput; tenantId?: string } = {},
      ): Promise<{ document: DocumentInfo; versions: DocumentVersion[] }> {
        const o = parseInput(readOptions, options, 'history options')
        const document = await resolve(ref, o.tenantId)
        const { rows } = await ctx.db.query<VersionRow>(
          `SELECT ${VERSION_COLUMNS} FROM doc_versions v
           WHERE v.document_id = $1 AND ($2::timestamptz IS NULL OR v.created_at <= $2)
           ORDER BY v.version`,
          [document.id, asOfParam(o.asOf)],
        )
        return { document, versions: rows.map(toVersion) }
      },

      /**
       * The conversations' touches of a document, newest first: each event that read or wrote
       * one of its versions (a turn's procedures), with the version and how stale it is now
       * (or as of `asOf`). Events above what `channel` may show are left out.
       *
       * @example
       * const touches = await memory.documents.interactions('src/auth.ts', { limit: 10 })
       */
      async interactions(ref: DocumentRef, options: InteractionOptions = {}): Promise<DocumentInteraction[]> {
        const o = parseInput(interactionOptions, options, 'interaction options')
        const document = await resolve(ref, o.tenantId)
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
      },

      /**
       * One version with its content (null when only a hash was seen or it was forgotten).
       *
       * @example
       * const { content } = await memory.documents.version(versionId)
       */
      async version(versionId: string, options: { tenantId?: string } = {}): Promise<DocumentVersion> {
        parseInput(identifier, versionId, 'version id')
        const o = parseInput(tenantOption, options, 'version options')
        const { rows } = await ctx.db.query<VersionRow>(
          `SELECT ${VERSION_COLUMNS}, coalesce(v.content, s.content) AS content FROM doc_versions v
           LEFT JOIN doc_versions s ON s.id = v.content_of
           WHERE v.id = $1 AND v.document_id IN (SELECT id FROM documents WHERE tenant_id = $2)`,
          [versionId, o.tenantId],
        )
        const row = rows[0]
        if (!row) throw new MemoryError('NOT_FOUND', `No document version ${versionId}`)
        return toVersion(row)
      },

      /**
       * What the version history says about a document: staleness of each past version,
       * volatility, familiarity — computed in SQL, as of now or `asOf`.
       *
       * @example
       * const s = await memory.documents.signals('src/auth.ts')
       * s.staleness[pastVersionId] // versions since that one
       */
      async signals(ref: DocumentRef, options: { asOf?: TimeInput; tenantId?: string } = {}): Promise<DocumentSignals> {
        const o = parseInput(readOptions, options, 'signals options')
        const document = await resolve(ref, o.tenantId)
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
      },

      /**
       * Stores each identical content once (maintenance; run it when you like). Among the
       * versions of a tenant's documents that hold the same content — the same file under two
       * paths, a project cloned twice, a revert to an earlier text — the earliest keeps it and
       * the others are emptied and name it in `contentOf`; `documents.version()` reads through
       * the link, and nothing else about a version changes. Versions known only by hash and
       * versions whose content was forgotten are left alone. One transaction; every tenant
       * unless `tenantId` is given. Running it again finds only what came in since.
       *
       * @example
       * const { versions, bytesFreed } = await memory.documents.deduplicate()
       */
      async deduplicate(options: { tenantId?: string } = {}): Promise<DeduplicateResult> {
        const o = parseInput(z.object({ tenantId: identifier.optional() }).strict(), options, 'deduplicate options')
        return ctx.db.transaction(async (tx) => {
          await tx.query(`SET LOCAL engram.deduplicating = 'on'`)
          const { rows } = await tx.query<DeduplicateResult>(
            `WITH repeated AS (
               SELECT d.tenant_id, v.content_hash
               FROM doc_versions v JOIN documents d ON d.id = v.document_id
               WHERE v.content IS NOT NULL AND ($1::text IS NULL OR d.tenant_id = $1)
               GROUP BY 1, 2 HAVING count(*) > 1
             ), holders AS (
               SELECT v.id, first_value(v.id) OVER (PARTITION BY d.tenant_id, v.content_hash ORDER BY v.created_at, v.id) AS keeper
               FROM repeated r
               JOIN documents d ON d.tenant_id = r.tenant_id
               JOIN doc_versions v ON v.document_id = d.id AND v.content_hash = r.content_hash
               WHERE v.content IS NOT NULL
             ), emptied AS (
               UPDATE doc_versions t SET content = NULL, content_of = h.keeper
               FROM holders h JOIN doc_versions k ON k.id = h.keeper
               WHERE t.id = h.id AND h.id <> h.keeper AND t.content = k.content
               RETURNING h.keeper, octet_length(k.content) AS stored
             )
             SELECT count(DISTINCT keeper)::int AS contents, count(*)::int AS versions,
                    coalesce(sum(stored), 0)::float8 AS "bytesFreed"
             FROM emptied`,
            [o.tenantId ?? null],
          )
          return rows[0] ?? { contents: 0, versions: 0, bytesFreed: 0 }
        })
      },

      /**
       * How many versions a document gained since the given version was current.
       *
       * @example
       * const { staleness } = await memory.documents.stalenessOf(versionIdSeenLastWeek)
       */
      stalenessOf,
    },
  }
}
