import { Params } from '../db/params.ts'
import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import { type MemorySearchOptions, type RecallOptions, recallOptions, searchOptions } from './inputs.ts'
import { pastMemories, pastVectors } from './past.ts'
import { rankMemories } from './ranking.ts'
import { MAX_MEMORY_CONTENT, type MemoryHit } from './records.ts'
import {
  MEMORY_FILTER_COLUMNS,
  MEMORY_FILTER_JSON,
  readableBy,
  readableRow,
  relevantTo,
  selectedRow,
  selectWhere,
  unexpired,
} from './selection.ts'
import { embedText } from './stored-text.ts'
import { emitMemory } from './telemetry.ts'

/** What a memory is recalled or searched by: its text, trimmed. */
const queryText = z.string().trim().min(1).max(MAX_MEMORY_CONTENT)

/**
 * Active memories visible to a user, best first, each hit counted as a use unless the
 * call asks about the past (`memoriesApi`'s `recall`).
 */
export async function recallMemories(ctx: EngineContext, query: string, options: RecallOptions): Promise<MemoryHit[]> {
  const text = parseInput(queryText, query, 'recall query')
  const o = parseInput(recallOptions, options, 'recall options')
  const vector = await embedText(ctx, text)
  const asOf = o.asOf === undefined ? null : toDate(o.asOf)
  const at = asOf ?? ctx.now()
  const p = new Params()
  const user = p.add(o.userId ?? null)
  const where = [
    `m.tenant_id = ${p.add(o.tenantId)}`,
    `m.status = 'active'`,
    readableBy(user, p.add(o.projectId ?? null)),
  ]
  if (o.scope) where.push(`m.scope = ${p.add(o.scope)}`)
  if (o.category) where.push(`m.category = ANY(${p.add([o.category].flat())}::text[])`)
  where.push(`m.sensitivity = ANY(${p.add(allowedSensitivities(o.channel))}::text[])`)
  if (o.relevantTo) where.push(relevantTo(p, o.relevantTo))
  where.push(p.filter(o.filters, MEMORY_FILTER_COLUMNS, MEMORY_FILTER_JSON))
  const vectors =
    asOf && vector
      ? await pastVectors(ctx, o.tenantId, asOf, allowedSensitivities(o.channel), (r) =>
          readableRow(r, o.userId ?? null, o.projectId ?? null) && (o.scope === undefined || r.scope === o.scope),
        )
      : undefined
  const past = asOf
    ? (q: Queryable) => pastMemories(q, p, { tenantId: o.tenantId, at: asOf, allowed: allowedSensitivities(o.channel), vectors, model: ctx.embedder?.id })
    : undefined
  const hits = await rankMemories(ctx.db, p, {
    where: where.join(' AND '),
    grouped: o.filters === undefined && o.relevantTo === undefined,
    live: unexpired(p.add(at)),
    text,
    vector,
    limit: o.limit,
    minSimilarity: o.minSimilarity,
    fusion: o.fusion,
    touchAt: asOf ? null : at,
    ...(past ? { past } : {}),
  })
  const now = asOf ? undefined : at
  emitMemory(ctx, 'query', { id: null, scope: o.scope ?? null }, now, { results: hits.length, ...(asOf ? { asOf: asOf.toISOString() } : {}) })
  for (const h of hits) emitMemory(ctx, 'read', { id: h.id, scope: h.scope, runId: h.runId }, now)
  return hits
}

/** Hybrid search over the memories a selection names, counting no use (`memories.search`). */
export async function searchMemories(ctx: EngineContext, query: string, options: MemorySearchOptions): Promise<MemoryHit[]> {
  const text = parseInput(queryText, query, 'search query')
  const o = parseInput(searchOptions, options, 'search options')
  const vector = await embedText(ctx, text)
  const asOf = o.asOf === undefined ? null : toDate(o.asOf)
  const p = new Params()
  const where = `${selectWhere(p, o)} AND m.status = 'active'
        AND m.sensitivity = ANY(${p.add(allowedSensitivities(o.channel))}::text[])`
  const vectors = asOf && vector ? await pastVectors(ctx, o.tenantId, asOf, allowedSensitivities(o.channel), (r) => selectedRow(r, o)) : undefined
  const past = asOf
    ? (q: Queryable) => pastMemories(q, p, { tenantId: o.tenantId, at: asOf, allowed: allowedSensitivities(o.channel), vectors, model: ctx.embedder?.id })
    : undefined
  const hits = await rankMemories(ctx.db, p, {
    where,
    grouped: o.filters === undefined && o.relevantTo === undefined,
    live: unexpired(p.add(asOf ?? ctx.now())),
    text,
    vector,
    limit: o.limit,
    minSimilarity: o.minSimilarity,
    fusion: o.fusion,
    touchAt: null,
    ...(past ? { past } : {}),
  })
  emitMemory(ctx, 'query', { id: null, scope: o.scope ?? null, runId: o.runId ?? null }, undefined, {
    results: hits.length,
    ...(asOf ? { asOf: asOf.toISOString() } : {}),
  })
  return hits
}
