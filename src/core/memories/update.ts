import type { JsonObject } from '../graph/entities.ts'
import type { Queryable } from '../kernel/db.ts'
import { toVectorParam } from '../kernel/embedder.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { memoryHash } from '../kernel/hash.ts'
import { toDate } from '../kernel/time.ts'
import { parseInput } from '../kernel/validate.ts'
import { refuseSecret } from '../log/events.ts'
import { countRedactions, mergeRedactions, type RedactionCount, redact, redactUnknown } from '../privacy/redact.ts'
import { isSealed, refuseSealedLookalike, vaultLocked } from '../privacy/vault.ts'
import { logHistory } from './history.ts'
import { byIdOptions, type MemoryByIdOptions, type MemoryChanges, memoryIdSchema, type MemoryUpdate, updateInput } from './inputs.ts'
import type { MemoryRecord } from './records.ts'
import { getRow, type MemoryRow, toRecord } from './rows.ts'
import { embedText, redactionList, sealedMemory } from './stored-text.ts'
import { emitMemory } from './telemetry.ts'

/** The text, hash, vector and model an update stores; null keeps the memory's own. */
interface StoredChange {
  content: string | null
  hash: string | null
  vector: string | null
  model: string | null
}

/** Changes a memory in place and logs it as UPDATE (`memories.update`). */
export async function updateMemory(
  ctx: EngineContext,
  id: string,
  changes: MemoryUpdate,
  options: MemoryByIdOptions,
): Promise<MemoryRecord> {
  const memoryId = parseInput(memoryIdSchema, id, 'memory id')
  const parsed = parseInput(updateInput, changes, 'memory update')
  const { tenantId } = parseInput(byIdOptions, options, 'memory options')
  if (parsed.sensitivity !== undefined) refuseSecret(parsed.sensitivity)
  const { value: u, redactions } = redactChanges(parsed)
  if (u.content !== undefined) refuseSealedLookalike(u.content, 'content')
  const vector = u.content === undefined ? null : await embedText(ctx, u.content)
  const hash = u.content === undefined ? null : memoryHash(u.content)
  const expiresAt = u.expiresAt === undefined || u.expiresAt === null ? null : toDate(u.expiresAt)
  const at = ctx.now()
  const row = await ctx.db.transaction(async (tx) => {
    const old = await getRow(tx, memoryId, tenantId)
    if (!old || old.status === 'deleted') {
      throw new MemoryError('NOT_FOUND', `No memory "${memoryId}"`, { details: { id: memoryId } })
    }
    const fresh = { content: u.content ?? null, hash, vector: vector ? toVectorParam(vector.value) : null, model: vector?.model ?? null }
    const stored = await storedChange(ctx, old, u, fresh)
    await writeChange(tx, { memoryId, tenantId, u, stored, expiresAt, at })
    await logHistory(
      tx,
      [
        {
          memoryId,
          event: 'UPDATE',
          oldValue: old.content,
          newValue: stored.content ?? old.content,
          changes: changedFields(old, u, expiresAt, redactions),
          tenantId: old.tenant_id,
          userId: old.user_id,
          agentId: old.agent_id,
          runId: old.run_id,
        },
      ],
      at,
    )
    return (await getRow(tx, memoryId, tenantId)) as MemoryRow
  })
  emitMemory(ctx, 'overwrite', { id: memoryId, scope: row.scope, runId: row.run_id }, at)
  return toRecord(row)
}

/** Secrets in new text or metadata are replaced first, as in `remember`. */
function redactChanges(parsed: MemoryChanges): { value: MemoryChanges; redactions: RedactionCount[] } {
  const redactedContent = parsed.content === undefined ? undefined : redact(parsed.content)
  const redactedMetadata = parsed.metadata === undefined ? undefined : redactUnknown(parsed.metadata)
  const redactions = mergeRedactions(
    countRedactions(redactedContent?.findings ?? []),
    redactedMetadata?.redactions ?? [],
  )
  const value = {
    ...parsed,
    ...(redactedContent ? { content: redactedContent.text } : {}),
    ...(redactedMetadata ? { metadata: redactedMetadata.value as Record<string, unknown> } : {}),
  }
  return { value, redactions }
}

/**
 * Under a vault, the text is stored as the memory's final sensitivity asks: sealed when it
 * becomes (or stays) `high`, opened when it leaves `high`.
 */
async function storedChange(ctx: EngineContext, old: MemoryRow, u: MemoryChanges, fresh: StoredChange): Promise<StoredChange> {
  const wasSealed = isSealed(old.content)
  const sealedNow = (u.sensitivity ?? old.sensitivity) === 'high' && ctx.vault.status !== 'none'
  if (!(sealedNow ? u.content !== undefined || !wasSealed : wasSealed)) return fresh
  const plain = u.content ?? (await ctx.vault.open(old.content))
  if (isSealed(plain)) throw vaultLocked("a sealed memory's text cannot be opened")
  const next = await sealedMemory(ctx, plain, sealedNow ? 'high' : 'none')
  return {
    content: next.content,
    hash: next.hash,
    vector: sealedNow || !fresh.vector ? null : fresh.vector,
    model: sealedNow || !fresh.vector ? null : fresh.model,
  }
}

/** Writes an update's fields; those left out keep their value. */
async function writeChange(
  tx: Queryable,
  c: { memoryId: string; tenantId: string; u: MemoryChanges; stored: StoredChange; expiresAt: Date | null; at: Date },
): Promise<void> {
  const { u, stored } = c
  await tx.query(
    `UPDATE memories SET
       content = coalesce($2, content),
       hash = coalesce($3, hash),
       vector = CASE WHEN $2::text IS NULL THEN vector ELSE $4::vector END,
       embed_model = CASE WHEN $2::text IS NULL THEN embed_model ELSE $5 END,
       category = coalesce($6, category),
       confidence = coalesce($7, confidence),
       metadata = coalesce($8::jsonb, metadata),
       updated_at = $9,
       sensitivity = coalesce($10, sensitivity),
       expires_at = CASE WHEN $12::boolean THEN $13::timestamptz ELSE expires_at END
     WHERE id = $1 AND tenant_id = $11`,
    [
      c.memoryId,
      stored.content,
      stored.hash,
      stored.vector,
      stored.model,
      u.category ?? null,
      u.confidence ?? null,
      u.metadata === undefined ? null : JSON.stringify(u.metadata),
      c.at,
      u.sensitivity ?? null,
      c.tenantId,
      u.expiresAt !== undefined,
      c.expiresAt,
    ],
  )
}

/** The fields besides the text an update changed, each `[old, new]`, as its history entry logs them. */
function changedFields(old: MemoryRow, u: MemoryChanges, expiresAt: Date | null, redactions: RedactionCount[]): JsonObject {
  const other: JsonObject = {}
  if (u.expiresAt !== undefined && (old.expires_at?.getTime() ?? null) !== (expiresAt?.getTime() ?? null))
    other.expiresAt = [old.expires_at?.toISOString() ?? null, expiresAt?.toISOString() ?? null]
  if (u.category !== undefined && u.category !== old.category)
    other.category = [old.category, u.category]
  if (u.confidence !== undefined && u.confidence !== old.confidence)
    other.confidence = [old.confidence, u.confidence]
  if (u.metadata !== undefined) other.metadata = [old.metadata, u.metadata as JsonObject]
  if (u.sensitivity !== undefined && u.sensitivity !== old.sensitivity) other.sensitivity = [old.sensitivity, u.sensitivity]
  if (redactions.length > 0) other.redactions = redactionList(redactions)
  return other
}
