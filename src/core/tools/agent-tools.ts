import { MemoryError } from '../kernel/errors.ts'
import type { FilterExpression } from '../db/filters.ts'
import {
  type ForgetAllInput,
  MEMORY_CATEGORIES,
  type MemoryHit,
  type MemoryListOptions,
  type MemoryRecord,
  type MemoryUpdate,
  type RecallOptions,
  type RememberInput,
  type RememberResult,
} from '../memories/memories.ts'
import { BUILTIN_RELATIONS } from '../graph/edges.ts'
import { MAX_ID_LENGTH, MAX_PROCEDURES_PER_TURN } from '../kernel/limits.ts'
import { identifier } from '../kernel/scope.ts'
import { MIN_CONTEXT_BUDGET } from '../retrieval/context-input.ts'
import type { TurnRecord } from '../turns/turns.ts'
import { parseInput, z } from '../kernel/validate.ts'

const category = z.enum(MEMORY_CATEGORIES)
const toolScope = z.enum(['user', 'project'])

/** An id as the engine takes it (`identifier`): 1 to `max` characters, no whitespace at either end. */
const toolId = (max = MAX_ID_LENGTH) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^\S(?:[\s\S]*\S)?$/, 'must not start or end with whitespace')

/** Text with something besides whitespace in it, up to `max` characters: the engine trims it. */
const saidText = (max: number) => z.string().max(max).regex(/\S/, 'must not be blank')

/** The channel a tool's answer goes to: what it shows is limited to what that channel may see. */
const answerChannel = z
  .enum(['private', 'public', 'team', 'agent'])
  .optional()
  .describe('The channel the answer goes to.')

const saveMemory = z.strictObject({
  content: saidText(20_000).describe('The memory, in clear natural language: specific, self-contained, one fact, present tense.'),
  category: category.describe(
    'preference, pattern, correction, fact, instruction, convention, decision, constraint or procedure.',
  ),
  source: z
    .enum(['explicit', 'inferred', 'corrected'])
    .optional()
    .describe(
      'explicit (the user said to remember it), inferred (you noticed it), corrected (the user corrected you). Default: inferred.',
    ),
  scope: toolScope
    .optional()
    .describe('user (default: everywhere for this user) or project (only this project).'),
  context: saidText(200)
    .optional()
    .describe('Name of a group to file the memory under, e.g. "TypeScript conventions". Created if missing.'),
  related_to: z
    .array(z.string().min(1).max(1000))
    .max(100)
    .optional()
    .describe('Ids of things this memory matters for (files, documents, other memories).'),
  key: saidText(200)
    .optional()
    .describe('A short name for the memory, e.g. "code-style". Saving again under the same name replaces it.'),
  expires_at: z.iso
    .datetime({ offset: true })
    .optional()
    .describe(
      'When it stops being true, for a temporary fact ("on leave until Friday"), as ISO 8601 with offset, e.g. 2025-06-01T00:00:00Z. Default: never.',
    ),
})

const recallMemories = z.strictObject({
  query: saidText(2000).describe('What you are looking for, descriptively, e.g. "user\'s TypeScript coding preferences".'),
  category: category.optional().describe('Only memories of this category.'),
  scope: toolScope.optional().describe('Only user-wide or only project memories.'),
  relevant_to: z
    .array(z.string().min(1).max(1000))
    .min(1)
    .max(100)
    .optional()
    .describe('Only memories saved as relevant to any of these ids (their related_to), e.g. the file you are about to change.'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(50)
    .optional()
    .describe('At most this many memories (default 10, max 50).'),
})

const manageMemory = z
  .strictObject({
    action: z.enum(['list', 'delete', 'update', 'forget_all']).describe('What to do.'),
    memory_id: z.string().min(1).max(200).optional().describe('The memory to delete or update (needed for both).'),
    updates: z
      .strictObject({
        content: saidText(20_000).optional(),
        category: category.optional(),
        confidence: z.number().min(0).max(1).optional(),
        expires_at: z.iso
          .datetime({ offset: true })
          .nullable()
          .optional()
          .describe('When it stops being true (ISO 8601 with offset), or null: never.'),
      })
      .optional()
      .describe('For update, needed: the fields to change (at least one).'),
    category: category.optional().describe('For list: only this category.'),
    limit: z.number().int().min(1).max(100).optional().describe('For list: at most this many (default 20).'),
    confirm: z.boolean().optional().describe('For forget_all: must be true, after the user confirmed.'),
  })
  .superRefine((v, issues) => {
    if ((v.action === 'delete' || v.action === 'update') && v.memory_id === undefined) {
      issues.addIssue({ code: 'custom', path: ['memory_id'], message: `${v.action} needs memory_id` })
    }
    if (v.action === 'update' && (v.updates === undefined || Object.keys(v.updates).length === 0)) {
      issues.addIssue({ code: 'custom', path: ['updates'], message: 'update needs updates' })
    }
    if (v.action === 'forget_all' && v.confirm !== true) {
      issues.addIssue({ code: 'custom', path: ['confirm'], message: 'forget_all needs confirm: true' })
    }
  })

/** Who may see what a tool writes to the log, how sensitive it is, and its tags. */
const logged = {
  channel: z
    .enum(['private', 'public', 'team', 'agent'])
    .optional()
    .describe('Who may later see it (default private).'),
  sensitivity: z.enum(['none', 'low', 'high']).optional().describe('How sensitive it is (default none).'),
  tags: z.array(z.string().min(1).max(200)).max(50).optional().describe('Free tags, e.g. "topic:onboarding".'),
}

const TASK_STATUSES = ['open', 'in_progress', 'blocked', 'done', 'cancelled'] as const

/** The record_event arguments that belong to some kinds of event only. */
const FIELD_KINDS = {
  tool: ['tool_call', 'tool_result'],
  tool_args: ['tool_call'],
  path: ['tool_result'],
  line_range: ['tool_result'],
  to: ['message'],
  task_id: ['task_update'],
  status: ['task_update'],
  supersedes: ['decision'],
  rationale: ['decision'],
  alternatives: ['decision'],
  constraints: ['decision'],
  consequences: ['decision'],
} as const

const recordEvent = z
  .strictObject({
    kind: z.enum(['message', 'tool_call', 'tool_result', 'decision', 'task_update']).describe('What happened.'),
    conversation_id: toolId().describe('The conversation (session) it belongs to.'),
    text: z
      .string()
      .min(1)
      .optional()
      .describe('The content: the message, the tool result\'s output, the decision or the task update. Needed for every kind but tool_call.'),
    tool: z.string().min(1).max(200).optional().describe('For tool_call and tool_result: the tool\'s name.'),
    tool_args: z.record(z.string(), z.unknown()).optional().describe('For tool_call: the arguments it was called with.'),
    path: z.string().min(1).max(4096).optional().describe('For tool_result of a file read: the file it read.'),
    line_range: z
      .tuple([z.number().int().min(1), z.number().int().min(1)])
      .refine(([a, b]) => b >= a, 'line_range must be [first, last] with last ≥ first')
      .optional()
      .describe('For tool_result of a file read: the first and last line it read, e.g. [120, 180].'),
    to: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('For a handoff note (a message tagged "handoff"): the agent it is for; without it, every other agent.'),
    task_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('For task_update, needed: which task, a short id you choose (e.g. "T-1"); its later updates use the same id.'),
    status: z.enum(TASK_STATUSES).optional().describe('For task_update: the task\'s state now (default open).'),
    supersedes: z
      .array(toolId())
      .max(20)
      .optional()
      .describe('For decision: the event ids of earlier decisions this one replaces.'),
    rationale: z.string().min(1).max(4000).optional().describe('For decision: why it was made.'),
    alternatives: z
      .array(z.string().min(1).max(500))
      .max(20)
      .optional()
      .describe('For decision: the options considered and not taken.'),
    constraints: z
      .array(z.string().min(1).max(500))
      .max(20)
      .optional()
      .describe('For decision: the limits it was made within, e.g. "no network access".'),
    consequences: z
      .array(z.string().min(1).max(500))
      .max(20)
      .optional()
      .describe('For decision: what follows from it, e.g. "imports must be rewritten".'),
    actor_type: z.enum(['human', 'agent', 'tool']).optional().describe('Who acted (default: agent).'),
    actor_id: toolId().optional().describe('Which human, agent or tool.'),
    ...logged,
    refs: z.array(toolId()).max(100).optional().describe('Ids of events or documents it refers to.'),
  })
  .superRefine((v, issues) => {
    for (const [field, kinds] of Object.entries(FIELD_KINDS) as [keyof typeof FIELD_KINDS, readonly string[]][]) {
      if (v[field] !== undefined && !kinds.includes(v.kind)) {
        issues.addIssue({ code: 'custom', path: [field], message: `${field} is for ${kinds.join(' and ')} only` })
      }
    }
    if ((v.kind === 'tool_call' || v.kind === 'tool_result') && v.tool === undefined) {
      issues.addIssue({ code: 'custom', path: ['tool'], message: `a ${v.kind} needs tool` })
    }
    if (v.kind !== 'tool_call' && v.text === undefined) {
      issues.addIssue({ code: 'custom', path: ['text'], message: `a ${v.kind} needs text` })
    }
    // Without an id, each update would be a task of its own, open for ever.
    if (v.kind === 'task_update' && v.task_id === undefined) {
      issues.addIssue({ code: 'custom', path: ['task_id'], message: 'a task_update needs task_id' })
    }
    if (v.to !== undefined && !(v.tags ?? []).includes('handoff')) {
      issues.addIssue({ code: 'custom', path: ['to'], message: 'to is for a handoff note: tag it "handoff"' })
    }
  })

/** A decision's details, as record_event takes them, its content keeps them and query_decisions gives them back. */
const DECISION_DETAILS = ['rationale', 'alternatives', 'constraints', 'consequences'] as const

/** The event content a record_event call describes, in the shape the engine reads for its kind. */
function eventContent(a: z.output<typeof recordEvent>): Record<string, unknown> {
  switch (a.kind) {
    case 'tool_call':
      return { tool: a.tool, args: a.tool_args ?? {}, ...(a.text === undefined ? {} : { text: a.text }) }
    case 'tool_result':
      return {
        tool: a.tool,
        output: a.text,
        ...(a.path === undefined ? {} : { path: a.path }),
        ...(a.line_range === undefined ? {} : { lineRange: a.line_range }),
      }
    case 'decision':
      return {
        text: a.text,
        ...Object.fromEntries(DECISION_DETAILS.filter((f) => a[f] !== undefined).map((f) => [f, a[f]])),
        ...(a.supersedes ? { supersedes: a.supersedes } : {}),
      }
    case 'task_update':
      return { text: a.text, ...(a.task_id ? { taskId: a.task_id } : {}), ...(a.status ? { status: a.status } : {}) }
    default:
      return { text: a.text, ...(a.to === undefined ? {} : { to: a.to }) }
  }
}

const turnDocument = z
  .strictObject({
    path: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe('The file it read or wrote, as an absolute path (a path relative to the project root works when the memory has one).'),
    url: z.string().min(1).max(4096).optional().describe('The web page it read.'),
    content: z.string().describe('The file\'s or page\'s content as it was after the call.'),
    effect: z.enum(['read', 'write']).describe('Whether the tool read or wrote it.'),
  })
  .superRefine((d, issues) => {
    if ((d.path === undefined) === (d.url === undefined)) {
      issues.addIssue({ code: 'custom', path: ['path'], message: 'give path or url, one of them' })
    }
  })

const turnProcedure = z
  .strictObject({
    tool: toolId(64)
      .refine((t) => !(BUILTIN_RELATIONS as readonly string[]).includes(t), 'names a link Engram writes itself')
      .describe('The tool\'s name, e.g. read_file.'),
    args: z.record(z.string(), z.unknown()).optional().describe('The arguments it was called with.'),
    document: turnDocument.optional().describe('The file or page the tool read or wrote, as it was after the call.'),
    output: z.string().min(1).optional().describe('Without a document: what the tool returned.'),
  })
  .superRefine((p, issues) => {
    if (p.document !== undefined && p.output !== undefined) {
      issues.addIssue({ code: 'custom', path: ['output'], message: 'a document keeps its content in document.content; drop output' })
    }
  })

/** The flat procedure fields record_turn took before `document`, still read. */
const LEGACY_DOCUMENT_FIELDS = ['path', 'url', 'content', 'effect'] as const

/**
 * record_turn's arguments with the names `recordTurn` uses: `reply` becomes `agent`, and a
 * procedure's flat `path`/`url`/`content`/`effect` become its `document`.
 */
function currentTurnNames(args: unknown): unknown {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return args
  const { reply, procedures, ...rest } = args as Record<string, unknown>
  const named: Record<string, unknown> = reply === undefined || 'agent' in rest ? rest : { ...rest, agent: reply }
  if (reply !== undefined && 'agent' in rest) named.reply = reply
  if (!Array.isArray(procedures)) return procedures === undefined ? named : { ...named, procedures }
  named.procedures = procedures.map((p: unknown) => {
    if (typeof p !== 'object' || p === null || Array.isArray(p) || 'document' in p) return p
    const flat = p as Record<string, unknown>
    if (!LEGACY_DOCUMENT_FIELDS.some((f) => f in flat)) return p
    const document = Object.fromEntries(LEGACY_DOCUMENT_FIELDS.filter((f) => f in flat).map((f) => [f, flat[f]]))
    const kept = Object.fromEntries(Object.entries(flat).filter(([k]) => !(LEGACY_DOCUMENT_FIELDS as readonly string[]).includes(k)))
    return { ...kept, document }
  })
  return named
}

const recordTurn = z.strictObject({
  conversation_id: toolId().describe('The conversation (session) it belongs to.'),
  user: z.string().min(1).describe('The user\'s message, as they wrote it.'),
  agent: z.string().min(1).describe('Your reply.'),
  procedures: z
    .array(turnProcedure)
    .max(MAX_PROCEDURES_PER_TURN)
    .optional()
    .describe('The tools you called to answer, in order: the files and pages they read or wrote, or their output.'),
  ...logged,
})

const buildContext = z.strictObject({
  query: saidText(20_000).describe('What the next step is about; drives retrieval.'),
  intent: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('What you are about to do, in a few words (e.g. "fix the date parser"); recorded with the bundle.'),
  conversation_id: toolId().optional().describe('The current conversation.'),
  max_tokens: z
    .number()
    .int()
    .min(MIN_CONTEXT_BUDGET)
    .max(1_000_000)
    .optional()
    .describe(`Token budget for the whole bundle, ${MIN_CONTEXT_BUDGET} at least.`),
  channel: answerChannel,
})

const getArtifact = z.strictObject({
  artifact_id: toolId(200).describe('The artifact id a tool result names (its artifactId).'),
  channel: answerChannel,
})

const queryDecisions = z.strictObject({
  query: saidText(2000).describe('What the decisions are about, e.g. "database choice".'),
  conversation_id: toolId().optional().describe('Only this conversation\'s decisions.'),
  limit: z.number().int().min(1).max(50).optional().describe('How many (default 10).'),
  include_superseded: z
    .boolean()
    .optional()
    .describe('Also the decisions a later decision replaced, marked superseded (default: only those in force).'),
  channel: answerChannel,
})

/** The tools an agent can call, with the zod schema that validates their arguments. */
export const TOOL_SCHEMAS = {
  save_memory: {
    description:
      'Save a memory that lasts across sessions: a preference, pattern, correction, convention, decision, constraint, procedure or important fact. A memory much like an existing one replaces (supersedes) it instead of duplicating it.',
    schema: saveMemory,
  },
  recall_memories: {
    description:
      "Search memories from past sessions, most relevant first. Call it when starting a task, when you need the user's preferences, or when the user refers to something you should already know.",
    schema: recallMemories,
  },
  manage_memory: {
    description:
      'List, update or delete memories, or forget all of them. Use it when the user asks to see, change or forget what you remember: a deleted memory is erased for good, with its earlier versions.',
    schema: manageMemory,
  },
  record_event: {
    description:
      'Record something that happened in this conversation (a message, tool call, tool result, decision or task update) in the permanent log.',
    schema: recordEvent,
  },
  record_turn: {
    description:
      'Record one exchange of this conversation in the permanent log: the user\'s message, your reply, and the tools you called, with the files and pages they read or wrote (each file\'s content becomes a version, so later sessions can tell whether what you read has changed since).',
    schema: recordTurn,
  },
  build_context: {
    description:
      'Assemble the context for your next step: rules, task state, decisions and relevant past evidence, within a token budget.',
    schema: buildContext,
  },
  get_artifact: {
    description:
      'Read the full output of a tool result that was cut to an excerpt (the excerpt names its artifact id, and a context bundle lists it among its omissions).',
    schema: getArtifact,
  },
  query_decisions: {
    description:
      'Search the decisions recorded in past conversations (the decision ledger), most relevant first, each with when and where it was made. Decisions a later one replaced are left out unless include_superseded is true.',
    schema: queryDecisions,
  },
} as const

export type ToolName = keyof typeof TOOL_SCHEMAS
export const TOOL_NAMES = Object.keys(TOOL_SCHEMAS) as ToolName[]

/** A tool's input as JSON Schema (what function-calling APIs and MCP take). */
export function jsonSchemaOf(name: ToolName): Record<string, unknown> {
  const { $schema: _, ...schema } = z.toJSONSchema(TOOL_SCHEMAS[name].schema, { io: 'input' }) as Record<
    string,
    unknown
  >
  return schema
}

/** Tool definitions for OpenAI-style function calling (`tools: [...]`). */
export function openAITools(names: readonly ToolName[] = TOOL_NAMES) {
  return names.map((name) => ({
    type: 'function' as const,
    function: { name, description: TOOL_SCHEMAS[name].description, parameters: jsonSchemaOf(name) },
  }))
}

/** Tool definitions for Anthropic tool use (`tools: [...]`). */
export function anthropicTools(names: readonly ToolName[] = TOOL_NAMES) {
  return names.map((name) => ({
    name,
    description: TOOL_SCHEMAS[name].description,
    input_schema: jsonSchemaOf(name),
  }))
}

const toolName = z.string()
const identityField = identifier.optional()
/** A `ToolIdentity` as callers give it (checked by `callTool` and the MCP server). */
export const toolIdentity = z.strictObject({
  tenantId: identityField,
  userId: identityField,
  agentId: identityField,
  projectId: identityField,
  runId: identityField,
})

/** Who a tool call acts for: it can only see and change this user's memories. */
export interface ToolIdentity {
  tenantId?: string
  userId?: string
  agentId?: string
  projectId?: string
  runId?: string
}

/**
 * What `callTool` needs from the engine; `record`, `recordTurn`, `buildContext`, `search` and
 * `artifacts.get` are used when present (else their tools answer NOT_SUPPORTED).
 */
export interface ToolHost {
  remember(input: RememberInput): Promise<RememberResult>
  recall(query: string, options?: RecallOptions): Promise<MemoryHit[]>
  memories: {
    get(id: string, options?: { tenantId?: string }): Promise<MemoryRecord | null>
    list(options?: MemoryListOptions): Promise<MemoryRecord[]>
    update(id: string, changes: MemoryUpdate, options?: { tenantId?: string }): Promise<MemoryRecord>
    delete(id: string, options?: { tenantId?: string }): Promise<{ id: string; deleted: true }>
    forgetAll(input: ForgetAllInput): Promise<{ deleted: number }>
  }
}

function brief(m: MemoryRecord) {
  return {
    id: m.id,
    content: m.content,
    category: m.category,
    scope: m.scope,
    confidence: m.confidence,
    contexts: m.contexts,
    ...(m.relatedTo.length === 0 ? {} : { related_to: m.relatedTo }),
    use_count: m.useCount,
    ...(m.key === null ? {} : { key: m.key }),
    ...(m.expiresAt === null ? {} : { expires_at: m.expiresAt.toISOString() }),
  }
}

/** The caller's own memories: user-wide ones and those of the current project (never global). */
function ownMemories(identity: ToolIdentity): FilterExpression {
  return {
    AND: [
      { field: 'user_id', operator: 'eq', value: identity.userId ?? null },
      {
        OR: [
          { field: 'scope', operator: 'eq', value: 'user' },
          {
            AND: [
              { field: 'scope', operator: 'eq', value: 'project' },
              { field: 'project_id', operator: 'eq', value: identity.projectId ?? null },
            ],
          },
        ],
      },
    ],
  }
}

/** The caller's tenant, as the engine's options take it (none: the default tenant). */
function tenantOf(identity: ToolIdentity): { tenantId?: string } {
  return identity.tenantId === undefined ? {} : { tenantId: identity.tenantId }
}

function who(identity: ToolIdentity) {
  return {
    ...tenantOf(identity),
    ...(identity.userId === undefined ? {} : { userId: identity.userId }),
  }
}

/**
 * Runs a tool call from a model: validates the arguments (INVALID_INPUT) and calls the
 * engine on behalf of `identity`. Returns plain JSON to hand back to the model.
 *
 * @example
 * const out = await memory.callTool('recall_memories', { query: 'code style' }, { userId: 'alice' })
 */
export async function callTool(
  host: ToolHost,
  name: string,
  args: unknown,
  identityInput: ToolIdentity = {},
): Promise<unknown> {
  parseInput(toolName, name, 'tool name')
  const identity = parseInput(toolIdentity, identityInput, 'tool identity') as ToolIdentity
  if (!Object.hasOwn(TOOL_SCHEMAS, name)) {
    throw new MemoryError('INVALID_INPUT', `Unknown tool "${name}"; known tools: ${TOOL_NAMES.join(', ')}`, {
      details: { tool: name },
    })
  }
  const tool = name as ToolName
  const project = identity.projectId === undefined ? {} : { projectId: identity.projectId }
  switch (tool) {
    case 'save_memory': {
      const a = parseInput(saveMemory, args, 'save_memory arguments')
      return host.remember({
        content: a.content,
        category: a.category,
        ...(a.source ? { source: a.source } : {}),
        ...(a.scope ? { scope: a.scope } : {}),
        ...(a.context ? { context: a.context } : {}),
        ...(a.related_to ? { relatedTo: a.related_to } : {}),
        ...(a.key ? { key: a.key } : {}),
        ...(a.expires_at ? { expiresAt: a.expires_at } : {}),
        ...who(identity),
        ...(identity.agentId === undefined ? {} : { agentId: identity.agentId }),
        ...project,
      })
    }
    case 'recall_memories': {
      const a = parseInput(recallMemories, args, 'recall_memories arguments')
      const hits = await host.recall(a.query, {
        ...(a.category ? { category: a.category } : {}),
        ...(a.scope ? { scope: a.scope } : {}),
        ...(a.limit ? { limit: a.limit } : {}),
        ...(a.relevant_to ? { relevantTo: a.relevant_to } : {}),
        ...who(identity),
        ...project,
      })
      return { memories: hits.map((h) => ({ ...brief(h), score: h.scores.fused })) }
    }
    case 'manage_memory': {
      const a = parseInput(manageMemory, args, 'manage_memory arguments')
      if (a.action === 'list') {
        const list = await host.memories.list({
          ...tenantOf(identity),
          ...(a.category ? { category: a.category } : {}),
          filters: ownMemories(identity),
          limit: a.limit ?? 20,
        })
        return { memories: list.map(brief) }
      }
      if (a.action === 'forget_all') {
        // Erased for good where the memory can (forget): the text, and every earlier text in
        // its history; otherwise deleted from every read.
        if (!hasMethod(host, 'forget')) {
          return host.memories.forgetAll({
            ...tenantOf(identity),
            filters: ownMemories(identity),
            confirm: true,
          })
        }
        // In batches of what one forget takes, until none of the caller's own is left.
        let deleted = 0
        for (;;) {
          const own = await host.memories.list({
            ...tenantOf(identity),
            filters: ownMemories(identity),
            status: 'any',
            limit: FORGET_BATCH,
          })
          if (own.length === 0) return { deleted }
          // A forget at the same time may have erased them first: nothing is left of them either way.
          const gone = (await optional(host, 'forget')({
            memoryIds: own.map((m) => m.id),
            ...tenantOf(identity),
          }).catch(alreadyGone)) as { counts: { memories: number } }
          // Nothing left to erase of what was listed (another forget took it): done.
          if (gone.counts.memories === 0) return { deleted }
          deleted += gone.counts.memories
        }
      }
      const id = a.memory_id as string
      const tenant = tenantOf(identity)
      const target = await host.memories.get(id, tenant)
      if (!target || target.status === 'deleted' || !owned(target, identity)) {
        throw new MemoryError('NOT_FOUND', `No memory "${id}"`, { details: { id } })
      }
      if (a.action === 'delete') {
        if (!hasMethod(host, 'forget')) return host.memories.delete(id, tenant)
        await optional(host, 'forget')({ memoryIds: [id], ...tenant }).catch(alreadyGone)
        return { id, deleted: true }
      }
      const { expires_at: expiresAt, ...changes } = a.updates ?? {}
      return brief(await host.memories.update(id, { ...changes, ...(expiresAt === undefined ? {} : { expiresAt }) }, tenant))
    }
    case 'record_event': {
      const a = parseInput(recordEvent, args, 'record_event arguments')
      return optional(
        host,
        'record',
      )({
        kind: a.kind,
        scope: {
          conversationId: a.conversation_id,
          ...who(identity),
          ...(identity.agentId === undefined ? {} : { agentId: identity.agentId }),
          ...(identity.runId === undefined ? {} : { runId: identity.runId }),
        },
        actor: { type: a.actor_type ?? 'agent', id: a.actor_id ?? identity.agentId ?? 'agent' },
        content: eventContent(a),
        ...(a.channel ? { channel: a.channel } : {}),
        ...(a.sensitivity ? { sensitivity: a.sensitivity } : {}),
        ...(a.tags ? { tags: a.tags } : {}),
        ...(a.refs ? { refs: a.refs } : {}),
      })
    }
    case 'record_turn': {
      const a = parseInput(recordTurn, currentTurnNames(args), 'record_turn arguments')
      const turn = (await optional(
        host,
        'recordTurn',
      )({
        conversationId: a.conversation_id,
        scope: {
          ...who(identity),
          ...(identity.agentId === undefined ? {} : { agentId: identity.agentId }),
          ...(identity.runId === undefined ? {} : { runId: identity.runId }),
        },
        user: a.user,
        agent: identity.agentId === undefined ? a.agent : { text: a.agent, actorId: identity.agentId },
        procedures: (a.procedures ?? []).map((p) => ({
          tool: p.tool,
          ...(p.args === undefined ? {} : { args: p.args }),
          ...(p.output === undefined ? {} : { output: p.output }),
          ...(p.document === undefined ? {} : { document: p.document }),
        })),
        ...(a.channel ? { channel: a.channel } : {}),
        ...(a.sensitivity ? { sensitivity: a.sensitivity } : {}),
        ...(a.tags ? { tags: a.tags } : {}),
      })) as TurnRecord
      return {
        turn_index: turn.turnIndex,
        user_event_id: turn.userEventId,
        reply_event_id: turn.agentEventId,
        created_at: turn.createdAt,
        procedures: turn.procedures.map((p) => ({
          tool: p.tool,
          ...(p.canonicalKey === undefined ? {} : { document: p.canonicalKey }),
          ...(p.version === undefined ? {} : { version: p.version, version_created: p.versionCreated === true }),
          ...(p.toolCallEventId === undefined ? {} : { tool_call_event_id: p.toolCallEventId }),
          ...(p.toolResultEventId === undefined ? {} : { tool_result_event_id: p.toolResultEventId }),
        })),
      }
    }
    case 'get_artifact': {
      const a = parseInput(getArtifact, args, 'get_artifact arguments')
      const artifact = (await optional(
        host,
        'artifacts.get',
      )(a.artifact_id, {
        ...tenantOf(identity),
        ...(a.channel ? { channel: a.channel } : {}),
      })) as { id: string; eventId: string; mediaType: string; bytes: number; content: string; createdAt: string }
      // A caller with a user reads the outputs of that user's events only, as its searches do.
      if (identity.userId !== undefined) {
        const event = (await optional(host, 'events.get')(artifact.eventId, tenantOf(identity))) as { scope: { userId?: string } }
        if (event.scope.userId !== identity.userId) {
          throw new MemoryError('NOT_FOUND', `No artifact "${a.artifact_id}"`, { details: { id: a.artifact_id } })
        }
      }
      return {
        id: artifact.id,
        event_id: artifact.eventId,
        media_type: artifact.mediaType,
        bytes: artifact.bytes,
        created_at: artifact.createdAt,
        content: artifact.content,
      }
    }
    case 'query_decisions': {
      const a = parseInput(queryDecisions, args, 'query_decisions arguments')
      const limit = a.limit ?? 10
      const channel = a.channel ? { channel: a.channel } : {}
      // More than asked, so that enough are left once the superseded ones are dropped.
      const hits = (await optional(
        host,
        'search',
      )(a.query, {
        kinds: ['decision'],
        limit: a.include_superseded ? limit : Math.min(limit * 3, 150),
        scope: { ...who(identity), ...(a.conversation_id ? { conversationId: a.conversation_id } : {}) },
        ...channel,
      })) as { eventId: string; text: string; conversationId: string; createdAt: string; score: number }[]
      // Superseded as this user sees the decisions: another user's decision replaces nothing of theirs.
      const by = (await optional(host, 'events.supersededBy')(
        hits.map((h) => h.eventId),
        { ...tenantOf(identity), ...channel, ...(identity.userId ? { userId: identity.userId } : {}) },
      )) as Record<string, string>
      const kept = hits.filter((h) => a.include_superseded || by[h.eventId] === undefined).slice(0, limit)
      // Each decision's own record: why, what else was weighed, within what, with what
      // consequences, and the evidence it cites.
      const events = (await Promise.all(
        kept.map((h) =>
          optional(host, 'events.get')(h.eventId, {
            ...tenantOf(identity),
            ...channel,
          }),
        ),
      )) as { content: Record<string, unknown>; refs: string[] }[]
      return {
        decisions: kept.map((h, n) => {
          const { content, refs } = events[n] as { content: Record<string, unknown>; refs: string[] }
          const said = content.decision ?? content.text
          return {
            id: h.eventId,
            // The decision as said, not the text it was indexed by (which adds its details).
            text: typeof said === 'string' ? said : h.text,
            ...decisionDetails(content),
            ...(refs.length === 0 ? {} : { refs }),
            conversation_id: h.conversationId,
            created_at: h.createdAt,
            status: by[h.eventId] === undefined ? 'active' : 'superseded',
            ...(by[h.eventId] === undefined ? {} : { superseded_by: by[h.eventId] }),
            score: h.score,
          }
        }),
      }
    }
    case 'build_context': {
      const a = parseInput(buildContext, args, 'build_context arguments')
      return optional(
        host,
        'buildContext',
      )({
        query: a.query,
        ...(a.intent ? { intent: a.intent } : {}),
        ...(a.conversation_id ? { conversationId: a.conversation_id } : {}),
        ...(a.max_tokens ? { maxTokens: a.max_tokens } : {}),
        ...(a.channel ? { channel: a.channel } : {}),
        ...who(identity),
        ...(identity.agentId === undefined ? {} : { agentId: identity.agentId }),
        ...(identity.projectId === undefined ? {} : { projectId: identity.projectId }),
      })
    }
  }
}

/** The reasons, options, limits and consequences a decision's content records, as the tools name them. */
function decisionDetails(content: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const field of DECISION_DETAILS) {
    const value = content[field]
    if (typeof value === 'string' || (Array.isArray(value) && value.length > 0)) out[field] = value
  }
  return out
}

/** A memory belongs to the caller when it is theirs (or global, which only admins change). */
function owned(m: MemoryRecord, identity: ToolIdentity): boolean {
  if (m.tenantId !== (identity.tenantId ?? 'default')) return false
  if (m.scope === 'global') return false
  if (m.userId !== (identity.userId ?? null)) return false
  return m.scope !== 'project' || m.projectId === (identity.projectId ?? null)
}

/** How many memories one forget of `forget_all` erases at most (what `forget({ memoryIds })` takes). */
export const FORGET_BATCH = 10_000

/** A forget that found nothing left to erase (another erased it first): nothing erased here. */
function alreadyGone(error: unknown): { counts: { memories: number } } {
  if (MemoryError.is(error, 'NOT_FOUND')) return { counts: { memories: 0 } }
  throw error
}

/** Whether the host has a method of its own beyond `ToolHost`. */
function hasMethod(host: ToolHost, method: string): boolean {
  return typeof (host as unknown as Record<string, unknown>)[method] === 'function'
}

/** A method of the engine the tool needs beyond `ToolHost` (a dotted path), or NOT_SUPPORTED. */
function optional(
  host: ToolHost,
  method: 'record' | 'recordTurn' | 'buildContext' | 'search' | 'artifacts.get' | 'events.get' | 'events.supersededBy' | 'forget',
): (...args: unknown[]) => Promise<unknown> {
  const path = method.split('.')
  const owner = path.slice(0, -1).reduce<unknown>((o, key) => (o as Record<string, unknown> | undefined)?.[key], host)
  const fn = (owner as Record<string, unknown> | undefined)?.[path.at(-1) as string]
  if (typeof fn !== 'function') {
    throw new MemoryError('NOT_SUPPORTED', `This memory has no ${method}() to run the tool with`, {
      details: { method },
    })
  }
  return async (...args) => (fn as (...a: unknown[]) => unknown).apply(owner, args)
}

/**
 * Guidance for the model on when and how to use the memory tools. Put it in the system
 * prompt next to the tool definitions.
 */
export const MEMORY_GUIDELINES = `## Memory

You have a memory that lasts across sessions. It lives on this device. Use it without being asked.

### Recall first (recall_memories)
- At the start of any real task, recall what applies: "user coding preferences" before writing code, "project conventions" and "decisions" before changing structure, "communication preferences" before a long explanation.
- When the user says "like I told you", "as usual", "the way I like it", "remember when …".
- When you are unsure about a style, a convention or a preference. Recalling is cheap; guessing wrong is not.

### Save as you learn (save_memory)
Save at once when the user states:
- a preference: "I prefer …", "always …", "never …" → preference
- a correction: "No, do it this way", "I told you to …" → correction (source: corrected)
- a convention: "In this project we …", "our team always …" → convention
- a fact: "our API runs on …", "we deploy with …" → fact
- an instruction: "when you write tests, always …" → instruction
- a decision and why it was made → decision; a rule that must not be broken → constraint; how to build, test or release → procedure
Also save what you infer (source: inferred): the user keeps correcting the same thing → pattern; the code consistently follows a style → convention.

### Write good memories
- Specific and self-contained. Not "User likes clean code" but "User wants explicit return types on every exported TypeScript function".
- With context. Not "Use prettier" but "The project formats with Prettier: singleQuote true, semi false, tabWidth 2".
- One fact per memory. Present tense: "User prefers …".
- Project-only knowledge gets scope "project"; the rest is the user's, everywhere.
- Saving something close to an existing memory replaces it: you do not need to delete the old one first.
- Something true only for a while ("on leave until Friday", "the staging freeze this week") gets expires_at: it is forgotten by itself afterwards.

### Never save
- Passwords, API keys, tokens or any other secret.
- Passing task details ("asked me to fix bug #123") or what anyone could see from the code.

### The session log (record_turn)
- When the host does not record the conversation itself, record each exchange that used tools with record_turn: the user's message, your reply, and the files you read or wrote with their content.

### Handing over (record_event)
- When another agent will carry on the work, leave a note: record_event with kind message, tags ["handoff"] and, when you know it, to: the agent it is for. It reaches that agent's context.

### Past decisions and full outputs (query_decisions, get_artifact)
- Before changing something that was decided in an earlier session, look the decision up with query_decisions and say if you go against it.
- A tool result cut to an excerpt names its artifact: read it whole with get_artifact only when the excerpt is not enough.

### Changing and forgetting (manage_memory)
When the user asks what you remember, list it. When they ask you to change or forget something, update or delete it. Forget everything only after they confirmed.`
