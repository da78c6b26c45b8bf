import type { EngineContext } from '../kernel/engine-context.ts'
import { defineMemoryContext, listMemoryContexts } from './contexts.ts'
import { deleteMemory, forgetAllMemories, resetMemories } from './deletion.ts'
import { memoryHistory } from './history.ts'
import type {
  ForgetAllInput,
  MemoryByIdOptions,
  MemoryContextInput,
  MemoryContextsOptions,
  MemoryGetOptions,
  MemoryListOptions,
  MemoryResetInput,
  MemorySearchOptions,
  MemoryUpdate,
  RecallOptions,
  RememberInput,
} from './inputs.ts'
import { getMemory, listMemories } from './reads.ts'
import { recallMemories, searchMemories } from './recall.ts'
import type { MemoryContextRecord, MemoryHistoryRecord, MemoryHit, MemoryRecord, RememberResult } from './records.ts'
import { rememberMemory } from './remember.ts'
import { updateMemory } from './update.ts'

// Curated memories, one concern a file: records.ts (what a memory is), inputs.ts (what each
// call accepts), rows.ts (the table's rows), selection.ts (which memories a call reads),
// remember.ts and update.ts (writes and near duplicates), recall.ts and ranking.ts (hybrid
// retrieval), past.ts (memories as they were), reads.ts, deletion.ts, history.ts, contexts.ts.
export {
  CONFIDENCE_BY_SOURCE,
  MAX_MEMORY_CONTENT,
  MEMORY_CATEGORIES,
  MEMORY_FUSIONS,
  MEMORY_SCOPES,
  MEMORY_SOURCES,
  type MemoryCategory,
  type MemoryContextRecord,
  type MemoryFusion,
  type MemoryHistoryRecord,
  type MemoryHit,
  type MemoryRecord,
  type MemoryScope,
  type MemoryScores,
  type MemorySource,
  type MemoryStatus,
  type RememberResult,
} from './records.ts'
export type {
  ForgetAllInput,
  MemoryByIdOptions,
  MemoryContextInput,
  MemoryContextsOptions,
  MemoryGetOptions,
  MemoryListOptions,
  MemoryResetInput,
  MemorySearchOptions,
  MemoryUpdate,
  RecallOptions,
  RememberInput,
} from './inputs.ts'
export { type HistoryRow, toHistory } from './history.ts'
export { MEMORY_FILTER_COLUMNS, readableBy, unexpired } from './selection.ts'
export { memoriesAsOf, pastMemories } from './past.ts'
export { memoryHash, normalizeMemoryText } from '../kernel/hash.ts'

/**
 * Curated memories: `remember` / `recall` and the `memories` namespace (get, list, update,
 * delete, history, forgetAll, search, reset, defineContext, contexts). Rows are mutable; every
 * change is logged.
 */
export function memoriesApi(ctx: EngineContext) {
  /**
   * Saves a curated memory. The same text in the same scope is `unchanged`; a near duplicate
   * (cosine ≥ the engine's dedup threshold) becomes a new memory that supersedes the old one.
   * Without a `userId` it belongs to no user: reads that name no user find it, a user's do not.
   *
   * @example
   * await memory.remember({ content: 'User prefers tabs', category: 'preference', source: 'explicit' })
   * // → { id: 'mem_…', action: 'created' }
   */
  async function remember(input: RememberInput): Promise<RememberResult> {
    return rememberMemory(ctx, input)
  }

  /**
   * Active memories visible to a user, best first: their own user-scoped ones, their
   * project-scoped ones for `projectId`, and global ones. Hybrid ranked (vector + keyword,
   * keyword only without an embedder); each hit counts as a use.
   *
   * @example
   * const hits = await memory.recall('how does the user like their code formatted?', { category: 'preference' })
   */
  async function recall(query: string, options: RecallOptions = {}): Promise<MemoryHit[]> {
    return recallMemories(ctx, query, options)
  }

  const memories = {
    /**
     * One memory by id (also superseded or deleted ones, see `status`), or null — also when
     * it belongs to another tenant or is above what `channel` may show.
     *
     * @example
     * const m = await memory.memories.get('mem_…', { tenantId: 'acme' })
     */
    async get(id: string, options: MemoryGetOptions = {}): Promise<MemoryRecord | null> {
      return getMemory(ctx, id, options)
    },

    /**
     * Memories matching every identity field given, most used first, then newest.
     *
     * @example
     * const mine = await memory.memories.list({ userId: 'alice', category: 'preference' })
     */
    async list(options: MemoryListOptions = {}): Promise<MemoryRecord[]> {
      return listMemories(ctx, options)
    },

    /**
     * Hybrid search over active memories matching every identity field given (AND), without
     * counting uses. The `Memory` (mem0) facade searches through this.
     *
     * @example
     * const hits = await memory.memories.search('programming languages', { userId: 'alice', limit: 5 })
     */
    async search(query: string, options: MemorySearchOptions = {}): Promise<MemoryHit[]> {
      return searchMemories(ctx, query, options)
    },

    /**
     * Changes a memory in place: new text gets a new hash and vector. Logged as UPDATE.
     * Secrets in new text or metadata are replaced first, as in `remember`.
     *
     * @example
     * await memory.memories.update('mem_…', { content: 'User prefers 2-space indents' })
     */
    async update(id: string, changes: MemoryUpdate, options: MemoryByIdOptions = {}): Promise<MemoryRecord> {
      return updateMemory(ctx, id, changes, options)
    },

    /**
     * Deletes a memory: it leaves every read; its history (with a DELETE entry) stays.
     *
     * @example
     * await memory.memories.delete('mem_…')
     */
    async delete(id: string, options: MemoryByIdOptions = {}): Promise<{ id: string; deleted: true }> {
      return deleteMemory(ctx, id, options)
    },

    /**
     * The audit trail of one memory, oldest first.
     *
     * @example
     * const trail = await memory.memories.history('mem_…') // ADD, UPDATE, DELETE …
     */
    async history(id: string, options: MemoryByIdOptions = {}): Promise<MemoryHistoryRecord[]> {
      return memoryHistory(ctx, id, options)
    },

    /**
     * Deletes every active memory matching the selection, in one transaction (with `expired:
     * true`, only those past their expiry). Needs `confirm: true`.
     *
     * @example
     * await memory.memories.forgetAll({ userId: 'alice', scope: 'project', projectId: 'p1', confirm: true })
     * await memory.memories.forgetAll({ expired: true, confirm: true })
     */
    async forgetAll(input: ForgetAllInput): Promise<{ deleted: number }> {
      return forgetAllMemories(ctx, input)
    },

    /**
     * Creates a memory context, or sets what an existing one (same name, tenant and user) is
     * and how much it weighs: a `description` or `priority` left out keeps its value (0.5 by
     * default). In `buildContext`, memories of a context with a higher priority are surfaced
     * first: their confidence counts `0.5 + priority` times (once at the default).
     *
     * @example
     * await memory.memories.defineContext({ name: 'TypeScript', description: 'how this user writes TS', priority: 0.9, userId: 'ann' })
     */
    async defineContext(input: MemoryContextInput): Promise<MemoryContextRecord> {
      return defineMemoryContext(ctx, input)
    },

    /**
     * The memory contexts of a tenant (of one user with `userId`, else every user's), highest
     * priority first, then by name, each with how many active, unexpired memories it holds.
     *
     * @example
     * const groups = await memory.memories.contexts({ userId: 'ann' })
     */
    async contexts(options: MemoryContextsOptions = {}): Promise<MemoryContextRecord[]> {
      return listMemoryContexts(ctx, options)
    },

    /**
     * Erases every memory, its history, contexts and links, for good. Needs `confirm: true`.
     * With `tenantId`, only that tenant's; without, every tenant's.
     *
     * @example
     * await memory.memories.reset({ confirm: true })
     * await memory.memories.reset({ confirm: true, tenantId: 'acme' })
     */
    async reset(input: MemoryResetInput): Promise<{ memories: number }> {
      return resetMemories(ctx, input)
    },
  }

  return { remember, recall, memories }
}
