import type { EdgeWriteResult, GraphWriteInput, Neighbor, NeighborsOptions, NodeRecord, NodesOptions, RemoveOptions } from '../../core/graph/entities.ts'
import { identifier } from '../../core/kernel/scope.ts'
import { MemoryError } from '../../core/kernel/errors.ts'
import { type FilterExpression, filterExpressionSchema } from '../../core/db/filters.ts'
import { type LLM, modelList, parseModelJson } from './llm.ts'
import { sha256Hex } from '../../core/kernel/hash.ts'
import { jsonRecord } from '../../core/kernel/json.ts'
import { redact } from '../../core/privacy/redact.ts'
import { DEFAULT_SCORING } from '../../core/kernel/scoring.ts'
import type {
  ForgetAllInput,
  MemoryResetInput,
  MemoryHistoryRecord,
  MemoryHit,
  MemoryListOptions,
  MemoryRecord,
  MemorySearchOptions,
  MemoryUpdate,
  RememberInput,
  RememberResult,
} from '../../core/memories/memories.ts'
import { MAX_MEMORY_CONTENT } from '../../core/memories/memories.ts'
import { timeInput } from '../../core/kernel/time.ts'
import { refuseSealedLookalike } from '../../core/privacy/vault.ts'
import { parseInput, z } from '../../core/kernel/validate.ts'

/** Asks the model for atomic facts; answers `{ "facts": [...] }`. */
export const FACT_EXTRACTION_PROMPT = `You extract durable, atomic facts from a conversation so an assistant can remember them in later conversations.

Look for: personal preferences (likes, dislikes, habits); biographical details (name, occupation, location, relationships); goals and plans; technical preferences and skills; important dates and events; opinions; project details and requirements; communication preferences.

Rules:
- One self-contained statement per fact, specific, with the context it needs.
- Only what is stated or clearly implied; no guesses.
- No duplicates across facts.
- Third person, present tense: "User prefers ...", not "You prefer ...".
- Never extract passwords, API keys, tokens or other secrets.

Answer with JSON only: {"facts": ["...", "..."]}. If nothing is worth remembering, answer {"facts": []}.
Example: {"facts": ["User's name is Alice", "User works as a data scientist at Acme Corp", "User prefers PyTorch over TensorFlow"]}`

/** Asks the model what a new fact does to the memories most like it; answers `{ "operations": [...] }`. */
export const UPDATE_DECISION_PROMPT = `You keep an assistant's memory accurate. You get a new fact and the existing memories most similar to it, each with an ID.

Decide what to do, as a list of operations:
- {"event": "ADD", "data": "<text>"}: the fact holds information no existing memory has.
- {"event": "UPDATE", "id": "<ID>", "data": "<merged text>"}: an existing memory says something close but the new fact refines, corrects or replaces it (for example "moved to San Francisco" when a memory says "lives in NYC"). Keep the nuance of both; prefer the newer information.
- {"event": "DELETE", "id": "<ID>"}: the new fact shows an existing memory is no longer true and nothing should replace it.
- {"event": "NONE"}: the fact is already fully captured.

Use only IDs from the list. Several operations are allowed (for example UPDATE one memory and ADD another).

Answer with JSON only: {"operations": [ ... ]}.`

/** The entity types graph memory keeps; any other the model names is kept as a `concept`. */
export const GRAPH_ENTITY_TYPES = ['person', 'organization', 'concept', 'location', 'event', 'technology', 'product'] as const

/**
 * Asks the model for the entities of a conversation and how they relate; answers
 * `{ "entities": [{ name, type, description }], "relations": [{ source, relation, target }] }`.
 */
export const GRAPH_EXTRACTION_PROMPT = `You build a small knowledge graph from a conversation so an assistant can remember who and what relate to whom.
Return JSON: {"entities": [{"name": "...", "type": "...", "description": "..."}], "relations": [{"source": "...", "relation": "...", "target": "..."}]}.
- entities: the people, organizations, concepts, locations, events, technologies and products the conversation states something about. "name" as it is usually written, in title case; "type" one of person, organization, concept, location, event, technology, product; "description" a few words, or leave it out. The user is "User" unless they give their name.
- relations: how two of those entities relate, as a short snake_case verb phrase (works_at, lives_in, uses, knows, likes, founded). "source" and "target" are names from "entities".
- Only what the conversation states. With nothing to record: {"entities": [], "relations": []}.`

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant'
  content: string
}

/** A memory as the mem0 API shows it. */
export interface Mem0Item {
  id: string
  memory: string
  hash: string
  metadata: Record<string, unknown>
  score?: number
  created_at: string
  updated_at: string
  user_id?: string
  agent_id?: string
  run_id?: string
  /** When it expires (`add(…, { expirationDate })`). */
  expiration_date?: string
}

export interface Mem0Event {
  id?: string
  event: 'ADD' | 'UPDATE' | 'DELETE' | 'NONE'
  memory?: string
  old_memory?: string
  new_memory?: string
  /** For an UPDATE that superseded a near duplicate: the memory it replaced. */
  previous_id?: string
  metadata?: Record<string, unknown>
}

/** A link of graph memory: `source` —`relationship`→ `destination`, by entity name. */
export interface Mem0Relation {
  source: string
  relationship: string
  destination: string
}

export interface Mem0History {
  id: string
  memory_id: string
  event: 'ADD' | 'UPDATE' | 'DELETE'
  old_value: string | null
  new_value: string | null
  timestamp: string
  is_deleted: boolean
  user_id?: string
  agent_id?: string
  run_id?: string
}

export interface Mem0Scope {
  userId?: string
  agentId?: string
  runId?: string
}

/** The part of the engine the facade uses — a local engine or a comlink remote both fit. */
export interface MemoryEngine {
  remember(input: RememberInput): Promise<RememberResult>
  memories: {
    get(id: string, options?: { tenantId?: string }): Promise<MemoryRecord | null>
    list(options?: MemoryListOptions): Promise<MemoryRecord[]>
    search(query: string, options?: MemorySearchOptions): Promise<MemoryHit[]>
    update(id: string, changes: MemoryUpdate, options?: { tenantId?: string }): Promise<MemoryRecord>
    delete(id: string, options?: { tenantId?: string }): Promise<{ id: string; deleted: true }>
    history(id: string, options?: { tenantId?: string }): Promise<MemoryHistoryRecord[]>
    forgetAll(input: ForgetAllInput): Promise<{ deleted: number }>
    reset(input: MemoryResetInput): Promise<{ memories: number }>
  }
  /** The entity graph, for graph memory (`MemoryOptions.graph`). */
  graph?: MemoryGraph
}

/** The part of the entity graph that graph memory uses. */
export interface MemoryGraph {
  putGraph(input: GraphWriteInput): Promise<{ nodes: unknown[]; edges: EdgeWriteResult[] }>
  nodes(options?: NodesOptions): Promise<NodeRecord[]>
  neighbors(id: string | readonly string[], options?: NeighborsOptions): Promise<Neighbor[]>
  removeNodes(ids: string[], options?: RemoveOptions): Promise<{ removed: string[]; edges: number }>
}

export interface MemoryOptions {
  /** Turns on fact extraction and ADD / UPDATE / DELETE decisions. Without it, `add` stores user messages. */
  llm?: LLM
  prompts?: { factExtraction?: string; updateDecision?: string; graphExtraction?: string }
  tenantId?: string
  /**
   * Graph memory: with an `llm`, `add` also extracts the entities of the conversation and how
   * they relate into the engine's entity graph (one graph per scope), and `search` answers
   * with the links of the entities the query names and the memories of the entities they
   * link to. Needs an engine with a `graph`.
   */
  graph?: boolean
}

const scopeFields = {
  userId: identifier.optional(),
  agentId: identifier.optional(),
  runId: identifier.optional(),
}
const messagesSchema = z.union([
  z.string().min(1),
  z.array(z.strictObject({ role: z.enum(['system', 'user', 'assistant']), content: z.string() })).min(1),
])
const addOptions = z.strictObject({
  ...scopeFields,
  // Checked here, as memories check it: the model's path swallows each fact's own failures.
  metadata: jsonRecord.optional(),
  filters: z.unknown().optional(),
  prompt: z.string().min(1).optional(),
  infer: z.boolean().optional(),
  /** When the memories this call adds expire: they leave search and getAll from then on. */
  expirationDate: timeInput.optional(),
})
export type Mem0AddOptions = z.input<typeof addOptions>
const searchOptions = z.strictObject({
  ...scopeFields,
  limit: z.number().int().min(1).max(1000).default(100),
  filters: z.unknown().optional(),
  /** Leaves out results whose `score` (the fused rank score, 0–1) is below this. */
  threshold: z.number().min(0).max(1).optional(),
})
export type Mem0SearchOptions = z.input<typeof searchOptions>
const getAllOptions = z.strictObject({
  ...scopeFields,
  limit: z.number().int().min(1).max(10_000).default(100),
  filters: z.unknown().optional(),
})
export type Mem0GetAllOptions = z.input<typeof getAllOptions>

const SCOPE_MESSAGE = 'At least one of user_id, agent_id, or run_id must be provided'

type GivenScope = { [K in keyof Mem0Scope]?: string | undefined }

function requireScope(s: GivenScope): void {
  if (s.userId === undefined && s.agentId === undefined && s.runId === undefined) {
    throw new MemoryError('SCOPE_REQUIRED', SCOPE_MESSAGE)
  }
}

function scopeOf(s: GivenScope): Mem0Scope {
  return {
    ...(s.userId === undefined ? {} : { userId: s.userId }),
    ...(s.agentId === undefined ? {} : { agentId: s.agentId }),
    ...(s.runId === undefined ? {} : { runId: s.runId }),
  }
}

function toItem(m: MemoryRecord, score?: number): Mem0Item {
  return {
    id: m.id,
    memory: m.content,
    hash: m.hash,
    metadata: m.metadata,
    ...(score === undefined ? {} : { score }),
    created_at: m.createdAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
    ...(m.userId === null ? {} : { user_id: m.userId }),
    ...(m.agentId === null ? {} : { agent_id: m.agentId }),
    ...(m.runId === null ? {} : { run_id: m.runId }),
    ...(m.expiresAt === null ? {} : { expiration_date: m.expiresAt.toISOString() }),
  }
}

/**
 * A memory's own fields in mem0, and the engine's column each stands for; a filter's other
 * fields are metadata keys there, so `category` or `source` reads `metadata.category`, not the
 * engine's column of that name.
 */
const MEM0_FIELDS: Record<string, string> = {
  id: 'id',
  memory: 'memory',
  hash: 'hash',
  user_id: 'user_id',
  agent_id: 'agent_id',
  run_id: 'run_id',
  created_at: 'created_at',
  updated_at: 'updated_at',
  expiration_date: 'expires_at',
}

/** A mem0 filter (checked: INVALID_FILTER) as the engine reads it: mem0's fields as columns, every other one a metadata path. */
function mem0Filter(filters: unknown): FilterExpression {
  const walk = (e: FilterExpression): FilterExpression => {
    if ('AND' in e) return { AND: e.AND.map(walk) }
    if ('OR' in e) return { OR: e.OR.map(walk) }
    if ('NOT' in e) return { NOT: walk(e.NOT) }
    if (typeof e.field !== 'string') return e
    const column = Object.hasOwn(MEM0_FIELDS, e.field) ? MEM0_FIELDS[e.field] : undefined
    return { ...e, field: column ?? e.field.split('.') }
  }
  return walk(parseInput(filterExpressionSchema, filters, 'filter', 'INVALID_FILTER'))
}

const filtersOf = (o: { filters?: unknown }) => (o.filters === undefined ? {} : { filters: mem0Filter(o.filters) })

/**
 * Graph memory's links among `entities` (others left out): in mem0's shape, as the links
 * themselves (`kept`), and the entities' names by node id.
 */
function relationsOf(
  links: readonly Neighbor[],
  entities: readonly NodeRecord[],
): { relations: Mem0Relation[]; kept: Neighbor[]; nameOf: Map<string, string> } {
  const nameOf = new Map(entities.map((n) => [n.id, entityName(n.payload.name)]))
  const relations = new Map<string, Mem0Relation>()
  const kept: Neighbor[] = []
  for (const link of links) {
    const source = nameOf.get(link.src)
    const destination = nameOf.get(link.dst)
    if (!link.rel.startsWith(RELATION_PREFIX) || !source || !destination) continue
    relations.set(link.edgeId, { source, relationship: link.rel.slice(RELATION_PREFIX.length), destination })
    kept.push(link)
  }
  return { relations: [...relations.values()], kept, nameOf }
}

/** Graph memory's entity nodes are of this type; the entity's own type is in the payload. */
const ENTITY_NODE = 'mem0.entity'
/** Graph memory's relations are named `mem0.<relation>`, apart from any other of the engine's. */
const RELATION_PREFIX = 'mem0.'

/** The longest scope the entity graph keeps (`NodeInput.scope`). */
const MAX_GRAPH_SCOPE = 200

/** How every graph scope of the facade begins. */
const GRAPH_SCOPE_PREFIX = 'mem0 '

/**
 * The scope of a graph memory's nodes: one graph per userId / agentId / runId combination.
 * The characters that separate its parts, and the ids from entity names in node ids (`%`,
 * space, `=`, `/`), are escaped, so that no two scopes and names make one id; a scope longer
 * than the entity graph keeps is its SHA-256.
 */
function graphScope(s: Mem0Scope): string {
  const escape = (v: string) => v.replace(/[% =/]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)
  const parts = [
    ...(s.userId === undefined ? [] : [`user=${escape(s.userId)}`]),
    ...(s.agentId === undefined ? [] : [`agent=${escape(s.agentId)}`]),
    ...(s.runId === undefined ? [] : [`run=${escape(s.runId)}`]),
  ]
  const key = `${GRAPH_SCOPE_PREFIX}${parts.join(' ')}`
  return key.length <= MAX_GRAPH_SCOPE ? key : `mem0 sha256=${sha256Hex(key)}`
}

/** The longest entity name kept. */
const MAX_ENTITY_NAME = 200
/** How many linked entities' names a graph search looks up memories by, in link order. */
const RELATED_NAMES = 50
/** How many names one look-up of a query's entities asks for (`graph.nodes` takes 10,000 ids). */
const LOOKUP_BATCH = 5000

/** An entity's name as kept: trimmed, single spaces, at most MAX_ENTITY_NAME characters; '' when none. */
function entityName(value: unknown): string {
  return typeof value === 'string' ? value.replace(/\s+/g, ' ').trim().slice(0, MAX_ENTITY_NAME) : ''
}

/** A relation as a snake_case name the entity graph accepts ("works at" → works_at); '' when none. */
function relationName(value: unknown): string {
  if (typeof value !== 'string') return ''
  const name = value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64 - RELATION_PREFIX.length)
  return /^[0-9]/.test(name) ? `_${name}`.slice(0, 64 - RELATION_PREFIX.length) : name
}

/** Words as names are keyed: without the punctuation around them or a trailing "'s", lowercased. */
function keyWords(text: string): string[] {
  return text
    .split(/\s+/)
    .map((w) => w.replace(/^[("'“‘[]+|[)"'”’\].,!?;:]+$/gu, '').replace(/['’]s$/u, ''))
    .filter((w) => w !== '')
    .map((w) => w.toLowerCase())
}

/** An entity's key within its scope: "Acme Inc." and "acme inc" are one entity. */
function nameKey(name: string): string {
  return keyWords(name).join(' ')
}

/** The most words an entity name a query can name has (longer names are not looked up). */
const MAX_NAME_WORDS = 6

/**
 * The names `text` could be naming: every run of up to `MAX_NAME_WORDS` of its words, each
 * word without the punctuation around it or a trailing "'s", lowercased — as entities' names
 * are keyed.
 */
function namedInText(text: string): string[] {
  const words = keyWords(text)
  const out = new Set<string>()
  for (let i = 0; i < words.length; i++) {
    for (let n = 1; n <= MAX_NAME_WORDS && i + n <= words.length; n++) out.add(words.slice(i, i + n).join(' '))
  }
  return [...out]
}

/** Flattens a conversation to `role: content` lines for the model. */
export function conversationText(messages: string | ChatMessage[]): string {
  if (typeof messages === 'string') return messages
  return messages.map((m) => `${m.role}: ${m.content}`).join('\n')
}

/**
 * A mem0-compatible memory API over an Engram engine: add / search / get / getAll / update /
 * delete / deleteAll / history / reset. add, search, getAll and deleteAll need a userId,
 * agentId or runId (several combine with AND); get, update, delete and history take a
 * memory's id, and reset erases the facade's tenant. Without an `llm`, `add` stores each user message as a memory
 * (deduplicated); with one, it extracts facts and lets the model decide ADD / UPDATE /
 * DELETE / NONE against the most similar existing memories.
 *
 * @example
 * const mem = new Memory(await openMemory({ embedder: createTransformersEmbedder() })) // or createMemory() in a page
 * await mem.add('I prefer dark mode', { userId: 'alice' })
 * const { results } = await mem.search('display settings', { userId: 'alice' })
 */
/** A memory with what the facade calls (a browser client's methods are proxies, functions too). */
function isMemoryEngine(value: unknown): value is MemoryEngine {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false
  const { remember, memories } = value as { remember?: unknown; memories?: { search?: unknown } | null }
  if (typeof remember !== 'function' || memories === null || memories === undefined) return false
  return (typeof memories === 'object' || typeof memories === 'function') && typeof memories.search === 'function'
}

export class Memory {
  readonly #engine: MemoryEngine
  readonly #options: MemoryOptions
  readonly #tenant: { tenantId?: string }

  constructor(engine: MemoryEngine, options: MemoryOptions = {}) {
    // Refused here, not at the first call, where it would fail on a missing method.
    if (!isMemoryEngine(engine)) {
      throw new MemoryError(
        'INVALID_INPUT',
        'new Memory(memory) takes an Engram memory: the one createMemory() (browser) or openMemory() (Node) returns.',
      )
    }
    if (options === null || typeof options !== 'object') {
      throw new MemoryError('INVALID_INPUT', 'new Memory(memory, options) takes an options object, or none.')
    }
    if (options.graph === true && engine.graph === undefined) {
      throw new MemoryError('INVALID_INPUT', 'Graph memory needs an engine with an entity graph (engine.graph).')
    }
    this.#engine = engine
    this.#options = options
    this.#tenant = options.tenantId === undefined ? {} : { tenantId: options.tenantId }
  }

  /** Stores what is worth remembering from `messages`; returns what happened to which memory. */
  async add(
    messages: string | ChatMessage[],
    options: Mem0AddOptions,
  ): Promise<{ results: Mem0Event[]; relations?: Mem0Relation[] }> {
    const o = parseInput(addOptions, options ?? {}, 'add options')
    requireScope(o)
    // Checked here: each fact's decision swallows its own failures, a bad filter among them.
    if (o.filters !== undefined) mem0Filter(o.filters)
    const input = parseInput(messagesSchema, messages, 'messages')
    const list: ChatMessage[] = typeof input === 'string' ? [{ role: 'user', content: input }] : input
    const llm = this.#options.llm
    const results = !llm || o.infer === false ? await this.#storeRaw(list, o) : await this.#infer(llm, list, o)
    if (!llm || this.#options.graph !== true) return { results }
    return { results, relations: await this.#addToGraph(llm, list, scopeOf(o)) }
  }

  /**
   * Graph memory: the entities of the conversation and how they relate, upserted into the
   * scope's graph in one transaction; returns the links written. Best effort, as mem0's: a
   * model that fails or answers nothing readable leaves the graph as it was and returns none.
   * A relation between names the model did not list as entities is left out.
   */
  async #addToGraph(llm: LLM, said: ChatMessage[], scope: Mem0Scope): Promise<Mem0Relation[]> {
    const graph = this.#engine.graph as MemoryGraph
    const messages = said.map((m) => ({ ...m, content: redact(m.content).text }))
    let parsed: unknown
    try {
      parsed = parseModelJson(
        await llm.generate(this.#options.prompts?.graphExtraction ?? GRAPH_EXTRACTION_PROMPT, conversationText(messages), {
          json: true,
        }),
      )
    } catch {
      return []
    }
    const record = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {}
    const entities = new Map<string, { name: string; type: string; description?: string }>()
    for (const raw of Array.isArray(record.entities) ? record.entities : []) {
      if (typeof raw !== 'object' || raw === null) continue
      const e = raw as { name?: unknown; type?: unknown; description?: unknown }
      const name = entityName(e.name)
      if (nameKey(name) === '') continue
      const given = typeof e.type === 'string' ? e.type.trim().toLowerCase() : ''
      const type = (GRAPH_ENTITY_TYPES as readonly string[]).includes(given) ? given : 'concept'
      const description = typeof e.description === 'string' ? e.description.trim().slice(0, 500) : ''
      entities.set(nameKey(name), { name, type, ...(description === '' ? {} : { description }) })
    }
    const relations = new Map<string, Mem0Relation>()
    for (const raw of Array.isArray(record.relations) ? record.relations : []) {
      if (typeof raw !== 'object' || raw === null) continue
      const r = raw as { source?: unknown; relation?: unknown; relationship?: unknown; target?: unknown; destination?: unknown }
      const source = entities.get(nameKey(entityName(r.source)))
      const target = entities.get(nameKey(entityName(r.target ?? r.destination)))
      const relationship = relationName(r.relation ?? r.relationship)
      if (!source || !target || relationship === '') continue
      const link = { source: source.name, relationship, destination: target.name }
      relations.set(JSON.stringify([nameKey(link.source), relationship, nameKey(link.destination)]), link)
    }
    if (entities.size === 0) return []
    const key = graphScope(scope)
    const id = (name: string) => `${key}/${nameKey(name)}`
    const links = [...relations.values()]
    try {
      await graph.putGraph({
        relations: [...new Set(links.map((l) => l.relationship))].map((r) => ({ name: `${RELATION_PREFIX}${r}` })),
        nodes: [...entities.values()].map((e) => ({
          id: id(e.name),
          type: ENTITY_NODE,
          payload: { name: e.name, entityType: e.type, ...(e.description === undefined ? {} : { description: e.description }) },
          scope: key,
          ...this.#tenant,
        })),
        edges: links.map((l) => ({ src: id(l.source), rel: `${RELATION_PREFIX}${l.relationship}`, dst: id(l.destination), ...this.#tenant })),
      })
    } catch {
      // The graph is an extra: the memories above are stored either way.
      return []
    }
    return links
  }

  async #storeRaw(messages: ChatMessage[], o: z.output<typeof addOptions>): Promise<Mem0Event[]> {
    // Each message is one memory: all are checked before the first is stored, so that a bad
    // one leaves none of the call behind.
    for (const [n, m] of messages.entries()) {
      if (m.role !== 'user' || m.content.trim() === '') continue
      parseInput(z.string().trim().max(MAX_MEMORY_CONTENT), m.content, `message ${n}`)
      refuseSealedLookalike(m.content, `messages.${n}.content`)
    }
    const results: Mem0Event[] = []
    for (const m of messages) {
      if (m.role !== 'user' || m.content.trim() === '') continue
      const r = await this.#engine.remember({
        content: m.content,
        category: 'fact',
        source: 'explicit',
        metadata: o.metadata ?? {},
        dedupScope: 'identity',
        ...(o.expirationDate === undefined ? {} : { expiresAt: o.expirationDate }),
        ...scopeOf(o),
        ...this.#tenant,
      })
      results.push(await this.#eventOf(r, m.content.trim(), o.metadata))
    }
    return results
  }

  async #eventOf(r: RememberResult, said: string, metadata?: Record<string, unknown>): Promise<Mem0Event> {
    // The memory as stored, not as said: secrets in the text and metadata were replaced.
    const stored = await this.#engine.memories.get(r.id, this.#tenant)
    const text = stored?.content ?? said
    const meta = metadata === undefined ? {} : { metadata: stored?.metadata ?? metadata }
    if (r.action === 'created') return { id: r.id, event: 'ADD', memory: text, new_memory: text, ...meta }
    if (r.action === 'unchanged') return { id: r.id, event: 'NONE', memory: text }
    const old = r.supersededId ? await this.#engine.memories.get(r.supersededId, this.#tenant) : null
    return {
      id: r.id,
      event: 'UPDATE',
      memory: text,
      new_memory: text,
      ...(old ? { old_memory: old.content } : {}),
      ...(r.supersededId ? { previous_id: r.supersededId } : {}),
      ...meta,
    }
  }

  async #infer(llm: LLM, said: ChatMessage[], o: z.output<typeof addOptions>): Promise<Mem0Event[]> {
    const scope = scopeOf(o)
    // The model may run elsewhere: it never sees a secret the memory would not store.
    const messages = said.map((m) => ({ ...m, content: redact(m.content).text }))
    let facts: string[]
    try {
      const answer = await llm.generate(
        o.prompt ?? this.#options.prompts?.factExtraction ?? FACT_EXTRACTION_PROMPT,
        conversationText(messages),
        { json: true },
      )
      facts = modelList(parseModelJson(answer), 'facts')
        .filter((f): f is string => typeof f === 'string')
        .map((f) => f.trim())
        .filter((f) => f !== '')
    } catch {
      // Extraction is best effort: no model, no new memories, no crash.
      return []
    }
    const results: Mem0Event[] = []
    for (const fact of facts) {
      try {
        results.push(...(await this.#applyFact(llm, fact, scope, o)))
      } catch {
        // One fact failing (embedding, model, a bad id) must not cost the others.
      }
    }
    return results
  }

  async #applyFact(
    llm: LLM,
    fact: string,
    scope: Mem0Scope,
    o: z.output<typeof addOptions>,
  ): Promise<Mem0Event[]> {
    const existing = await this.#engine.memories.search(fact, {
      ...scope,
      ...this.#tenant,
      limit: 5,
      ...filtersOf(o),
    })
    const listing =
      existing.length === 0
        ? 'No existing memories found.'
        : existing.map((m, i) => `- ID: ${i}, Text: ${m.content}`).join('\n')
    const answer = await llm.generate(
      this.#options.prompts?.updateDecision ?? UPDATE_DECISION_PROMPT,
      `New fact: ${fact}\n\nExisting memories:\n${listing}`,
      { json: true },
    )
    const resolve = (id: unknown): MemoryHit | undefined => {
      const key = typeof id === 'number' ? String(id) : typeof id === 'string' ? id.trim() : ''
      return existing.find((m, i) => String(i) === key || m.id === key)
    }
    const events: Mem0Event[] = []
    for (const raw of modelList(parseModelJson(answer), 'operations')) {
      if (typeof raw !== 'object' || raw === null) continue
      const op = raw as { event?: unknown; id?: unknown; data?: unknown; text?: unknown }
      const event = typeof op.event === 'string' ? op.event.toUpperCase() : ''
      const data =
        typeof op.data === 'string' ? op.data.trim() : typeof op.text === 'string' ? op.text.trim() : ''
      try {
        if (event === 'ADD') {
          const content = data || fact
          const r = await this.#engine.remember({
            content,
            category: 'fact',
            source: 'inferred',
            dedup: 'exact',
            dedupScope: 'identity',
            metadata: o.metadata ?? {},
            ...(o.expirationDate === undefined ? {} : { expiresAt: o.expirationDate }),
            ...scope,
            ...this.#tenant,
          })
          events.push(await this.#eventOf(r, content, o.metadata))
        } else if (event === 'UPDATE') {
          const target = resolve(op.id)
          if (!target || !data) continue
          await this.#engine.memories.update(target.id, { content: data }, this.#tenant)
          events.push({
            id: target.id,
            event: 'UPDATE',
            memory: data,
            old_memory: target.content,
            new_memory: data,
          })
        } else if (event === 'DELETE') {
          const target = resolve(op.id)
          if (!target) continue
          await this.#engine.memories.delete(target.id, this.#tenant)
          events.push({ id: target.id, event: 'DELETE', memory: target.content, old_memory: target.content })
        } else if (event === 'NONE') {
          const target = resolve(op.id) ?? existing[0]
          events.push({
            ...(target ? { id: target.id } : {}),
            event: 'NONE',
            memory: target?.content ?? fact,
          })
        }
      } catch {
        // An operation that fails (say, a memory deleted meanwhile) is skipped.
      }
    }
    return events
  }

  /** Memories most relevant to `query` in the scope, best first, each with its `score`. */
  async search(query: string, options: Mem0SearchOptions): Promise<{ results: Mem0Item[]; relations?: Mem0Relation[] }> {
    const o = parseInput(searchOptions, options ?? {}, 'search options')
    requireScope(o)
    const scope = { ...scopeOf(o), ...this.#tenant, ...filtersOf(o) }
    const threshold = o.threshold ?? 0
    const scored = (hits: MemoryHit[]) => hits.filter((h) => h.scores.fused >= threshold).map((h) => toItem(h, h.scores.fused))
    const results = scored(await this.#engine.memories.search(query, { ...scope, limit: o.limit }))
    if (this.#options.graph !== true) return { results }
    // Graph memory: the links of the entities the query names, then (up to `limit` more) the
    // memories of the entities at their other ends that the search above did not return.
    const graph = this.#engine.graph as MemoryGraph
    const key = graphScope(scopeOf(o))
    // The entities named are looked up by key (`${scope}/${name}`), never by reading them all.
    // Names longer than an entity's are none; a long query's runs are read in batches.
    const candidates = namedInText(query)
      .filter((name) => name.length <= MAX_ENTITY_NAME)
      .map((name) => `${key}/${name}`)
    const named = await this.#entities(graph, candidates, key)
    const links =
      named.length === 0
        ? []
        : await graph.neighbors(
            named.map((n) => n.id),
            { direction: 'both', limit: 100_000, ...this.#tenant },
          )
    const ends = links.filter((l) => l.rel.startsWith(RELATION_PREFIX)).map((l) => l.neighbor)
    const others = await this.#entities(graph, [...new Set(ends)], key)
    const { relations, kept, nameOf } = relationsOf(links, [...named, ...others])
    const namedIds = new Set(named.map((n) => n.id))
    const linked = new Set(kept.filter((l) => !namedIds.has(l.neighbor)).map((l) => nameOf.get(l.neighbor) as string))
    if (linked.size === 0) return { results, relations }
    // The memories of the linked entities that the search above did not return, interleaved
    // with its hits by reciprocal rank and cut to `limit`; each keeps its own score.
    const seen = new Set(results.map((r) => r.id))
    // The first linked entities' names (a search takes 20,000 characters; names are 200 at most).
    const names = [...linked].slice(0, RELATED_NAMES).join(' ')
    const related = scored(await this.#engine.memories.search(names, { ...scope, limit: o.limit })).filter(
      (h) => !seen.has(h.id),
    )
    const rrf = (rank: number) => 1 / (DEFAULT_SCORING.rrfK + rank + 1)
    // A stable sort: on a tie the direct hit, listed first, stays ahead.
    const merged = [...results.map((item, n) => ({ item, rrf: rrf(n) })), ...related.map((item, n) => ({ item, rrf: rrf(n) }))].sort(
      (a, b) => b.rrf - a.rrf,
    )
    return { results: merged.slice(0, o.limit).map((f) => f.item), relations }
  }

  /**
   * One memory, or null when there is none, it was deleted, or a newer memory replaced it (a
   * near duplicate added without a model: the ADD or UPDATE event of that named both ids).
   */
  async get(id: string): Promise<Mem0Item | null> {
    const m = await this.#engine.memories.get(id, this.#tenant)
    return m && m.status === 'active' ? toItem(m) : null
  }

  /** All current memories of the scope; with graph memory, also every link between its entities. */
  async getAll(options: Mem0GetAllOptions): Promise<{ results: Mem0Item[]; relations?: Mem0Relation[] }> {
    const o = parseInput(getAllOptions, options ?? {}, 'getAll options')
    requireScope(o)
    const list = await this.#engine.memories.list({
      ...scopeOf(o),
      ...this.#tenant,
      limit: o.limit,
      ...filtersOf(o),
    })
    const results = list.map((m) => toItem(m))
    if (this.#options.graph !== true) return { results }
    const graph = this.#engine.graph as MemoryGraph
    const entities = await graph.nodes({ type: ENTITY_NODE, scope: graphScope(scopeOf(o)), ...this.#tenant, limit: 100_000 })
    // Each link once, from its source.
    const links =
      entities.length === 0 ? [] : await graph.neighbors(entities.map((n) => n.id), { direction: 'out', limit: 100_000, ...this.#tenant })
    return { results, relations: relationsOf(links, entities).relations }
  }

  /**
   * Overwrites a current memory's text (new hash, new vector, an UPDATE in its history); one
   * `get` does not return (replaced, deleted) is NOT_FOUND, as in mem0.
   */
  async update(id: string, text: string): Promise<void> {
    await this.#current(id)
    await this.#engine.memories.update(id, { content: text }, this.#tenant)
  }

  /** Deletes a current memory; one `get` does not return (replaced, deleted) is NOT_FOUND, as in mem0. */
  async delete(id: string): Promise<void> {
    await this.#current(id)
    await this.#engine.memories.delete(id, this.#tenant)
  }

  async #current(id: string): Promise<void> {
    if ((await this.get(id)) === null) throw new MemoryError('NOT_FOUND', `No memory "${id}"`)
  }

  /** Deletes every memory of the scope. */
  async deleteAll(scope: Mem0Scope): Promise<void> {
    const s = parseInput(z.strictObject(scopeFields), scope ?? {}, 'scope')
    requireScope(s)
    await this.#engine.memories.forgetAll({ ...scopeOf(s), ...this.#tenant, confirm: true })
    if (this.#options.graph === true) await this.#removeGraphWithin(scopeOf(s))
  }

  /**
   * The entities of every graph scope within `s`, as `deleteAll` deletes the memories of every
   * scope that has its fields: `{ userId }` takes the user's scopes with an agent or run too.
   */
  async #removeGraphWithin(s: Mem0Scope): Promise<void> {
    const key = graphScope(s)
    const wanted = key.slice(GRAPH_SCOPE_PREFIX.length).split(' ')
    const graph = this.#engine.graph as MemoryGraph
    const nodes = await graph.nodes({ type: ENTITY_NODE, ...this.#tenant, limit: 100_000 })
    const within = (scope: string | null) => {
      if (scope === key) return true
      if (scope === null || !scope.startsWith(GRAPH_SCOPE_PREFIX)) return false
      const parts = scope.slice(GRAPH_SCOPE_PREFIX.length).split(' ')
      return wanted.every((p) => !p.startsWith('sha256=') && parts.includes(p))
    }
    const ids = nodes.filter((n) => within(n.scope)).map((n) => n.id)
    if (ids.length > 0) await graph.removeNodes(ids, this.#tenant)
  }

  /** The live entities of scope `key` among `ids`, looked up in batches the entity graph takes. */
  async #entities(graph: MemoryGraph, ids: string[], key: string): Promise<NodeRecord[]> {
    const out: NodeRecord[] = []
    for (let i = 0; i < ids.length; i += LOOKUP_BATCH) {
      const batch = ids.slice(i, i + LOOKUP_BATCH)
      out.push(...(await graph.nodes({ ids: batch, type: ENTITY_NODE, scope: key, ...this.#tenant, limit: LOOKUP_BATCH })))
    }
    return out
  }

  /** Removes graph memory's entities (and their links) of one scope, or of every scope. */
  async #removeGraph(scope?: string): Promise<void> {
    const graph = this.#engine.graph as MemoryGraph
    const nodes = await graph.nodes({ type: ENTITY_NODE, ...(scope === undefined ? {} : { scope }), ...this.#tenant, limit: 100_000 })
    await graph.removeNodes(
      nodes.map((n) => n.id),
      this.#tenant,
    )
  }

  /** What happened to a memory, oldest first. */
  async history(id: string): Promise<Mem0History[]> {
    const rows = await this.#engine.memories.history(id, this.#tenant)
    return rows.map((h) => ({
      id: h.id,
      memory_id: h.memoryId,
      event: h.event,
      old_value: h.oldValue,
      new_value: h.newValue,
      timestamp: h.createdAt.toISOString(),
      is_deleted: h.isDeleted,
      ...(h.userId === null ? {} : { user_id: h.userId }),
      ...(h.agentId === null ? {} : { agent_id: h.agentId }),
      ...(h.runId === null ? {} : { run_id: h.runId }),
    }))
  }

  /**
   * Erases all memories of this facade's tenant ('default' without `tenantId`) and their
   * history, and graph memory's entities; other tenants keep theirs.
   */
  async reset(): Promise<void> {
    await this.#engine.memories.reset({ confirm: true, tenantId: this.#tenant.tenantId ?? 'default' })
    if (this.#options.graph === true) await this.#removeGraph()
  }
}
