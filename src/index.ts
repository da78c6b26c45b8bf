export {
  type ClientOf,
  type CreateMemoryOptions,
  connectMemory,
  createMemory,
  type EmbedderBootOptions,
  type EmbedderInfo,
  type EngineErrorEvent,
  type IndexStatus,
  type Memory,
  type ModelLoadProgress,
  type StorageKind,
} from './browser/client/create-memory.ts'
export { ERROR_CODES, type ErrorCode, MemoryError } from './core/kernel/errors.ts'
export { deleteMemory, listMemories, type MemoryRecord } from './browser/storage/registry.ts'
export type { BootInfo, Role, StorageInfo } from './browser/host/host.ts'
export type { SearchExplain, SearchHit, SearchMode, SearchOptions } from './core/retrieval/search.ts'
export type { CypherNode, CypherOptions, CypherRelationship, CypherResult, CypherValue } from './core/cypher/lazy-cypher.ts'
export type { Fusion, Scoring, ScoringInput } from './core/kernel/scoring.ts'
export type {
  BuildContextInput,
  ContextBundle,
  ContextItem,
  ContextOmission,
  ContextSection,
  SectionName,
} from './core/retrieval/context.ts'
// Pure helpers that need no worker: agent tool schemas, the guidelines prompt, the secret
// detector and the channel rules (e.g. to redact in the page before text leaves it).
export { anthropicTools, MEMORY_GUIDELINES, openAITools } from './core/tools/agent-tools.ts'
export { type RedactionFinding, type RedactionResult, redact } from './core/privacy/redact.ts'
export { allowedSensitivities, CHANNEL_SENSITIVITIES } from './core/privacy/channels.ts'
// Whether a string is sealed text as stored (what a memory opened without its vault key reads).
export { isSealed, type VaultInput, type VaultStatus } from './core/privacy/vault.ts'
export type { Channel, Sensitivity } from './core/kernel/scope.ts'
export type { TelemetryEvent } from './core/kernel/telemetry.ts'
// Assembles a streamed turn and records it whole (over the worker's recordTurn).
export { type TurnProcedure, type TurnRecorder, type TurnRecorderOptions, turnRecorder, type TurnSink } from './core/turns/turn-recorder.ts'
export {
  type ChatHistoryProgress,
  importChatHistory,
  type ImportChatHistoryOptions,
  type ImportChatHistoryResult,
  type ImportedConversation,
} from './adapters/chat-history/index.ts'
// Reads an export file in the page, without the worker or a database.
export { openSnapshot, type Snapshot, type SnapshotOptions } from './core/portable/snapshot.ts'
export type { ExportManifest } from './core/portable/portable.ts'
export type { Neighbor, NodeRecord, RelationRecord } from './core/graph/entities.ts'
export type { KvEntry } from './core/kv/kv.ts'
export type { SyncRemote, SyncReport } from './core/sync/sync.ts'
export type { MemoryEvent } from './core/log/events.ts'
export type { Workspace } from './core/documents/paths.ts'
