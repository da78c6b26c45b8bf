import type { JsonObject } from '../graph/entities.ts'
import type { StoredSensitivity } from '../kernel/scope.ts'
import type { RedactionCount } from '../privacy/redact.ts'

export const MEMORY_CATEGORIES = [
  'preference',
  'pattern',
  'correction',
  'fact',
  'instruction',
  'convention',
  'decision',
  'constraint',
  'procedure',
] as const
export const MEMORY_SOURCES = ['explicit', 'inferred', 'corrected'] as const
export const MEMORY_SCOPES = ['user', 'project', 'global'] as const

export type MemoryCategory = (typeof MEMORY_CATEGORIES)[number]
export type MemorySource = (typeof MEMORY_SOURCES)[number]
export type MemoryScope = (typeof MEMORY_SCOPES)[number]
export type MemoryStatus = 'active' | 'superseded' | 'deleted'

/** How sure Engram is of a memory, by how it was learnt. */
export const CONFIDENCE_BY_SOURCE: Record<MemorySource, number> = {
  explicit: 1,
  corrected: 0.9,
  inferred: 0.7,
}

/** How a memory search combines its vector and keyword rankings (`MemoryScores.fused`). */
export const MEMORY_FUSIONS = ['zscore', 'rrf'] as const
export type MemoryFusion = (typeof MEMORY_FUSIONS)[number]
/** Characters of a memory's text, after trimming. */
export const MAX_MEMORY_CONTENT = 20_000

export interface MemoryRecord {
  id: string
  content: string
  category: MemoryCategory
  source: MemorySource
  confidence: number
  scope: MemoryScope
  tenantId: string
  userId: string | null
  agentId: string | null
  runId: string | null
  projectId: string | null
  /** Which channels may show it (see `allowedSensitivities`). */
  sensitivity: StoredSensitivity
  metadata: JsonObject
  hash: string
  status: MemoryStatus
  supersededBy: string | null
  useCount: number
  lastUsedAt: Date | null
  embedModel: string | null
  /** Names of the memory contexts the memory is filed under. */
  contexts: string[]
  /** The ids of the entities it is relevant to (`remember({ relatedTo })`). */
  relatedTo: string[]
  /** The name it was saved under (`remember({ key })`), or null. */
  key: string | null
  /**
   * When it expires, or null for never: from then on it leaves recall, search, listing (but
   * `status: 'expired'` or `'any'`) and the context's standing memories, and stays readable
   * by id with its history.
   */
  expiresAt: Date | null
  createdAt: Date
  updatedAt: Date
}

/** Why a memory was found: its fused score and the two signals behind it. */
export interface MemoryScores {
  /**
   * The two rankings fused, higher is better. `zscore` (default): each list's score is
   * standardised over the list's best `Z_WINDOW`, z = (score − mean) / standard deviation, a
   * memory missing from a list, or below that window, counting as the window's lowest z;
   * fused = max(0, z̄ + 6) / 9 with z̄ the mean of the lists' z's (1 for a memory 3 standard
   * deviations above the mean in both). `rrf`: Σ 1 / (60 + rank).
   */
  fused: number
  /** Cosine similarity to the query, or null when not compared (no embedder, no vector). */
  vector: number | null
  /**
   * BM25 score of the query's words (k1 1.2, b 0.75, document frequencies and mean length over
   * the memories the call may see), or null when no query word matched.
   */
  keyword: number | null
}

export type MemoryHit = MemoryRecord & { scores: MemoryScores }

export interface MemoryHistoryRecord {
  id: string
  memoryId: string
  event: 'ADD' | 'UPDATE' | 'DELETE'
  oldValue: string | null
  newValue: string | null
  /** Other fields the change touched, e.g. `{ status: ['active', 'superseded'], supersededBy }`. */
  changes: JsonObject
  isDeleted: boolean
  userId: string | null
  agentId: string | null
  runId: string | null
  createdAt: Date
}

export interface RememberResult {
  id: string
  action: 'created' | 'superseded' | 'unchanged'
  supersededId?: string
  /** Secrets replaced before the memory was stored, by type; absent when there were none. */
  redactions?: RedactionCount[]
}

/** A group of related memories (`remember({ context })`), with what it is and how much it weighs. */
export interface MemoryContextRecord {
  id: string
  name: string
  description: string | null
  priority: number
  tenantId: string
  userId: string | null
  /** Active memories filed under it. */
  memories: number
  createdAt: Date
}
