import {
  type BuildContextInput,
  type ContextBundle,
  type Memory,
  MemoryError,
  type SearchHit,
} from '../src/index.ts'

/**
 * Parts of the memory API the demo uses where this build may not have them yet (retrieval,
 * export/import, indexing progress). The page calls them and reads "The memory API has no …"
 * as "not in this build".
 */
// The library's own shapes, so the demo cannot drift from the engine.
export type {
  BuildContextInput,
  ContextBundle,
  ContextItem,
  ContextSection,
  SearchExplain as ScoreExplain,
  SearchHit,
} from '../src/index.ts'

interface OptionalApi {
  search(query: string, options?: Record<string, unknown>): Promise<SearchHit[] | { hits: SearchHit[] }>
  buildContext(input: BuildContextInput): Promise<ContextBundle>
  exportFile(options?: Record<string, unknown>): Promise<Blob>
  importFile(file: Blob, options?: { mode: 'replace' | 'merge'; passphrase?: string }): Promise<unknown>
  stats(): Promise<Record<string, unknown>>
}

/** The memory seen through the optional parts of its API. */
export function optionalApi(memory: Memory): OptionalApi {
  return memory as unknown as OptionalApi
}

/** True for the error a call to a method this build lacks rejects with. */
export function isMissingApi(error: unknown): boolean {
  return MemoryError.is(error, 'INVALID_INPUT') && error.message.startsWith('The memory API has no')
}

export type Optional<T> = { available: true; value: T } | { available: false }

/** Runs an optional call: `{ available: false }` when the method is not in this build. */
export async function tryOptional<T>(call: () => Promise<T>): Promise<Optional<T>> {
  try {
    return { available: true, value: await call() }
  } catch (error) {
    if (isMissingApi(error)) return { available: false }
    throw error
  }
}

/** `search` hits, whichever of the two result shapes the engine returns. */
export async function searchHits(memory: Memory, query: string, options: Record<string, unknown>): Promise<Optional<SearchHit[]>> {
  const result = await tryOptional(() => optionalApi(memory).search(query, options))
  if (!result.available) return result
  return { available: true, value: Array.isArray(result.value) ? result.value : result.value.hits }
}

/** Indexing progress as far as `stats()` tells it; every field is optional. */
export interface IndexingView {
  /** Chunks still waiting for an embedding. */
  pending: number
  /** Chunks that have one. */
  embedded: number | null
  /** Model loading 0–1, or null when unknown. */
  modelProgress: number | null
  modelState: string | null
  /** False when the memory searches by keyword only (no model). */
  vectors: boolean | null
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null
}

function record(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
}

/** Reads indexing progress from whatever `stats()` returns in this build. */
export function indexingView(stats: Record<string, unknown>): IndexingView {
  const indexing = record(stats.indexing)
  const model = record(indexing?.model) ?? record(stats.model)
  const pending = num(indexing?.pending) ?? num(stats.unembeddedChunks) ?? 0
  const counts = record(stats.counts)
  const chunks = num(counts?.chunks)
  const embedded = num(indexing?.embedded) ?? (chunks === null ? null : Math.max(chunks - pending, 0))
  const modelState =
    typeof model?.state === 'string' ? model.state : typeof model?.status === 'string' ? model.status : null
  const modelProgress = num(model?.progress) ?? num(indexing?.modelProgress)
  const vectors =
    typeof indexing?.vectors === 'boolean'
      ? indexing.vectors
      : typeof model?.available === 'boolean'
        ? model.available
        : indexing || model
          ? modelState !== 'unavailable' && modelState !== 'failed'
          : null
  return { pending, embedded, modelProgress: modelProgress === null ? null : Math.min(Math.max(modelProgress, 0), 1), modelState, vectors }
}

export { num, record }
