import { resolve } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import type { Db } from '../core/kernel/db.ts'
import { checkOptionNames } from '../core/kernel/input-walk.ts'
import { durableDb, openPGlite } from '../runtime/pglite.ts'
import { MemoryError } from '../core/kernel/errors.ts'
import { lockDataDir, whileHeld } from './lock.ts'
import { openServerDatabase, type PostgresPool, type PostgresTarget } from './postgres.ts'
import { memoryOver, type NodeMemory } from './memory.ts'
import { OPEN_MEMORY_OPTIONS, type OpenMemoryOptions } from './options.ts'
import { bundledTemplate, holdsNoDatabase, pgliteFsBundle } from './template.ts'

export type { NodeMemory, OpenMemoryOptions }

/**
 * Opens a memory in-process in Node: the same engine the browser worker hosts.
 *
 * @example
 * const memory = await openMemory({ dataDir: './.engram', workspace: { mode: 'local', root: '.' } })
 * await memory.ping()
 * await memory.close()
 */
export async function openMemory(options: OpenMemoryOptions = {}): Promise<NodeMemory> {
  checkOptionNames(options, OPEN_MEMORY_OPTIONS, 'openMemory')
  if (options.postgres !== undefined) return openServerMemory(options.postgres, options)
  // One open per data folder: a second would write over this one's writes (src/node/lock.ts).
  const lock = options.dataDir === undefined ? undefined : await lockDataDir(resolve(options.dataDir))
  const release = () => lock?.release()
  let pg: PGlite
  try {
    // A new memory starts from the bundled template, as in the browser, instead of initdb.
    const fresh = options.dataDir === undefined || holdsNoDatabase(options.dataDir)
    const loadDataDir = options.loadDataDir ?? (fresh ? await bundledTemplate() : undefined)
    const fsBundle = await pgliteFsBundle()
    pg = await openPGlite({
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
      ...(loadDataDir === undefined ? {} : { loadDataDir }),
      ...(fsBundle ? { fsBundle } : {}),
      ...(options.cacheMB === undefined ? {} : { cacheMB: options.cacheMB }),
    })
  } catch (error) {
    release()
    throw error
  }
  return memoryOver(durableDb(pg), options, {
    // An open whose lock another process took fails every call from then on (src/node/lock.ts).
    ...(lock ? { guard: (db: Db) => whileHeld(db, lock) } : {}),
    // Closing writes a checkpoint: not over the pages of the process that took the lock.
    closeDatabase: async () => {
      if (!pg.closed && lock?.lost !== true) await pg.close()
    },
    release,
  })
}

/**
 * A memory on a PostgreSQL server. Without pgvector there it is keyword-only: a given embedder
 * is set aside with a warning, and `stats().vectorSearch` is false.
 */
async function openServerMemory(target: PostgresTarget, options: OpenMemoryOptions): Promise<NodeMemory> {
  if (!(typeof target === 'string' && target.length > 0) && typeof (target as Partial<PostgresPool> | null)?.connect !== 'function') {
    throw new MemoryError('INVALID_INPUT', 'openMemory: "postgres" takes a connection string or a node-postgres Pool.')
  }
  const local = (['dataDir', 'loadDataDir', 'cacheMB'] as const).filter((name) => options[name] !== undefined)
  if (local.length > 0) {
    throw new MemoryError('INVALID_INPUT', `openMemory: "postgres" keeps the memory on the server; ${local.map((n) => `"${n}"`).join(' and ')} cannot be given with it.`)
  }
  const db = await openServerDatabase(target)
  let settings = options
  if (!db.vectors && options.embedder !== undefined) {
    const { embedder: _set, ...rest } = options
    settings = rest
    console.warn('Engram: this PostgreSQL server has no pgvector, so the memory is keyword-only; the embedder is not used.')
  }
  return memoryOver(db, settings, { backend: 'postgres', writeLock: db.writeLock, closeDatabase: () => db.close() })
}

export type { Embedder } from '../core/kernel/embedder.ts'
// The bundled model (or another local one) for openMemory's `embedder`, on Node's CPU runtime.
export { createTransformersEmbedder, type NodeTransformersEmbedderOptions } from './embed-thread.ts'
export {
  BUNDLED_MODEL,
  type ModelLoadProgress,
  type TransformersEmbedder,
  type TransformersEmbedderOptions,
} from '../embed/transformers-embedder.ts'
export type { ErrorCode } from '../core/kernel/errors.ts'
export { MemoryError } from '../core/kernel/errors.ts'
// The engine over any database with `query`, `exec` and `transaction` (a PGlite of the app's own).
export { createEngine, DEFAULT_DEDUP_THRESHOLD, type Engine, type EngineOptions } from '../core/engine.ts'
export type { Db, Queryable, QueryOptions, QueryResult } from '../core/kernel/db.ts'
export type { RecordInput, RecordResult, MemoryEvent, EventKind, Artifact } from '../core/log/events.ts'
export type { RecordTurnInput, TurnRecord, ProcedureRecord } from '../core/turns/turns.ts'
export type {
  ObserveDocumentInput,
  Observation,
  DocumentInfo,
  DocumentVersion,
  DocumentSignals,
  DocumentRef,
  Staleness,
  Provenance,
  DocumentInteraction,
  InteractionOptions,
} from '../core/documents/documents.ts'
export type { Edge, Walk, WalkNode, WalkOptions, EdgeQuery } from '../core/graph/edges.ts'
export type { ConversationGraph } from '../core/retrieval/conversations.ts'
export type { ForgetTarget, ForgetResult, ForgetCounts } from '../core/maintenance/forget.ts'
export type { Changes } from '../core/retrieval/changes.ts'
// Sync between devices and a server memory (docs/sync.md).
export type { SyncDevice, SyncRemote, SyncReport } from '../core/sync/sync.ts'
export { createSyncHandler, type SyncHandlerOptions } from '../core/sync/handler.ts'
export { serveSync, type SyncServer } from './sync-server.ts'
export type {
  ForgetAllInput,
  MemoryByIdOptions,
  MemoryCategory,
  MemoryContextInput,
  MemoryContextRecord,
  MemoryContextsOptions,
  MemoryGetOptions,
  MemoryHistoryRecord,
  MemoryHit,
  MemoryListOptions,
  MemoryRecord,
  MemoryResetInput,
  MemoryScope,
  MemoryScores,
  MemorySearchOptions,
  MemorySource,
  MemoryStatus,
  MemoryUpdate,
  RecallOptions,
  RememberInput,
  RememberResult,
} from '../core/memories/memories.ts'
export type {
  EdgeInput,
  EdgeOptions,
  EdgeWriteResult,
  GraphVerifyReport,
  GraphWriteInput,
  Neighbor,
  NeighborsOptions,
  NodeInput,
  NodeReadOptions,
  NodeRecord,
  NodesOptions,
  RelationRecord,
  RemoveOptions,
} from '../core/graph/entities.ts'
export type { KvEntry, KvGetOptions, KvListOptions, KvWriteOptions } from '../core/kv/kv.ts'
export type { Stats } from '../core/maintenance/stats.ts'
export type {
  EngineErrorEvent,
  IndexStatus,
  IndexProgressListener,
  EngineErrorListener,
  WaitForIndexOptions,
} from '../core/maintenance/indexer.ts'
export type { Workspace } from '../core/documents/paths.ts'
export {
  MAX_ARTIFACT_BYTES,
  MAX_DOCUMENT_BYTES,
  MAX_DOCUMENT_KEY_BYTES,
  MAX_EVENT_CONTENT_BYTES,
  MAX_PROCEDURES_PER_TURN,
  MAX_TOOL_EXCERPT_BYTES,
} from '../core/kernel/limits.ts'
export { estimateTokens, MAX_CHUNK_TOKENS } from '../core/kernel/tokens.ts'
export { allowedSensitivities, CHANNEL_SENSITIVITIES } from '../core/privacy/channels.ts'
export { isSealed, type VaultInput, type VaultStatus } from '../core/privacy/vault.ts'
export { type RedactionCount, type RedactionFinding, type RedactionResult, redact } from '../core/privacy/redact.ts'
export type { Channel, Sensitivity } from '../core/kernel/scope.ts'
// The mem0-compatible API, also its own entry (`engram/mem0`) for the browser.
export {
  FACT_EXTRACTION_PROMPT,
  type FilterExpression,
  GRAPH_ENTITY_TYPES,
  GRAPH_EXTRACTION_PROMPT,
  type LLM,
  type Mem0Relation,
  Memory,
  type MemoryOptions,
  openAICompatibleLLM,
  UPDATE_DECISION_PROMPT,
} from '../adapters/mem0/index.ts'
export type { TelemetryEvent } from '../core/kernel/telemetry.ts'
export { type TurnProcedure, type TurnRecorder, type TurnRecorderOptions, turnRecorder, type TurnSink } from '../core/turns/turn-recorder.ts'
export {
  type ChatHistoryProgress,
  importChatHistory,
  type ImportChatHistoryOptions,
  type ImportChatHistoryResult,
  type ImportedConversation,
} from '../adapters/chat-history/index.ts'
// Reading an export file without opening a memory.
export { openSnapshot, type Snapshot, type SnapshotOptions } from '../core/portable/snapshot.ts'
export type { ExportManifest } from '../core/portable/portable.ts'
export { anthropicTools, MEMORY_GUIDELINES, openAITools } from '../core/tools/agent-tools.ts'
export type { SearchExplain, SearchHit, SearchMode, SearchOptions } from '../core/retrieval/search.ts'
export type { CypherNode, CypherOptions, CypherRelationship, CypherResult, CypherValue } from '../core/cypher/lazy-cypher.ts'
export { DEFAULT_SCORING, type Scoring, type ScoringInput } from '../core/kernel/scoring.ts'
export {
  type BuildContextInput,
  type ContextBundle,
  type ContextItem,
  type ContextOmission,
  type ContextSection,
  DEFAULT_SECTION_CAPS,
  SECTION_PRIORITIES,
  type SectionName,
  type TurnsOptions,
  type TurnView,
} from '../core/retrieval/context.ts'
