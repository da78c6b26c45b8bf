import type { PGlite } from '@electric-sql/pglite'
import type { Embedder } from '../core/embedder.ts'
import { createEngine, type Engine } from '../core/engine.ts'
import { openPGlite } from '../runtime/pglite.ts'

export interface OpenMemoryOptions {
  /** A folder for the database files; omitted → in memory, gone on close. */
  dataDir?: string
  /** Start from a `dumpDataDir()` tarball (used by tests to skip initdb). */
  loadDataDir?: Blob
  now?: () => Date
  /** Embeds memories for semantic dedup and recall; without one, both work on keywords only. */
  embedder?: Embedder
  /** Cosine similarity at or above which a new memory supersedes an existing one (default 0.85). */
  dedupThreshold?: number
}

export type NodeMemory = Engine & {
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Opens a memory in-process in Node: the same engine the browser worker hosts.
 *
 * @example
 * const memory = await openMemory({ dataDir: './.engram' })
 * await memory.ping()
 * await memory.close()
 */
export async function openMemory(options: OpenMemoryOptions = {}): Promise<NodeMemory> {
  const pg: PGlite = await openPGlite({
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.loadDataDir === undefined ? {} : { loadDataDir: options.loadDataDir }),
  })
  const engine = await createEngine({
    db: pg,
    ...(options.now ? { now: options.now } : {}),
    ...(options.embedder ? { embedder: options.embedder } : {}),
    ...(options.dedupThreshold === undefined ? {} : { dedupThreshold: options.dedupThreshold }),
  })
  const close = async () => {
    if (!pg.closed) await pg.close()
  }
  return Object.assign(engine, { close, [Symbol.asyncDispose]: close })
}

export type { Embedder } from '../core/embedder.ts'
export type { ErrorCode } from '../core/errors.ts'
export { MemoryError } from '../core/errors.ts'
export type { FilterExpression } from '../core/filters.ts'
export { type LLM, openAICompatibleLLM } from '../core/llm.ts'
export { FACT_EXTRACTION_PROMPT, Memory, type MemoryOptions, UPDATE_DECISION_PROMPT } from '../core/mem0.ts'
export type { TelemetryEvent } from '../core/telemetry.ts'
export { anthropicTools, MEMORY_GUIDELINES, openAITools } from '../core/tools.ts'
