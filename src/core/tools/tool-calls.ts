import { MemoryError } from '../kernel/errors.ts'
import type { FilterExpression } from '../db/filters.ts'
import type {
  ForgetAllInput,
  MemoryHit,
  MemoryListOptions,
  MemoryRecord,
  MemoryUpdate,
  RecallOptions,
  RememberInput,
  RememberResult,
} from '../memories/memories.ts'
import { parseInput, type z } from '../kernel/validate.ts'
import type { TurnRecord } from '../turns/turns.ts'
import { DECISION_DETAILS, TOOL_NAMES, TOOL_SCHEMAS, type ToolIdentity, toolIdentity, type ToolName, toolName } from './agent-tools.ts'

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

/** The caller's agent, where it named one. */
function agentOf(identity: ToolIdentity): { agentId?: string } {
  return identity.agentId === undefined ? {} : { agentId: identity.agentId }
}

/** The caller's project, where it named one. */
function projectOf(identity: ToolIdentity): { projectId?: string } {
  return identity.projectId === undefined ? {} : { projectId: identity.projectId }
}

/** The caller's agent and run, as an event's scope takes them. */
function runOf(identity: ToolIdentity): { agentId?: string; runId?: string } {
  return { ...agentOf(identity), ...(identity.runId === undefined ? {} : { runId: identity.runId }) }
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
  return TOOL_CALLS[tool](host, args, identity)
}

/** Each tool's call, by its name. */
const TOOL_CALLS: Record<ToolName, (host: ToolHost, args: unknown, identity: ToolIdentity) => Promise<unknown>> = {
  save_memory: saveMemoryTool,
  recall_memories: recallMemoriesTool,
  manage_memory: manageMemoryTool,
  record_event: recordEventTool,
  record_turn: recordTurnTool,
  get_artifact: getArtifactTool,
  query_decisions: queryDecisionsTool,
  build_context: buildContextTool,
}

/** save_memory: `remember` for the caller. */
async function saveMemoryTool(host: ToolHost, args: unknown, identity: ToolIdentity): Promise<unknown> {
  const a = parseInput(TOOL_SCHEMAS.save_memory.schema, args, 'save_memory arguments')
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
    ...agentOf(identity),
    ...projectOf(identity),
  })
}

/** recall_memories: `recall` within the caller's own memories and project. */
async function recallMemoriesTool(host: ToolHost, args: unknown, identity: ToolIdentity): Promise<unknown> {
  const a = parseInput(TOOL_SCHEMAS.recall_memories.schema, args, 'recall_memories arguments')
  const hits = await host.recall(a.query, {
    ...(a.category ? { category: a.category } : {}),
    ...(a.scope ? { scope: a.scope } : {}),
    ...(a.limit ? { limit: a.limit } : {}),
    ...(a.relevant_to ? { relevantTo: a.relevant_to } : {}),
    ...who(identity),
    ...projectOf(identity),
  })
  return { memories: hits.map((h) => ({ ...brief(h), score: h.scores.fused })) }
}

/** manage_memory: list, update or delete one of the caller's memories, or forget them all. */
async function manageMemoryTool(host: ToolHost, args: unknown, identity: ToolIdentity): Promise<unknown> {
  const a = parseInput(TOOL_SCHEMAS.manage_memory.schema, args, 'manage_memory arguments')
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

/** record_event: one event in the log, acted for the caller. */
async function recordEventTool(host: ToolHost, args: unknown, identity: ToolIdentity): Promise<unknown> {
  const a = parseInput(TOOL_SCHEMAS.record_event.schema, args, 'record_event arguments')
  return optional(
    host,
    'record',
  )({
    kind: a.kind,
    scope: {
      conversationId: a.conversation_id,
      ...who(identity),
      ...runOf(identity),
    },
    actor: { type: a.actor_type ?? 'agent', id: a.actor_id ?? identity.agentId ?? 'agent' },
    content: eventContent(a),
    ...(a.channel ? { channel: a.channel } : {}),
    ...(a.sensitivity ? { sensitivity: a.sensitivity } : {}),
    ...(a.tags ? { tags: a.tags } : {}),
    ...(a.refs ? { refs: a.refs } : {}),
  })
}

/** record_turn: `recordTurn` for the caller, answered in the tools' snake_case. */
async function recordTurnTool(host: ToolHost, args: unknown, identity: ToolIdentity): Promise<unknown> {
  const a = parseInput(TOOL_SCHEMAS.record_turn.schema, currentTurnNames(args), 'record_turn arguments')
  const turn = (await optional(
    host,
    'recordTurn',
  )({
    conversationId: a.conversation_id,
    scope: {
      ...who(identity),
      ...runOf(identity),
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

/** get_artifact: a tool output kept whole, if the caller may read its event. */
async function getArtifactTool(host: ToolHost, args: unknown, identity: ToolIdentity): Promise<unknown> {
  const a = parseInput(TOOL_SCHEMAS.get_artifact.schema, args, 'get_artifact arguments')
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

/** query_decisions: the decisions search finds, each with its own record and whether a later one replaced it. */
async function queryDecisionsTool(host: ToolHost, args: unknown, identity: ToolIdentity): Promise<unknown> {
  const a = parseInput(TOOL_SCHEMAS.query_decisions.schema, args, 'query_decisions arguments')
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

/** build_context: `buildContext` for the caller. */
async function buildContextTool(host: ToolHost, args: unknown, identity: ToolIdentity): Promise<unknown> {
  const a = parseInput(TOOL_SCHEMAS.build_context.schema, args, 'build_context arguments')
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
    ...agentOf(identity),
    ...projectOf(identity),
  })
}

/** The event content a record_event call describes, in the shape the engine reads for its kind. */
function eventContent(a: z.output<(typeof TOOL_SCHEMAS)['record_event']['schema']>): Record<string, unknown> {
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
