import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { sha256Hex } from '../kernel/hash.ts'
import { insertEdges } from '../graph/edges.ts'
import { newId } from '../kernel/ids.ts'
import { inJsonbOrder, type JsonObject, type JsonValue, jsonObject, storableText, toStoredJson } from '../kernel/json.ts'
import {
  formatBytes,
  MAX_ARTIFACT_BYTES,
  MAX_EVENT_CONTENT_BYTES,
  MAX_REFS,
  MAX_TAG_LENGTH,
  MAX_TAGS,
  MAX_TOOL_EXCERPT_BYTES,
  utf8Length,
} from '../kernel/limits.ts'
import { countRedactions, mergeRedactions, type RedactionCount, redact, redactJson } from '../privacy/redact.ts'
import {
  CHANNELS,
  type Channel,
  type EventScope,
  eventScope,
  identifier,
  SENSITIVITIES,
  type StoredSensitivity,
} from '../kernel/scope.ts'
import { allowedSensitivities, readChannel } from '../privacy/channels.ts'
import { asOfParam, iso, timeInput, toDate } from '../kernel/time.ts'
import { chunkText, estimateTokens } from '../kernel/tokens.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { ACTOR_TYPES, type ActorType, EVENT_KINDS, type EventKind } from '../kernel/kinds.ts'
import { EVENT_CONTENT_KEYS, refuseSealedLookalike, type Vault, vaultMadeSince } from '../privacy/vault.ts'

export { ACTOR_TYPES, type ActorType, EVENT_KINDS, type EventKind } from '../kernel/kinds.ts'

export const tag = storableText.pipe(z.string().min(1).max(MAX_TAG_LENGTH))

const actor = z.object({ type: z.enum(ACTOR_TYPES), id: identifier }).strict()

export const recordInput = z
  .object({
    kind: z.enum(EVENT_KINDS),
    scope: eventScope,
    channel: z.enum(CHANNELS).default('private'),
    actor,
    sensitivity: z.enum(SENSITIVITIES).default('none'),
    tags: z.array(tag).max(MAX_TAGS).default([]),
    content: jsonObject,
    refs: z.array(identifier).max(MAX_REFS).default([]),
    createdAt: timeInput.optional(),
  })
  .strict()

/**
 * Input of `record`. Content is a JSON object; some kinds need particular fields:
 * `message` → `text`; `tool_call` → `tool` (+ `args`); `tool_result` → `tool` and `output`
 * (+ `path` and `lineRange` for file reads); `decision` → `decision` or `text`.
 */
export type RecordInput = z.input<typeof recordInput>

export interface RecordResult {
  eventId: string
  chunkIds: string[]
  createdAt: string
  /** Set for a tool result whose output was longer than the excerpt. */
  artifactId?: string
}

/** An event as reads return it. */
export interface MemoryEvent {
  id: string
  kind: EventKind
  scope: { tenantId: string; userId?: string; agentId?: string; conversationId: string; runId?: string }
  turnIndex: number | null
  channel: Channel
  actor: { type: ActorType; id: string }
  sensitivity: StoredSensitivity
  tags: string[]
  content: JsonObject
  refs: string[]
  meta: JsonObject
  createdAt: string
}

const toolResultContent = z
  .object({
    tool: z.string().min(1),
    output: storableText,
    path: z.string().optional(),
    lineRange: z
      .tuple([z.number().int().min(1), z.number().int().min(1)])
      .refine(([a, b]) => b >= a, 'lineRange must be [first, last] with last ≥ first')
      .optional(),
  })
  .loose()

const KIND_REQUIREMENTS: Record<EventKind, (content: JsonObject) => string | undefined> = {
  message: (c) => (typeof c.text === 'string' ? undefined : 'a message needs content.text (a string)'),
  tool_call: (c) => (typeof c.tool === 'string' && c.tool ? undefined : 'a tool_call needs content.tool (a string)'),
  tool_result: (c) => {
    const r = toolResultContent.safeParse(c)
    return r.success ? undefined : `a tool_result needs content.tool and content.output: ${r.error.issues[0]?.message}`
  },
  decision: (c) =>
    typeof c.decision === 'string' || typeof c.text === 'string'
      ? undefined
      : 'a decision needs content.decision or content.text (a string)',
  task_update: () => undefined,
  artifact: () => undefined,
}

/** An event ready to insert: validated, redacted, normalised, chunked. */
export interface PreparedEvent {
  id: string
  kind: EventKind
  scope: EventScope
  channel: Channel
  actor: { type: ActorType; id: string }
  sensitivity: StoredSensitivity
  tags: string[]
  content: JsonObject
  refs: string[]
  meta: JsonObject
  /** Secrets replaced before storing, by type (also in `meta.redactions`). */
  redactions: RedactionCount[]
  createdAt: Date
  chunks: { id: string; text: string; tokens: number }[]
  artifact?: { id: string; content: string; bytes: number; sha256: string; mediaType: string }
}

export interface EventDraft {
  kind: EventKind
  scope: EventScope
  channel: Channel
  actor: { type: ActorType; id: string }
  sensitivity: 'none' | 'low' | 'high' | 'secret'
  tags: string[]
  content: JsonObject
  refs: string[]
  createdAt: Date
  /** Secrets already replaced upstream (e.g. in a turn's tool arguments), to be recorded with the event. */
  redactions?: RedactionCount[]
}

/** Refuses a secret before anything is written. */
export function refuseSecret(sensitivity: string): asserts sensitivity is StoredSensitivity {
  if (sensitivity === 'secret') {
    throw new MemoryError(
      'INVALID_INPUT',
      "Sensitivity 'secret' is refused: secrets are never stored. Remove the secret or mark the content 'high'.",
      { details: { field: 'sensitivity' } },
    )
  }
}

/**
 * Validates kind-specific content, enforces size limits, redacts every string, normalises
 * tool output (excerpt + artifact) and cuts chunks. Throws before anything is written.
 */
export async function prepareEvent(draft: EventDraft): Promise<PreparedEvent> {
  refuseSecret(draft.sensitivity)
  const problem = KIND_REQUIREMENTS[draft.kind](draft.content)
  if (problem) throw new MemoryError('INVALID_INPUT', `Invalid event content: ${problem}`, { details: { kind: draft.kind } })

  const id = newId('event')
  let content = toStoredJson(draft.content)
  let artifact: PreparedEvent['artifact']
  let redactions: RedactionCount[] = draft.redactions ?? []

  if (draft.kind === 'tool_result') {
    const normalised = normaliseToolResult(content)
    content = normalised.content
    artifact = normalised.artifact
    redactions = mergeRedactions(redactions, normalised.redactions)
  }

  const contentBytes = utf8Length(JSON.stringify(content))
  if (contentBytes > MAX_EVENT_CONTENT_BYTES) {
    throw new MemoryError(
      'INVALID_INPUT',
      `Event content is ${formatBytes(contentBytes)}; the limit is ${formatBytes(MAX_EVENT_CONTENT_BYTES)} ` +
        '(MAX_EVENT_CONTENT_BYTES). Put large tool output in a tool_result, which keeps it as an artifact.',
      { details: { bytes: contentBytes, limit: MAX_EVENT_CONTENT_BYTES } },
    )
  }

  const redacted = redactJson(content)
  content = redacted.value
  redactions = mergeRedactions(redactions, redacted.redactions)

  refuseSealedLookalike(content, 'content')
  if (artifact) refuseSealedLookalike(artifact.content, 'content.output')
  const text = eventText(draft.kind, content)
  const chunks = chunkText(text).map((t) => ({ id: newId('chunk'), text: t, tokens: estimateTokens(t) }))
  return {
    id,
    kind: draft.kind,
    scope: draft.scope,
    channel: draft.channel,
    actor: draft.actor,
    sensitivity: draft.sensitivity,
    tags: draft.tags,
    content,
    refs: draft.refs,
    meta: redactionMeta(redactions),
    redactions,
    createdAt: draft.createdAt,
    chunks,
    ...(artifact ? { artifact } : {}),
  }
}

/**
 * With a vault, `high` events are sealed before they are written: their content's text
 * (as `EVENT_CONTENT_KEYS` says), their artifact, and no chunks (no derived text or vector
 * of them is kept). Marked `meta.sealed`. Refused with `VAULT_LOCKED` when the vault is locked.
 */
export async function sealPrepared(vault: Vault, events: readonly PreparedEvent[]): Promise<void> {
  if (vault.status === 'none') return
  await Promise.all(
    events.map(async (e) => {
      if (e.sensitivity !== 'high') return
      const [content, artifact] = await Promise.all([
        vault.sealJson(e.content, EVENT_CONTENT_KEYS),
        e.artifact ? vault.seal(e.artifact.content) : undefined,
      ])
      e.content = content
      e.meta = { ...e.meta, sealed: true }
      e.chunks = []
      if (e.artifact && artifact !== undefined) e.artifact = { ...e.artifact, content: artifact }
    }),
  )
}

function normaliseToolResult(raw: JsonObject) {
  const parsed = toolResultContent.parse(raw)
  const { output: original, lineRange, ...rest } = parsed
  const bytes = utf8Length(original)
  if (bytes > MAX_ARTIFACT_BYTES) {
    throw new MemoryError(
      'INVALID_INPUT',
      `Tool output is ${formatBytes(bytes)}; the limit is ${formatBytes(MAX_ARTIFACT_BYTES)} (MAX_ARTIFACT_BYTES)`,
      { details: { bytes, limit: MAX_ARTIFACT_BYTES } },
    )
  }
  const { text: output, findings } = redact(original)
  const excerpt = cutAtLine(output, MAX_TOOL_EXCERPT_BYTES)
  const truncated = excerpt.length < output.length
  const artifactId = truncated ? newId('artifact') : undefined
  const content: JsonObject = {
    ...(rest as JsonObject),
    excerptText: excerpt,
    bytes,
    truncated,
  }
  if (parsed.path !== undefined || lineRange !== undefined) {
    const first = lineRange?.[0] ?? 1
    content.lineRange = [first, first + Math.max(1, lineCount(excerpt)) - 1]
    content.totalLines = lineCount(output)
  }
  if (artifactId) content.artifactId = artifactId
  const artifact = artifactId
    ? {
        id: artifactId,
        content: output,
        bytes: utf8Length(output),
        sha256: sha256Hex(output),
        mediaType: typeof rest.mediaType === 'string' ? rest.mediaType : 'text/plain',
      }
    : undefined
  return { content, artifact, redactions: countRedactions(findings) }
}

/**
 * What an event's `meta` says about the secrets replaced before it was stored: their types
 * and counts, never their values. Empty when nothing was replaced.
 */
export function redactionMeta(redactions: readonly RedactionCount[]): JsonObject {
  return redactions.length > 0 ? { redactions: redactions.map((r) => ({ type: r.type, count: r.count })) } : {}
}

/** The longest prefix within `maxBytes` UTF-8 bytes, ending at a line break when there is one. */
export function cutAtLine(text: string, maxBytes: number): string {
  if (utf8Length(text) <= maxBytes) return text
  let bytes = 0
  let end = 0
  while (end < text.length) {
    const c = text.charCodeAt(end)
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? 4 : 3
    if (bytes + size > maxBytes) break
    bytes += size
    end += size === 4 ? 2 : 1
  }
  const lastBreak = text.lastIndexOf('\n', end - 1)
  return lastBreak > 0 ? text.slice(0, lastBreak + 1) : text.slice(0, end)
}

function lineCount(text: string): number {
  if (text.length === 0) return 0
  let n = 1
  for (let i = text.indexOf('\n'); i !== -1 && i < text.length - 1; i = text.indexOf('\n', i + 1)) n++
  return n
}

/** The searchable text of an event: what its chunks are cut from. */
export function eventText(kind: EventKind, content: JsonObject): string {
  // Objects are read in the order the stored content reads back in (`inJsonbOrder`), so the
  // chunks rebuilt from it match the ones written.
  switch (kind) {
    case 'message':
      return typeof content.text === 'string' ? content.text : ''
    case 'tool_call':
      return `${typeof content.tool === 'string' ? content.tool : ''} ${JSON.stringify(inJsonbOrder(content.args ?? {}))}`
    case 'tool_result': {
      const head = [content.tool, content.path].filter((s) => typeof s === 'string').join(' ')
      return `${head}\n${typeof content.excerptText === 'string' ? content.excerptText : ''}`
    }
    default:
      return stringLeaves(inJsonbOrder(content)).join('\n')
  }
}

function stringLeaves(value: JsonValue, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value)
  else if (Array.isArray(value)) for (const v of value) stringLeaves(v, out)
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) stringLeaves(v, out)
  return out
}

/**
 * Inserts prepared events, their chunks and their artifacts inside the caller's transaction,
 * in one statement (plus one for artifacts, when there are any), so the keyword-statistics
 * trigger runs once for all of their chunks. The events are stored in the order given. With
 * `turnOf`, they take the next turn index of the first event's conversation (prior turns
 * counted); with `turnIndex`, that one; otherwise none. Returns the turn index stored.
 */
export async function insertEvents(
  tx: Queryable,
  events: readonly PreparedEvent[],
  turn: { turnOf: true } | { turnIndex: number } | null = null,
): Promise<number | null> {
  if (events.length === 0) return null
  const column = <T>(pick: (e: PreparedEvent) => T) => events.map(pick)
  const chunks = events.flatMap((e, n) => e.chunks.map((c, ord) => ({ ...c, n: n + 1, ord })))
  const { rows } = await tx.query<{ turn_index: number | null }>(
    `WITH ti AS (
       -- The first event's conversation: a turn's events share it.
       -- Past the turns live and those archived (archives.create).
       SELECT CASE WHEN $18::boolean
                   THEN coalesce(greatest(
                          (SELECT max(turn_index) + 1 FROM events
                           WHERE tenant_id = ($3::text[])[1] AND conversation_id = ($6::text[])[1]),
                          (SELECT max(next_turn_index) FROM archives
                           WHERE tenant_id = ($3::text[])[1] AND conversation_id = ($6::text[])[1])), 0)
                   ELSE $19::int END AS turn_index
     ), input AS MATERIALIZED (
       -- Tags travel as one JSON array per event (SQL arrays of arrays must be rectangular).
       SELECT x.*, ARRAY(SELECT jsonb_array_elements_text(x.tags_json::jsonb)) AS tags
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                   $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
                   $15::text[], $16::timestamptz[])
         WITH ORDINALITY AS x(id, kind, tenant_id, user_id, agent_id, conversation_id, run_id, channel, actor_type,
                              actor_id, sensitivity, tags_json, content, refs, meta, created_at, n)
     ), ev AS (
       INSERT INTO events (id, kind, tenant_id, user_id, agent_id, conversation_id, run_id, turn_index, channel,
                           actor_type, actor_id, sensitivity, tags, content, refs, meta, created_at)
       SELECT x.id, x.kind, x.tenant_id, x.user_id, x.agent_id, x.conversation_id, x.run_id, ti.turn_index, x.channel,
              x.actor_type, x.actor_id, x.sensitivity, x.tags, x.content::jsonb, x.refs::jsonb, x.meta::jsonb, x.created_at
       FROM input x CROSS JOIN ti
       ORDER BY x.n
     ), ch AS (
       INSERT INTO chunks (id, source_id, ord, text, token_est, tenant_id, user_id, agent_id, conversation_id, run_id,
                           kind, channel, sensitivity, tags, created_at)
       SELECT c.id, x.id, c.ord, c.text, c.tokens, x.tenant_id, x.user_id, x.agent_id, x.conversation_id, x.run_id,
              x.kind, x.channel, x.sensitivity, x.tags, x.created_at
       FROM unnest($17::text[], $20::int[], $21::int[], $22::text[], $23::int[]) AS c(id, n, ord, text, tokens)
       JOIN input x ON x.n = c.n
     )
     SELECT turn_index FROM ti`,
    [
      column((e) => e.id),
      column((e) => e.kind),
      column((e) => e.scope.tenantId),
      column((e) => e.scope.userId ?? null),
      column((e) => e.scope.agentId ?? null),
      column((e) => e.scope.conversationId),
      column((e) => e.scope.runId ?? null),
      column((e) => e.channel),
      column((e) => e.actor.type),
      column((e) => e.actor.id),
      column((e) => e.sensitivity),
      column((e) => JSON.stringify(e.tags)),
      column((e) => JSON.stringify(e.content)),
      column((e) => JSON.stringify(e.refs)),
      column((e) => JSON.stringify(e.meta)),
      column((e) => e.createdAt),
      chunks.map((c) => c.id),
      turn !== null && 'turnOf' in turn,
      turn !== null && 'turnIndex' in turn ? turn.turnIndex : null,
      chunks.map((c) => c.n),
      chunks.map((c) => c.ord),
      chunks.map((c) => c.text),
      chunks.map((c) => c.tokens),
    ],
    { prepare: true },
  )
  const artifacts = events.flatMap((e) => (e.artifact ? [{ ...e.artifact, event: e }] : []))
  if (artifacts.length > 0) {
    await tx.query(
      `INSERT INTO artifacts (id, event_id, tenant_id, media_type, bytes, sha256, content, created_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::timestamptz[])`,
      [
        artifacts.map((a) => a.id),
        artifacts.map((a) => a.event.id),
        artifacts.map((a) => a.event.scope.tenantId),
        artifacts.map((a) => a.mediaType),
        artifacts.map((a) => a.bytes),
        artifacts.map((a) => a.sha256),
        artifacts.map((a) => a.content),
        artifacts.map((a) => a.event.createdAt),
      ],
    )
  }
  return rows[0]?.turn_index ?? null
}

/** Reads that say "no conversation" get SCOPE_REQUIRED rather than a generic parse error. */
export function requireConversation(input: unknown, where: 'scope' | 'top'): void {
  const holder =
    where === 'scope'
      ? input !== null && typeof input === 'object'
        ? (input as { scope?: unknown }).scope
        : undefined
      : input
  const conversationId =
    holder !== null && typeof holder === 'object' ? (holder as { conversationId?: unknown }).conversationId : undefined
  if (conversationId === undefined || conversationId === null) {
    throw new MemoryError(
      'SCOPE_REQUIRED',
      where === 'scope'
        ? 'scope.conversationId is required: every event belongs to a conversation'
        : 'conversationId is required',
      { details: { field: where === 'scope' ? 'scope.conversationId' : 'conversationId' } },
    )
  }
}

export interface EventRow {
  id: string
  kind: EventKind
  tenant_id: string
  user_id: string | null
  agent_id: string | null
  conversation_id: string
  run_id: string | null
  turn_index: number | null
  channel: Channel
  actor_type: ActorType
  actor_id: string
  sensitivity: StoredSensitivity
  tags: string[]
  content: JsonObject
  refs: string[]
  meta: JsonObject
  created_at: Date | string
}

export const EVENT_COLUMNS = `ev.id, ev.kind, ev.tenant_id, ev.user_id, ev.agent_id, ev.conversation_id, ev.run_id,
  ev.turn_index, ev.channel, ev.actor_type, ev.actor_id, ev.sensitivity, ev.tags, ev.content, ev.refs, ev.meta,
  ev.created_at`

export function toEvent(row: EventRow): MemoryEvent {
  return {
    id: row.id,
    kind: row.kind,
    scope: {
      tenantId: row.tenant_id,
      ...(row.user_id === null ? {} : { userId: row.user_id }),
      ...(row.agent_id === null ? {} : { agentId: row.agent_id }),
      conversationId: row.conversation_id,
      ...(row.run_id === null ? {} : { runId: row.run_id }),
    },
    turnIndex: row.turn_index,
    channel: row.channel,
    actor: { type: row.actor_type, id: row.actor_id },
    sensitivity: row.sensitivity,
    tags: row.tags,
    content: row.content,
    refs: row.refs,
    meta: row.meta,
    createdAt: iso(row.created_at),
  }
}

const listInput = z
  .object({
    conversationId: identifier,
    tenantId: identifier.default('default'),
    /** The channel the events will be shown in: events above its allowance are left out. */
    channel: readChannel,
    kinds: z.array(z.enum(EVENT_KINDS)).min(1).optional(),
    asOf: timeInput.optional(),
    limit: z.number().int().min(1).max(10_000).default(1000),
  })
  .strict()

const getOptions = z.object({ tenantId: identifier.default('default'), channel: readChannel }).strict()

/** Options of the reads by id: the tenant the row must belong to, and the channel it will be shown in. */
export type ReadByIdOptions = z.input<typeof getOptions>

const supersededByOptions = getOptions.extend({ userId: identifier.optional() })
/** `ReadByIdOptions`, and the user whose view of the decisions counts. */
export type SupersededByOptions = z.input<typeof supersededByOptions>

/**
 * The ids a decision's `content.supersedes` names (one id or an array of them), as a set of
 * rows `s(old_id)` to join laterally; `supersedes` is the jsonb value.
 */
export function supersededIds(supersedes: string): string {
  return `jsonb_array_elements_text(
           CASE jsonb_typeof(${supersedes}) WHEN 'array' THEN ${supersedes}
                WHEN 'string' THEN jsonb_build_array(${supersedes}) ELSE '[]'::jsonb END) AS s(old_id)`
}

export interface Artifact {
  id: string
  eventId: string
  tenantId: string
  mediaType: string
  bytes: number
  sha256: string
  content: string
  createdAt: string
}

/** `record` and the event reads. */
export function createEvents(ctx: EngineContext) {
  return {
    /**
     * Appends one event — the low-level write. In one transaction: the event, its chunks
     * (cut from its text, embeddings left for the indexer), the full output of a long tool
     * result as an artifact, and a REFERS_TO edge to each id in `refs`.
     *
     * @example
     * await memory.record({
     *   kind: 'message',
     *   scope: { conversationId: 'c1', userId: 'u1' },
     *   actor: { type: 'human', id: 'u1' },
     *   content: { text: 'what is this project for?' },
     * })
     */
    async record(input: RecordInput): Promise<RecordResult> {
      requireConversation(input, 'scope')
      const i = parseInput(recordInput, input, 'event')
      const createdAt = i.createdAt === undefined ? ctx.now() : toDate(i.createdAt)
      const prepared = await prepareEvent({ ...i, createdAt })
      const { vault } = ctx
      await sealPrepared(vault, [prepared])
      await ctx.db.transaction(async (tx) => {
        if (vaultMadeSince(vault, ctx.vault)) await sealPrepared(ctx.vault, [prepared])
        await insertEvents(tx, [prepared])
        await insertEdges(
          tx,
          [...new Set(prepared.refs)].map((ref) => ({
            src: prepared.id,
            rel: 'REFERS_TO',
            dst: ref,
            tenantId: prepared.scope.tenantId,
            conversationId: prepared.scope.conversationId,
            runId: prepared.scope.runId,
            createdAt,
          })),
        )
      })
      return {
        eventId: prepared.id,
        chunkIds: prepared.chunks.map((c) => c.id),
        createdAt: iso(createdAt),
        ...(prepared.artifact ? { artifactId: prepared.artifact.id } : {}),
      }
    },

    events: {
      /**
       * One event by id, of the tenant given (default 'default'). An event of another
       * tenant, or above what `channel` may show, is NOT_FOUND.
       *
       * @example
       * const event = await memory.events.get(eventId, { tenantId: 'acme', channel: 'team' })
       */
      async get(eventId: string, options: ReadByIdOptions = {}): Promise<MemoryEvent> {
        parseInput(identifier, eventId, 'event id')
        const o = parseInput(getOptions, options, 'event read options')
        const { rows } = await ctx.db.query<EventRow>(
          `SELECT ${EVENT_COLUMNS} FROM events ev
           WHERE ev.id = $1 AND ev.tenant_id = $2 AND ev.sensitivity = ANY($3::text[])`,
          [eventId, o.tenantId, allowedSensitivities(o.channel)],
        )
        const row = rows[0]
        if (!row) throw new MemoryError('NOT_FOUND', `No event ${eventId}`)
        return toEvent(row)
      },

      /**
       * A conversation's events in the order they were recorded, leaving out those above what
       * `channel` (default 'private') may show.
       *
       * @example
       * const events = await memory.events.list({ conversationId: 'c1', kinds: ['message'], channel: 'public' })
       */
      async list(input: z.input<typeof listInput>): Promise<MemoryEvent[]> {
        requireConversation(input, 'top')
        const i = parseInput(listInput, input, 'event list')
        const { rows } = await ctx.db.query<EventRow>(
          `SELECT ${EVENT_COLUMNS} FROM events ev
           WHERE ev.tenant_id = $1 AND ev.conversation_id = $2
             AND ($3::text[] IS NULL OR ev.kind = ANY($3))
             AND ($4::timestamptz IS NULL OR ev.created_at <= $4)
             AND ev.sensitivity = ANY($6::text[])
           ORDER BY ev.created_at, ev.seq
           LIMIT $5`,
          [i.tenantId, i.conversationId, i.kinds ?? null, asOfParam(i.asOf), i.limit, allowedSensitivities(i.channel)],
        )
        return rows.map(toEvent)
      },

      /**
       * Which of these decisions a later decision supersedes (names in its `content.supersedes`):
       * each superseded id → the first decision, by time, that supersedes it. Only decisions
       * `channel` may show count, and with `userId`, only those that user may read (their own
       * and those of no user), as the context's decision ledger counts them: another user's
       * decision supersedes nothing of theirs. Ids not superseded are left out.
       *
       * @example
       * const by = await memory.events.supersededBy([oldDecisionId]) // { [oldDecisionId]: newDecisionId }
       */
      async supersededBy(eventIds: readonly string[], options: SupersededByOptions = {}): Promise<Record<string, string>> {
        const ids = parseInput(z.array(identifier).max(1000), eventIds, 'event ids')
        const o = parseInput(supersededByOptions, options, 'event read options')
        if (ids.length === 0) return {}
        const { rows } = await ctx.db.query<{ old_id: string; by_id: string }>(
          `SELECT DISTINCT ON (s.old_id) s.old_id, d.id AS by_id
           FROM events d
           CROSS JOIN LATERAL ${supersededIds("d.content -> 'supersedes'")}
           WHERE d.tenant_id = $1 AND d.kind = 'decision' AND d.sensitivity = ANY($3::text[])
             AND s.old_id = ANY($2::text[])
             AND ($4::text IS NULL OR d.user_id IS NULL OR d.user_id = $4)
           ORDER BY s.old_id, d.created_at, d.seq`,
          [o.tenantId, ids, allowedSensitivities(o.channel), o.userId ?? null],
        )
        return Object.fromEntries(rows.map((r) => [r.old_id, r.by_id]))
      },
    },

    artifacts: {
      /**
       * The full output of a tool result whose event keeps only an excerpt. Like its event,
       * it belongs to one tenant and is shown only in channels its event's sensitivity allows.
       *
       * @example
       * const { content } = await memory.artifacts.get(result.artifactId)
       */
      async get(artifactId: string, options: ReadByIdOptions = {}): Promise<Artifact> {
        parseInput(identifier, artifactId, 'artifact id')
        const o = parseInput(getOptions, options, 'artifact read options')
        const { rows } = await ctx.db.query<{
          id: string
          event_id: string
          tenant_id: string
          media_type: string
          bytes: number
          sha256: string
          content: string
          created_at: Date
        }>(
          `SELECT a.* FROM artifacts a JOIN events ev ON ev.id = a.event_id
           WHERE a.id = $1 AND a.tenant_id = $2 AND ev.tenant_id = $2 AND ev.sensitivity = ANY($3::text[])`,
          [artifactId, o.tenantId, allowedSensitivities(o.channel)],
        )
        const row = rows[0]
        if (!row) throw new MemoryError('NOT_FOUND', `No artifact ${artifactId}`)
        return {
          id: row.id,
          eventId: row.event_id,
          tenantId: row.tenant_id,
          mediaType: row.media_type,
          bytes: row.bytes,
          sha256: row.sha256,
          content: row.content,
          createdAt: iso(row.created_at),
        }
      },
    },
  }
}

/** The read-by-id options' schema, for readers of an exported file (snapshot.ts). */
export { getOptions as eventReadOptions }
