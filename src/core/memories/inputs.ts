import { entityId, storedName } from '../graph/edges.ts'
import { jsonRecord, storableText } from '../kernel/json.ts'
import { identifier, SENSITIVITIES } from '../kernel/scope.ts'
import { timeInput } from '../kernel/time.ts'
import { z } from '../kernel/validate.ts'
import { readChannel } from '../privacy/channels.ts'
import { MAX_MEMORY_CONTENT, MEMORY_CATEGORIES, MEMORY_FUSIONS, MEMORY_SCOPES, MEMORY_SOURCES } from './records.ts'

const MAX_CONTENT = MAX_MEMORY_CONTENT

/** Tenant, user, agent, run and project ids, as everywhere: `identifier` (MAX_ID_LENGTH). */
const idField = identifier
const identity = {
  tenantId: idField.default('default'),
  userId: idField.optional(),
  agentId: idField.optional(),
  runId: idField.optional(),
  projectId: idField.optional(),
}
const metadataSchema = jsonRecord
const relevantToField = z.array(entityId).min(1).max(100).optional()
export const memoryIdSchema = storedName(200)
/** A name as stored, trimmed: a context's, a key. Text Postgres would alter is refused, so two names never become one. */
const trimmedName = storableText.pipe(z.string().trim().min(1).max(200))
const filterSchema = z.unknown().optional()

export const contextInput = z.strictObject({
  name: trimmedName,
  description: z.string().trim().max(1000).optional(),
  /** 0–1; memories in a context of higher priority are surfaced first. Default 0.5. */
  priority: z.number().min(0).max(1).optional(),
  tenantId: idField.default('default'),
  userId: idField.optional(),
})
export type MemoryContextInput = z.input<typeof contextInput>
export const contextsOptions = z.strictObject({ tenantId: idField.default('default'), userId: idField.optional() })
export type MemoryContextsOptions = z.input<typeof contextsOptions>

export const rememberInput = z
  .strictObject({
    content: z.string().trim().min(1).max(MAX_CONTENT),
    category: z.enum(MEMORY_CATEGORIES),
    source: z.enum(MEMORY_SOURCES).default('inferred'),
    scope: z.enum(MEMORY_SCOPES).default('user'),
    confidence: z.number().min(0).max(1).optional(),
    /** `secret` is refused: secrets are never stored. */
    sensitivity: z.enum(SENSITIVITIES).default('none'),
    context: trimmedName.optional(),
    /**
     * A name to save it under: saving again under the same key (in the same scope) replaces
     * the memory it names, however different the new text; the same text is `unchanged`.
     */
    key: trimmedName.optional(),
    relatedTo: z.array(entityId).max(100).optional(),
    derivedFrom: z.array(entityId).max(100).optional(),
    metadata: metadataSchema.default({}),
    /** `semantic` (default) also supersedes near duplicates; `exact` only skips identical text. */
    dedup: z.enum(['semantic', 'exact']).default('semantic'),
    /**
     * Where a duplicate (or the memory of a `key`) is looked for. `user` (default): among the
     * memories `recall` reads with this one — same tenant, scope, user and project, saved by
     * any agent or run. `identity`: also the same agent and run (the mem0 facade's scopes).
     */
    dedupScope: z.enum(['user', 'identity']).default('user'),
    /** When it expires (see `MemoryRecord.expiresAt`); never when left out. */
    expiresAt: timeInput.optional(),
    ...identity,
  })
  .refine((v) => v.scope !== 'project' || v.projectId !== undefined, {
    message: 'a project memory needs a projectId',
    path: ['projectId'],
  })
export type RememberInput = z.input<typeof rememberInput>
/** What `remember` saves, once parsed. */
export type RememberFields = z.output<typeof rememberInput>

export const recallOptions = z.strictObject({
  category: z.union([z.enum(MEMORY_CATEGORIES), z.array(z.enum(MEMORY_CATEGORIES)).min(1)]).optional(),
  scope: z.enum(MEMORY_SCOPES).optional(),
  limit: z.number().int().min(1).max(50).default(10),
  /** Vector matches at or below this cosine similarity do not count (keyword matches still do). */
  minSimilarity: z.number().min(-1).max(1).default(0),
  /** How the vector and keyword rankings are combined (see `MemoryScores.fused`). */
  fusion: z.enum(MEMORY_FUSIONS).default('zscore'),
  filters: filterSchema,
  tenantId: idField.default('default'),
  userId: idField.optional(),
  projectId: idField.optional(),
  /** Only memories relevant to any of these entity ids (`remember({ relatedTo })`), e.g. the file at hand. */
  relevantTo: relevantToField,
  /** The channel the memories will be shown in: those above its allowance are left out. */
  channel: readChannel,
  /**
   * The memories as they were then (see `memoriesAsOf`), ranked by their text then; expiry is
   * judged at that time, and recalling the past counts as no use.
   */
  asOf: timeInput.optional(),
})
export type RecallOptions = z.input<typeof recallOptions>

/** Picks memories by exact match on every identity field given (AND), mem0 style. */
const selector = {
  tenantId: idField.default('default'),
  userId: idField.optional(),
  agentId: idField.optional(),
  runId: idField.optional(),
  projectId: idField.optional(),
  scope: z.enum(MEMORY_SCOPES).optional(),
  category: z.union([z.enum(MEMORY_CATEGORIES), z.array(z.enum(MEMORY_CATEGORIES)).min(1)]).optional(),
  /** Only memories relevant to any of these entity ids (`remember({ relatedTo })`). */
  relevantTo: relevantToField,
  filters: filterSchema,
}

export type Selector = z.output<z.ZodObject<typeof selector>>

export const searchOptions = z.strictObject({
  ...selector,
  channel: readChannel,
  limit: z.number().int().min(1).max(1000).default(100),
  /** Vector matches at or below this cosine similarity do not count (keyword matches still do). */
  minSimilarity: z.number().min(-1).max(1).default(0),
  /** How the vector and keyword rankings are combined (see `MemoryScores.fused`). */
  fusion: z.enum(MEMORY_FUSIONS).default('zscore'),
  /** The memories as they were then (see `memoriesAsOf`), ranked by their text then. */
  asOf: timeInput.optional(),
})
export type MemorySearchOptions = z.input<typeof searchOptions>

export const listOptions = z.strictObject({
  ...selector,
  /** Only the memory (or, with `status`, the memories) saved under this key. */
  key: trimmedName.optional(),
  channel: readChannel,
  /** `active` leaves out expired memories; `expired` lists only them (active, past `expiresAt`). */
  status: z.enum(['active', 'expired', 'superseded', 'deleted', 'any']).default('active'),
  limit: z.number().int().min(1).max(10_000).default(100),
  /**
   * The memories as they were then: those created by that time, with the status, text and
   * fields they had (see `memoriesAsOf`); `status` and expiry are judged at that time.
   */
  asOf: timeInput.optional(),
})
export type MemoryListOptions = z.input<typeof listOptions>

export const updateInput = z
  .strictObject({
    content: z.string().trim().min(1).max(MAX_CONTENT).optional(),
    category: z.enum(MEMORY_CATEGORIES).optional(),
    confidence: z.number().min(0).max(1).optional(),
    sensitivity: z.enum(SENSITIVITIES).optional(),
    metadata: metadataSchema.optional(),
    /** A new expiry; null: it never expires (an expired memory comes back). */
    expiresAt: timeInput.nullable().optional(),
  })
  .refine((v) => Object.keys(v).length > 0, { message: 'nothing to update' })

export const byIdOptions = z.strictObject({ tenantId: idField.default('default') })
export const getOptions = z.strictObject({
  tenantId: idField.default('default'),
  channel: readChannel,
  /** The memory as it was then (see `memoriesAsOf`). */
  asOf: timeInput.optional(),
})
/** Options of the reads and changes by id: the tenant the memory must belong to (default 'default'). */
export type MemoryByIdOptions = z.input<typeof byIdOptions>
export type MemoryGetOptions = z.input<typeof getOptions>
export type MemoryUpdate = z.input<typeof updateInput>
/** The changes of `memories.update`, once parsed. */
export type MemoryChanges = z.output<typeof updateInput>

export const forgetAllInput = z.strictObject({
  ...selector,
  /** Only the memories past their `expiresAt` (a clean-up of what has expired). */
  expired: z.literal(true).optional(),
  confirm: z.literal(true),
})
export type ForgetAllInput = z.input<typeof forgetAllInput>

export const resetInput = z.strictObject({
  confirm: z.literal(true),
  /** Only this tenant's memories; left out, every tenant's. */
  tenantId: idField.optional(),
})
export type MemoryResetInput = z.input<typeof resetInput>
