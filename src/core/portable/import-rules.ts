import { PROVENANCES } from '../documents/documents.ts'
import { MemoryError } from '../kernel/errors.ts'
import { ACTOR_TYPES, EVENT_KINDS, redactionMeta, tag } from '../log/events.ts'
import { entityId, relationName, storedName } from '../graph/edges.ts'
import { sha256Hex } from '../kernel/hash.ts'
import { type IdKind, isIdOf } from '../kernel/ids.ts'
import { type JsonObject, type JsonValue, jsonObject, jsonValue, storableText } from '../kernel/json.ts'
import {
  formatBytes,
  MAX_ARTIFACT_BYTES,
  MAX_DOCUMENT_BYTES,
  MAX_DOCUMENT_KEY_BYTES,
  MAX_EVENT_CONTENT_BYTES,
  MAX_REFS,
  MAX_TAGS,
  utf8Length,
} from '../kernel/limits.ts'
import { MAX_MEMORY_CONTENT, MEMORY_CATEGORIES, MEMORY_SCOPES, MEMORY_SOURCES } from '../memories/memories.ts'
import { countRedactions, mergeRedactions, type RedactionCount, redact, redactJson } from '../privacy/redact.ts'
import { CHANNELS, identifier } from '../kernel/scope.ts'
import { timeInput } from '../kernel/time.ts'
import type { ZodType } from 'zod'
import { z } from '../kernel/validate.ts'
import { SEALED_PREFIX } from '../privacy/vault.ts'

/**
 * The rules an imported row obeys: those a row written through the API obeys. A file from
 * anyone is judged row by row against them before anything is written; its secrets are
 * replaced as a write replaces them.
 */

/**
 * The most a turn number or a relation's id may be in a file. The memory counts on from the
 * largest it holds: a file naming 2³¹ − 1 would leave no room, and every later turn of that
 * conversation (or every new relation) would fail.
 */
export const MAX_IMPORTED_COUNTER = 1_000_000_000

/**
 * The longest line an event row may take in a file, checked before the line is parsed: its
 * content within the write path's limit, written with the spaces Postgres puts after `:` and
 * `,`, and room for the rest of the row. The exact limit is checked once it is parsed.
 */
export const MAX_EVENT_LINE_CHARS = 2 * MAX_EVENT_CONTENT_BYTES + 2 * 2 ** 20

const id = (kind: IdKind) =>
  z.string().refine((s) => isIdOf(kind, s), `must be an id Engram makes for a ${kind}`)
const time = timeInput
const counter = z.number().int().min(0).max(MAX_IMPORTED_COUNTER)
const count = z.number().int().min(0).max(2_147_483_647)
const text = storableText
const bytea = z.string().regex(/^\\x(?:[0-9a-f]{2})*$/, 'must be bytes written as \\x and hex digits')
const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 in hex')
const sensitivity = z.enum(['none', 'low', 'high'])
const fraction = z.number().min(0).max(1)

/** Text within `max` UTF-8 bytes, measured before anything else is done with it. */
const textWithin = (max: number, limit: string) =>
  z.string().superRefine((value, ctx) => {
    const bytes = utf8Length(value)
    if (bytes > max) {
      ctx.addIssue({ code: 'custom', message: `is ${formatBytes(bytes)}; the limit is ${formatBytes(max)} (${limit})` })
      return
    }
    const problem = storableText.safeParse(value)
    if (!problem.success) ctx.addIssue({ code: 'custom', message: problem.error.issues[0]?.message ?? 'is not storable text' })
  })

/** An event's content: a JSON object, no deeper than writes allow, within MAX_EVENT_CONTENT_BYTES. */
const eventContent = z.custom<JsonObject>().superRefine((value, ctx) => {
  const shape = jsonObject.safeParse(value)
  if (!shape.success) {
    ctx.addIssue({ code: 'custom', message: shape.error.issues[0]?.message ?? 'expected a JSON object' })
    return
  }
  const bytes = utf8Length(JSON.stringify(value))
  if (bytes > MAX_EVENT_CONTENT_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `is ${formatBytes(bytes)}; the limit is ${formatBytes(MAX_EVENT_CONTENT_BYTES)} (MAX_EVENT_CONTENT_BYTES)`,
    })
  }
})

/**
 * A table's row: every column that a file names is checked; a column a file leaves out (one
 * written before the column existed) takes the table's default. Columns of a newer schema are
 * refused before rows are judged, by the catalog.
 */
function row<T extends Record<string, ZodType>>(shape: T, check?: (r: Record<string, unknown>) => string | undefined) {
  const optional = Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, s.optional()]))
  const schema = z.looseObject(optional)
  return check
    ? schema.superRefine((r, ctx) => {
        const problem = check(r)
        if (problem) ctx.addIssue({ code: 'custom', message: problem })
      })
    : schema
}

const scoped = {
  tenant_id: identifier,
  user_id: identifier.nullable(),
  agent_id: identifier.nullable(),
  run_id: identifier.nullable(),
}

/** What content each kind of event holds once written (as `record` requires it). */
const KIND_NEEDS: Partial<Record<string, (c: Record<string, unknown>) => string | undefined>> = {
  message: (c) => (typeof c.text === 'string' ? undefined : 'a message needs content.text (a string)'),
  tool_call: (c) => (typeof c.tool === 'string' && c.tool ? undefined : 'a tool_call needs content.tool (a string)'),
  decision: (c) =>
    typeof c.decision === 'string' || typeof c.text === 'string' ? undefined : 'a decision needs content.decision or content.text (a string)',
}

/** Each exported table's rules, by column. */
export const ROW_RULES: Record<string, ZodType> = {
  events: row({
    id: id('event'),
    kind: z.enum(EVENT_KINDS),
    ...scoped,
    conversation_id: identifier,
    turn_index: counter.nullable(),
    channel: z.enum(CHANNELS),
    actor_type: z.enum(ACTOR_TYPES),
    actor_id: identifier,
    sensitivity,
    tags: z.array(tag).max(MAX_TAGS),
    content: eventContent,
    refs: z.array(identifier).max(MAX_REFS),
    meta: jsonObject,
    created_at: time,
  }, (r) => {
    const needs = typeof r.kind === 'string' ? KIND_NEEDS[r.kind] : undefined
    return needs && r.content !== null && typeof r.content === 'object' ? needs(r.content as Record<string, unknown>) : undefined
  }),
  artifacts: row({
    id: id('artifact'),
    event_id: id('event'),
    tenant_id: identifier,
    media_type: text,
    bytes: count,
    sha256,
    content: textWithin(MAX_ARTIFACT_BYTES, 'MAX_ARTIFACT_BYTES'),
    created_at: time,
  }),
  archives: row({
    id: id('archive'),
    tenant_id: identifier,
    conversation_id: identifier,
    event_ids: z.array(id('event')),
    user_ids: z.array(identifier),
    agent_ids: z.array(identifier),
    counts: jsonObject,
    first_event_at: time,
    last_event_at: time,
    bytes: count,
    file: bytea,
    created_at: time,
    next_turn_index: counter.nullable(),
  }),
  conversation_hits: row({ tenant_id: identifier, conversation_id: identifier, last_hit_at: time }),
  documents: row({
    id: id('document'),
    tenant_id: identifier,
    canonical_key: textWithin(MAX_DOCUMENT_KEY_BYTES, 'MAX_DOCUMENT_KEY_BYTES').pipe(z.string().min(1)),
    key_kind: z.enum(['path', 'url']),
    mode: z.enum(['local', 'global']),
    created_at: time,
  }),
  doc_versions: row({
    id: id('version'),
    document_id: id('document'),
    version: z.number().int().min(1).max(2_147_483_647),
    content_hash: text,
    content: textWithin(MAX_DOCUMENT_BYTES, 'MAX_DOCUMENT_BYTES').nullable(),
    bytes: count.nullable(),
    provenance: z.enum(PROVENANCES),
    conversation_id: identifier.nullable(),
    event_id: id('event').nullable(),
    created_at: time,
    content_of: id('version').nullable(),
  }),
  edges: row(
    {
      id: id('edge'),
      src: entityId,
      rel: counter,
      dst: entityId,
      props: jsonObject,
      tenant_id: identifier,
      conversation_id: identifier.nullable(),
      run_id: identifier.nullable(),
      task_id: identifier.nullable(),
      turn_index: counter.nullable(),
      created_at: time,
      tombstoned_at: time.nullable(),
      document_id: id('document').nullable(),
      valid_from: time.nullable(),
      valid_to: time.nullable(),
    },
    (r) =>
      typeof r.valid_from === 'string' && typeof r.valid_to === 'string' && Date.parse(r.valid_to) <= Date.parse(r.valid_from)
        ? 'valid_to must come after valid_from'
        : undefined,
  ),
  engram_meta: row({ key: storedName(200), value: jsonValue }),
  forget_log: row({ id: id('forget'), target: jsonObject, counts: jsonObject, reason: text.nullable(), created_at: time }),
  kv: row({
    id: id('kv'),
    tenant_id: identifier,
    scope: storedName(500),
    namespace: storedName(500),
    key: storedName(500),
    rev: z.number().int().min(1).max(2_147_483_647),
    payload: jsonValue.nullable(),
    deleted: z.boolean(),
    run_id: identifier.nullable(),
    task_id: identifier.nullable(),
    created_at: time,
  }),
  memories: row({
    id: id('memory'),
    ...scoped,
    project_id: identifier.nullable(),
    scope: z.enum(MEMORY_SCOPES),
    category: z.enum(MEMORY_CATEGORIES),
    source: z.enum(MEMORY_SOURCES),
    confidence: fraction,
    content: text.pipe(z.string().min(1).max(MAX_MEMORY_CONTENT)).refine((s) => s.trim() === s, 'must not start or end with whitespace'),
    hash: text,
    metadata: jsonObject,
    vector: z.string().regex(/^\[[^\]]*\]$/, 'must be a vector written as [x,y,…]').nullable(),
    embed_model: text.nullable(),
    status: z.enum(['active', 'superseded', 'deleted']),
    superseded_by: id('memory').nullable(),
    use_count: count,
    last_used_at: time.nullable(),
    created_at: time,
    updated_at: time,
    sensitivity,
    key: storedName(200).nullable(),
    expires_at: time.nullable(),
  }),
  memory_contexts: row({
    id: id('context'),
    tenant_id: identifier,
    user_id: identifier.nullable(),
    name: storedName(200),
    description: text.pipe(z.string().max(1000)).nullable(),
    priority: fraction,
    created_at: time,
    updated_at: time.nullable(),
  }),
  memory_history: row({
    id: id('memoryHistory'),
    memory_id: id('memory'),
    event: z.enum(['ADD', 'UPDATE', 'DELETE']),
    old_value: text.nullable(),
    new_value: text.nullable(),
    changes: jsonObject,
    is_deleted: z.boolean(),
    ...scoped,
    created_at: time,
  }),
  nodes: row({
    id: entityId,
    rev: z.number().int().min(1).max(2_147_483_647),
    tenant_id: identifier,
    type: storedName(200),
    payload: jsonObject,
    scope: storedName(200).nullable(),
    run_id: identifier.nullable(),
    task_id: identifier.nullable(),
    tombstone: z.boolean(),
    created_at: time,
  }),
  relations: row({
    id: counter,
    name: relationName,
    description: text.nullable(),
    builtin: z.boolean(),
    created_at: time,
  }),
}

/** A row of a file that breaks a rule: the whole file is refused, naming the row and the rule. */
export function brokenRule(
  table: string,
  index: number,
  row: Record<string, unknown> | undefined,
  column: string,
  rule: string,
): MemoryError {
  const rowId = row && (typeof row.id === 'string' || typeof row.id === 'number') ? row.id : undefined
  const named = rowId === undefined ? '' : ` (id ${JSON.stringify(String(rowId).slice(0, 80))})`
  return new MemoryError(
    'IMPORT_CORRUPT',
    `The import file breaks a rule of this memory: "${table}" row ${index + 1}${named}, ${column ? `${column} ` : ''}${rule}`,
    { details: { table, row: index + 1, ...(rowId === undefined ? {} : { id: rowId }), column, rule } },
  )
}

/**
 * Refuses a line too long for its table before it is parsed: a file Engram wrote never holds
 * one, and parsing and storing it would hold the memory for minutes.
 */
export function refuseOversizedLine(line: string, counts: Map<string, number>): void {
  if (line.length <= MAX_EVENT_LINE_CHARS || !line.startsWith('{"t":"events",')) return
  const index = counts.get('events') ?? 0
  throw brokenRule(
    'events',
    index,
    undefined,
    'content',
    `is over ${formatBytes(MAX_EVENT_LINE_CHARS)} as written; the limit is ${formatBytes(MAX_EVENT_CONTENT_BYTES)} (MAX_EVENT_CONTENT_BYTES)`,
  )
}

/**
 * Checks every row of a file against its table's rules, and refuses a key written twice
 * (the second would be dropped without a word).
 */
export function judgeImportedRows(rows: Map<string, Record<string, unknown>[]>, keys: Map<string, string[]>): void {
  for (const [table, tableRows] of rows) {
    const rules = ROW_RULES[table]
    if (!rules) throw brokenRule(table, 0, tableRows[0], '', 'is not a table an export holds')
    const key = keys.get(table)
    const seen = new Set<string>()
    tableRows.forEach((r, i) => {
      const result = rules.safeParse(r)
      if (!result.success) {
        const issue = result.error.issues[0]
        throw brokenRule(table, i, r, issue?.path.map(String).join('.') ?? '', issue?.message ?? 'is malformed')
      }
      if (!key) return
      const k = JSON.stringify(key.map((c) => r[c] ?? null))
      if (seen.has(k)) throw brokenRule(table, i, r, key.join(', '), 'repeats a key an earlier row holds')
      seen.add(k)
    })
  }
  // What a write never leaves behind: an edge of a relation, or an artifact of an event,
  // that the file does not hold (a file is a whole memory's rows; an archive is not judged).
  const relations = new Set((rows.get('relations') ?? []).map((r) => r.id))
  ;(rows.get('edges') ?? []).forEach((r, i) => {
    if (!relations.has(r.rel)) throw brokenRule('edges', i, r, 'rel', 'names a relation the file does not hold')
  })
  const events = new Set((rows.get('events') ?? []).map((r) => r.id))
  ;(rows.get('artifacts') ?? []).forEach((r, i) => {
    if (!events.has(r.event_id)) throw brokenRule('artifacts', i, r, 'event_id', 'names an event the file does not hold')
  })
}

/** A chunk's vector as a file carries it: base64 of little-endian float32s. */
const vectorRule = row({
  source_id: id('event'),
  ord: count,
  model: text,
  v: z.string().regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, 'must be base64'),
})

/** Checks the chunk vectors a file carries, as rows of the table `@vectors`. */
export function judgeImportedVectors(vectors: readonly unknown[]): void {
  vectors.forEach((v, i) => {
    const result = vectorRule.safeParse(v)
    if (result.success) return
    const issue = result.error.issues[0]
    throw brokenRule('@vectors', i, undefined, issue?.path.map(String).join('.') ?? '', issue?.message ?? 'is malformed')
  })
}

/** The JSON columns whose strings a write redacts, and the text columns. */
const REDACTED_JSON: Record<string, readonly string[]> = {
  events: ['content'],
  edges: ['props'],
  nodes: ['payload'],
  kv: ['payload'],
  memories: ['metadata'],
}
const REDACTED_TEXT: Record<string, readonly string[]> = {
  artifacts: ['content'],
  doc_versions: ['content'],
  memories: ['content'],
  memory_history: ['old_value', 'new_value'],
}

/**
 * Replaces the secrets of judged rows as a write replaces them, and counts them by type. An
 * event records its count in `meta.redactions`; an artifact takes the hash and size of its
 * redacted text, as a tool result's artifact does.
 */
export function redactImportedRows(rows: Map<string, Record<string, unknown>[]>): RedactionCount[] {
  let total: RedactionCount[] = []
  const tables = new Set([...Object.keys(REDACTED_JSON), ...Object.keys(REDACTED_TEXT)])
  for (const table of tables) {
    for (const r of rows.get(table) ?? []) {
      let found: RedactionCount[] = []
      for (const column of REDACTED_JSON[table] ?? []) {
        const value = r[column]
        if (value === undefined || value === null) continue
        const out = redactJson(value as JsonValue, { keep: isSealedText })
        if (out.findings === 0) continue
        r[column] = out.value
        found = mergeRedactions(found, out.redactions)
      }
      for (const column of REDACTED_TEXT[table] ?? []) {
        const value = r[column]
        if (typeof value !== 'string' || isSealedText(value)) continue
        const out = redact(value)
        if (out.findings.length === 0) continue
        r[column] = out.text
        found = mergeRedactions(found, countRedactions(out.findings))
      }
      if (found.length === 0) continue
      total = mergeRedactions(total, found)
      if (table === 'events') {
        const meta = (r.meta ?? {}) as JsonObject
        const before = Array.isArray(meta.redactions) ? (meta.redactions as unknown as RedactionCount[]) : []
        r.meta = { ...meta, ...redactionMeta(mergeRedactions(before.filter(isCount), found)) }
      }
      if (table === 'artifacts' && typeof r.content === 'string') {
        r.sha256 = sha256Hex(r.content)
        r.bytes = utf8Length(r.content)
      }
    }
  }
  return total
}

/** A vault's ciphertext (a sync between devices of one key carries it): no secret to find. */
const isSealedText = (text: string) => text.startsWith(SEALED_PREFIX)

const isCount = (v: unknown): v is RedactionCount =>
  v !== null && typeof v === 'object' && typeof (v as RedactionCount).type === 'string' && Number.isInteger((v as RedactionCount).count)
