import type { EngineContext } from '../kernel/engine-context.ts'
import type { TimeInput } from '../kernel/time.ts'
import { deduplicateContents, type DeduplicateResult } from './deduplication.ts'
import { type Observation, observeDocument, type ObserveDocumentInput } from './observation.ts'
import {
  documentHistory,
  type DocumentInteraction,
  documentInteractions,
  documentVersion,
  getDocument,
  type InteractionOptions,
} from './reads.ts'
import type { DocumentInfo, DocumentRef, DocumentVersion } from './records.ts'
import { documentSignals, type DocumentSignals, type Staleness, versionStaleness } from './staleness.ts'

// The documents feature, one concern a file: observing and versions (observation.ts), the shapes
// reads return and references (records.ts), the reads (reads.ts), staleness and signals
// (staleness.ts), and content deduplication (deduplication.ts).
export {
  documentSight,
  OBSERVATION_CAUSES,
  observeInTx,
  prepareSight,
  PROVENANCES,
  type DocumentSight,
  type Observation,
  type ObservationCause,
  type ObserveDocumentInput,
  type PreparedSight,
  type Provenance,
} from './observation.ts'
export { toDocument, toVersion, VERSION_COLUMNS, type DocumentInfo, type DocumentRef, type DocumentVersion } from './records.ts'
export type { DocumentInteraction, InteractionOptions } from './reads.ts'
export type { DocumentSignals, Staleness } from './staleness.ts'
export type { DeduplicateResult } from './deduplication.ts'

/** observeDocument and the document reads. */
export function createDocuments(ctx: EngineContext) {
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
      return observeDocument(ctx, input)
    },

    documents: {
      /**
       * A document by id, path or URL (paths are canonicalised as on write).
       *
       * @example
       * const doc = await memory.documents.get('src/auth.ts')
       */
      async get(ref: DocumentRef, options: { tenantId?: string } = {}): Promise<DocumentInfo> {
        return getDocument(ctx, ref, options)
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
        return documentHistory(ctx, ref, options)
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
        return documentInteractions(ctx, ref, options)
      },

      /**
       * One version with its content (null when only a hash was seen or it was forgotten).
       *
       * @example
       * const { content } = await memory.documents.version(versionId)
       */
      async version(versionId: string, options: { tenantId?: string } = {}): Promise<DocumentVersion> {
        return documentVersion(ctx, versionId, options)
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
        return documentSignals(ctx, ref, options)
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
        return deduplicateContents(ctx, options)
      },

      /**
       * How many versions a document gained since the given version was current.
       *
       * @example
       * const { staleness } = await memory.documents.stalenessOf(versionIdSeenLastWeek)
       */
      async stalenessOf(versionId: string, options: { asOf?: TimeInput; tenantId?: string } = {}): Promise<Staleness> {
        return versionStaleness(ctx, versionId, options)
      },
    },
  }
}
