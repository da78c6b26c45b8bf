import { MEMORY_CATEGORIES } from '../memories/memories.ts'
import { BUILTIN_RELATIONS } from '../graph/edges.ts'
import { MAX_ID_LENGTH, MAX_PROCEDURES_PER_TURN } from '../kernel/limits.ts'
import { identifier } from '../kernel/scope.ts'
import { MIN_CONTEXT_BUDGET } from '../retrieval/context-input.ts'
import { z } from '../kernel/validate.ts'

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
export const DECISION_DETAILS = ['rationale', 'alternatives', 'constraints', 'consequences'] as const

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

export const toolName = z.string()
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
