import { Params } from '../db/params.ts'
import { indexedVector, vectorScanSettings } from '../db/vectors.ts'
import { type JsonObject, missingReferences, writeEdges } from '../graph/entities.ts'
import type { Queryable } from '../kernel/db.ts'
import { toVectorParam } from '../kernel/embedder.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { newId } from '../kernel/ids.ts'
import { toDate } from '../kernel/time.ts'
import { parseInput } from '../kernel/validate.ts'
import { refuseSecret } from '../log/events.ts'
import type { RedactionCount } from '../privacy/redact.ts'
import { refuseSealedLookalike, vaultMadeSince } from '../privacy/vault.ts'
import { contextIdFor } from './contexts.ts'
import { type HistoryEntry, logHistory } from './history.ts'
import { type RememberFields, type RememberInput, rememberInput } from './inputs.ts'
import { CONFIDENCE_BY_SOURCE, type RememberResult } from './records.ts'
import { sameScope } from './selection.ts'
import { embedText, type MemoryVector, redactionList, redactMemory, sealedMemory, type StoredText } from './stored-text.ts'
import { emitMemory } from './telemetry.ts'

/** Memories read through the HNSW index for the near-duplicate check, most similar kept. */
const NEAREST = 10

/** What one `remember` writes, worked out before its transaction. */
interface Remembering {
  m: RememberFields
  sealed: StoredText
  vector: MemoryVector | null
  expiresAt: Date | null
  at: Date
  redactions: RedactionCount[]
}

/** An active memory of the scope with the new one's text, or saved under its key. */
interface SameMemory {
  id: string
  content: string
  sensitivity: string
  hash: string
  key: string | null
  expires_at: Date | null
}

/** The memory a new one supersedes: its similarity, or null when it is replaced by key. */
interface Superseded {
  id: string
  content: string
  similarity: number | null
  key: string | null
}

/** An edge from the new memory, as `writeEdges` takes it. */
interface MemoryEdge {
  src: string
  rel: string
  dst: string
  payload: JsonObject
  tenantId: string
  runId?: string
}

/**
 * Saves a curated memory (`memoriesApi`'s `remember`): secrets are redacted, the text sealed
 * or embedded, then one transaction keeps, supersedes or adds it.
 */
export async function rememberMemory(ctx: EngineContext, input: RememberInput): Promise<RememberResult> {
  const parsed = parseInput(rememberInput, input, 'memory')
  const { sensitivity } = parsed
  refuseSecret(sensitivity)
  const { value: m, redactions } = redactMemory(parsed)
  refuseSealedLookalike(m.content, 'content')
  const { vault } = ctx
  const expiresAt = m.expiresAt === undefined ? null : toDate(m.expiresAt)
  let sealed = await sealedMemory(ctx, m.content, sensitivity)
  let vector = sealed.sealed ? null : await embedText(ctx, m.content)
  const at = ctx.now()
  const result = await ctx.db.transaction(async (tx) => {
    if (vaultMadeSince(vault, ctx.vault)) {
      sealed = await sealedMemory(ctx, m.content, sensitivity)
      if (sealed.sealed) vector = null
    }
    return rememberIn(ctx, tx, { m, sealed, vector, expiresAt, at, redactions })
  })
  if (result.action !== 'unchanged')
    emitMemory(ctx, 'write', { id: result.id, scope: m.scope, runId: m.runId ?? null }, at)
  if (result.supersededId)
    emitMemory(ctx, 'overwrite', { id: result.supersededId, scope: m.scope, runId: m.runId ?? null }, at)
  return redactions.length > 0 && result.action !== 'unchanged' ? { ...result, redactions } : result
}

/** `remember`'s transaction: the same memory is kept; else the new one is added, superseding any it restates. */
async function rememberIn(ctx: EngineContext, tx: Queryable, w: Remembering): Promise<RememberResult> {
  const { m, sealed, vector, expiresAt, at } = w
  // What an existing memory of this text has as its hash: plain, or keyed when it is sealed.
  const hashes = sealed.mac ? [sealed.plainHash, sealed.mac] : [sealed.plainHash]
  const same = await findSame(tx, m, hashes)
  if (
    same &&
    same.hash === sealed.hash &&
    same.sensitivity === m.sensitivity &&
    (same.expires_at?.getTime() ?? null) === (expiresAt?.getTime() ?? null) &&
    !(same.expires_at && same.expires_at <= at)
  ) {
    return { id: same.id, action: 'unchanged' }
  }

  // The same text marked differently (another sensitivity or expiry), or said again once
  // it has expired, is restated: the new memory supersedes the old one; so does any new
  // text saved under the key of an existing memory.
  let near: Superseded | undefined = same
    ? { id: same.id, content: same.content, similarity: hashes.includes(same.hash) ? 1 : null, key: same.key }
    : undefined
  if (!near && vector && m.dedup === 'semantic' && m.key === undefined) near = await findNear(ctx, tx, m, vector)

  const id = newId('memory')
  await insertMemory(tx, id, w, near)
  const who = {
    tenantId: m.tenantId,
    userId: m.userId ?? null,
    agentId: m.agentId ?? null,
    runId: m.runId ?? null,
  }
  const history: HistoryEntry[] = [
    {
      memoryId: id,
      event: 'ADD',
      oldValue: null,
      newValue: sealed.content,
      ...(w.redactions.length > 0 ? { changes: { redactions: redactionList(w.redactions) } } : {}),
      ...who,
    },
  ]
  if (near) {
    await tx.query(
      `UPDATE memories SET status = 'superseded', superseded_by = $2, updated_at = $3 WHERE id = $1`,
      [near.id, id, at],
    )
    history.push({
      memoryId: near.id,
      event: 'UPDATE',
      oldValue: near.content,
      newValue: near.content,
      changes: { status: ['active', 'superseded'], supersededBy: id },
      ...who,
    })
  }
  const edges = await memoryEdges(tx, id, m, near, at)
  await logHistory(tx, history, at)
  await writeEdges(tx, edges, at)
  await warnMissingReferences(ctx, tx, id, m, at)
  return near ? { id, action: 'superseded', supersededId: near.id } : { id, action: 'created' }
}

/** With a key, the memory it names is the one to keep or replace; without one, the same text in the scope. */
async function findSame(tx: Queryable, m: RememberFields, hashes: string[]): Promise<SameMemory | undefined> {
  const p = new Params()
  const exact = await tx.query<SameMemory>(
    m.key === undefined
      ? `SELECT m.id, m.content, m.sensitivity, m.hash, m.key, m.expires_at FROM memories m
         WHERE ${sameScope(p, m)} AND m.status = 'active' AND m.hash = ANY(${p.add(hashes)})
         ORDER BY m.id LIMIT 1`
      : `SELECT m.id, m.content, m.sensitivity, m.hash, m.key, m.expires_at FROM memories m
         WHERE ${sameScope(p, m)} AND m.status = 'active' AND m.key = ${p.add(m.key)}
         ORDER BY m.id LIMIT 1`,
    p.values,
  )
  return exact.rows[0]
}

/**
 * The most similar memory in the scope at or above the engine's dedup threshold: the nearest
 * few through the HNSW index (the walk goes on past other scopes' memories), then the most
 * similar, ties by id.
 */
async function findNear(ctx: EngineContext, tx: Queryable, m: RememberFields, vector: MemoryVector): Promise<Superseded | undefined> {
  const q = new Params()
  const indexed = indexedVector('m.vector', vector.value.length)
  const distance = indexed.distanceTo(q.add(toVectorParam(vector.value)))
  await tx.exec(vectorScanSettings(NEAREST))
  const { rows } = await tx.query<{ id: string; content: string; similarity: number; key: string | null }>(
    `SELECT * FROM (
       SELECT m.id, m.content, m.key, 1 - (${distance}) AS similarity FROM memories m
       WHERE ${sameScope(q, m)} AND m.status = 'active' AND m.embed_model = ${q.add(vector.model)}
         AND ${indexed.predicate}
       ORDER BY ${distance} LIMIT ${NEAREST}
     ) n
     ORDER BY similarity DESC, id LIMIT 1`,
    q.values,
  )
  return rows[0] && rows[0].similarity >= ctx.dedupThreshold ? rows[0] : undefined
}

/** Inserts the new memory; one that replaces a keyed memory keeps its key. */
async function insertMemory(tx: Queryable, id: string, w: Remembering, near: Superseded | undefined): Promise<void> {
  const { m, sealed, vector } = w
  await tx.query(
    `INSERT INTO memories (id, tenant_id, user_id, agent_id, run_id, project_id, scope, category, source,
                           confidence, content, hash, metadata, vector, embed_model, created_at, updated_at,
                           sensitivity, key, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::vector, $15, $16, $16, $17, $18, $19)`,
    [
      id,
      m.tenantId,
      m.userId ?? null,
      m.agentId ?? null,
      m.runId ?? null,
      m.projectId ?? null,
      m.scope,
      m.category,
      m.source,
      m.confidence ?? CONFIDENCE_BY_SOURCE[m.source],
      sealed.content,
      sealed.hash,
      JSON.stringify(m.metadata),
      vector ? toVectorParam(vector.value) : null,
      vector?.model ?? null,
      w.at,
      m.sensitivity,
      // A memory that replaces a keyed one keeps its key.
      m.key ?? near?.key ?? null,
      w.expiresAt,
    ],
  )
}

/** The new memory's edges: what it supersedes, its context, what it is relevant to and derived from. */
async function memoryEdges(
  tx: Queryable,
  id: string,
  m: RememberFields,
  near: Superseded | undefined,
  at: Date,
): Promise<MemoryEdge[]> {
  const edges: MemoryEdge[] = []
  const link = (rel: string, dst: string, payload: JsonObject = {}) =>
    edges.push({
      src: id,
      rel,
      dst,
      payload,
      tenantId: m.tenantId,
      ...(m.runId ? { runId: m.runId } : {}),
    })

  if (near) link('SUPERSEDES', near.id, near.similarity === null ? { key: m.key ?? null } : { similarity: near.similarity })
  if (m.context) link('BELONGS_TO_CONTEXT', await contextIdFor(tx, m, m.context, at))
  for (const dst of m.relatedTo ?? []) link('RELEVANT_TO', dst)
  for (const dst of m.derivedFrom ?? []) link('DERIVED_FROM', dst)
  // A memory restated or corrected stays in the contexts, and relevant to the entities, of
  // the one it replaces, unless it names its own.
  const inherited = near ? [...(m.context ? [] : ['BELONGS_TO_CONTEXT']), ...(m.relatedTo ? [] : ['RELEVANT_TO'])] : []
  if (near && inherited.length > 0) {
    const { rows } = await tx.query<{ rel: string; dst: string }>(
      `SELECT r.name AS rel, e.dst FROM edges e JOIN relations r ON r.id = e.rel
       WHERE e.src = $1 AND e.tombstoned_at IS NULL AND r.name = ANY($2::text[])
       ORDER BY e.id`,
      [near.id, inherited],
    )
    for (const r of rows) link(r.rel, r.dst)
  }
  return edges
}

/** A warning to telemetry listeners when `relatedTo` or `derivedFrom` name ids the tenant does not hold. */
async function warnMissingReferences(ctx: EngineContext, tx: Queryable, id: string, m: RememberFields, at: Date): Promise<void> {
  const refs = [...(m.relatedTo ?? []), ...(m.derivedFrom ?? [])]
  const missing = refs.length > 0 ? await missingReferences(tx, m.tenantId, refs) : []
  if (missing.length > 0) {
    ctx.telemetry.emit({
      op: 'warning',
      memoryId: id,
      entityType: 'memory',
      scope: m.scope,
      runId: m.runId ?? null,
      taskId: null,
      at,
      detail: { warning: 'missing_reference', ids: missing },
    })
  }
}
