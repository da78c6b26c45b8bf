import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { requireConversation } from '../log/events.ts'
import { sha256Hex } from '../kernel/hash.ts'
import { newId } from '../kernel/ids.ts'
import { storableText } from '../kernel/json.ts'
import { formatBytes, MAX_DOCUMENT_BYTES, utf8Length } from '../kernel/limits.ts'
import { insertEdges } from '../graph/edges.ts'
import { canonicalKeyOf, type PathResolver, type Workspace } from './paths.ts'
import { countRedactions, type RedactionCount, redact } from '../privacy/redact.ts'
import { identifier, turnScope } from '../kernel/scope.ts'
import { timeInput, toDate } from '../kernel/time.ts'
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
export function prepareSight(
  sight: z.output<typeof documentSight>,
  workspace: Workspace,
  resolvePath?: PathResolver,
): PreparedSight {
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
  const hash = sha256Hex(sight.content)
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

/** A prepared sight with where and when it was seen: what `observeInTx` records. */
export type VersionWrite = PreparedSight & {
  tenantId: string
  mode: Workspace['mode']
  cause: ObservationCause
  conversationId: string | null
  eventId: string | null
  createdAt: Date
  /** The engine's time now: a new version may not be dated later (it would hold back every version after). */
  now: Date
}

/** The document under a key and its latest version, as `observeInTx` compares them. */
interface LatestVersion {
  document_id: string
  version_id: string | null
  version: number | null
  content_hash: string | null
  provenance: Provenance | null
  created_at: Date | null
}

/**
 * Finds or creates the document and adds a version only when the hash differs from the
 * latest one, inside the caller's transaction. Each new version is tied to its document by
 * a VERSION_OF edge (structural: it belongs to no conversation).
 */
export async function observeInTx(tx: Queryable, w: VersionWrite): Promise<Observation> {
  const found = await latestVersionOf(tx, w)
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
  refuseMisdatedVersion(w, found)
  const documentId = found?.document_id ?? newId('document')
  const versionId = newId('version')
  const version = (found?.version ?? 0) + 1
  const versionOfEdgeId = newId('edge')
  const provenance: Provenance = w.cause === 'agent_write' ? 'agent' : found?.version_id ? 'external' : 'initial'
  await insertVersion(tx, w, { documentId, versionId, version, provenance, versionOfEdgeId, documentCreated: found === undefined })
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

async function latestVersionOf(tx: Queryable, w: VersionWrite): Promise<LatestVersion | undefined> {
  const { rows } = await tx.query<LatestVersion>(
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
  return rows[0]
}

function refuseMisdatedVersion(w: VersionWrite, found: LatestVersion | undefined): void {
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
}

/** Writes the document (when new), the version and its VERSION_OF edge in one statement. */
async function insertVersion(
  tx: Queryable,
  w: VersionWrite,
  v: {
    documentId: string
    versionId: string
    version: number
    provenance: Provenance
    versionOfEdgeId: string
    documentCreated: boolean
  },
): Promise<void> {
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
      v.documentId,
      w.tenantId,
      w.canonicalKey,
      w.keyKind,
      w.mode,
      v.versionId,
      v.version,
      w.hash,
      w.content,
      w.bytes,
      v.provenance,
      w.createdAt,
      v.documentCreated,
      w.conversationId,
      w.eventId,
      v.versionOfEdgeId,
    ],
    { prepare: true },
  )
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

/** Validates an observation, then records it (and the event's touch of the version) in one transaction. */
export async function observeDocument(ctx: EngineContext, input: ObserveDocumentInput): Promise<Observation> {
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
  const prepared = prepareSight(sight, ctx.workspace, ctx.resolvePath)
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
}
