import { MemoryError } from '../kernel/errors.ts'
import { ARRIVING_COUNTER } from '../kernel/limits.ts'
import { type Alias, replacements, retireIds } from '../kernel/aliases.ts'
import { mergeChains, renameDocuments, sameKeyOtherId } from '../documents/merge.ts'
import { mergeNodeRevisions } from '../graph/node-merge.ts'
import { renameContexts, sameNameOtherId, takeContextChanges } from '../memories/contexts.ts'
import { type Ctx, insertNew, insertRows } from './apply-context.ts'

/*
 * Rows matched by what they name, not only by id: a document by its path or URL, a version by
 * its content in the chain, a memory context by its user and name, a node revision by what it
 * holds. Two devices that wrote the same thing offline end with one row everywhere.
 */

/**
 * A key has one document. A server keeps its own id for a key and notes a device's other id
 * as retired; a device takes the server's id for its own document of that key.
 */
export async function applyDocuments(c: Ctx, rows: readonly Record<string, unknown>[]): Promise<{ added: number; renamed: string[] }> {
  return applyOnePerName(c, 'documents', rows, await sameKeyOtherId(c.tx, rows), renameDocuments)
}

/** What both sides name alike (a document's key, a context's user and name): the server's id stays. */
async function applyOnePerName(
  c: Ctx,
  table: 'documents' | 'memory_contexts',
  rows: readonly Record<string, unknown>[],
  clashes: readonly { theirs: string; ours: string }[],
  rename: (tx: Ctx['tx'], moves: readonly Alias[], insert: () => Promise<unknown>) => Promise<void>,
): Promise<{ added: number; renamed: string[] }> {
  if (c.side.kind === 'server') {
    const theirs = new Set(clashes.map((x) => x.theirs))
    await retireIds(c.tx, clashes.map((x) => ({ old: x.theirs, new: x.ours })), c.side.at)
    return { added: await insertNew(c, table, rows.filter((r) => !theirs.has(String(r.id)))), renamed: [] }
  }
  const moves = clashes.map((x) => ({ old: x.ours, new: x.theirs }))
  let added = 0
  await rename(c.tx, moves, async () => (added = await insertNew(c, table, rows)))
  await retireIds(c.tx, moves, c.side.at)
  return { added, renamed: moves.map((m) => m.new) }
}

/**
 * Versions are a union by id, under the document that holds their key here. Returns the
 * documents that gained one or were renamed, for `settleChains` once forgets have run.
 */
export async function applyVersions(
  c: Ctx,
  rows: readonly Record<string, unknown>[],
  renamed: readonly string[],
): Promise<{ added: number; touched: string[] }> {
  const retired = await replacements(c.tx, rows.flatMap((r) => [String(r.id), String(r.document_id)]))
  const fresh = rows
    .filter((r) => !retired.has(String(r.id)))
    .map((r, i): Record<string, unknown> => ({ ...r, document_id: retired.get(String(r.document_id)) ?? r.document_id, version: ARRIVING_COUNTER + i }))
  await requireDocuments(c, fresh)
  const added = new Set(await insertRows(c, 'doc_versions', fresh))
  return { added: added.size, touched: [...renamed, ...fresh.filter((r) => added.has(String(r.id))).map((r) => String(r.document_id))] }
}

/**
 * Makes each touched document one chain again (`mergeChains`): numbered by time, a version
 * with the content of the one before it folded into that one, its id retired. It runs after
 * every forget has, so a version written after a forget never folds into one the forget erases.
 */
export async function settleChains(c: Ctx, touched: readonly string[]): Promise<void> {
  await retireIds(c.tx, await mergeChains(c.tx, touched), c.side.at)
}

/**
 * Refuses versions of a document this sync's tenant does not hold here. A sync sends each
 * version's document with it, so a document the other side forgot comes back with it.
 */
async function requireDocuments(c: Ctx, rows: readonly Record<string, unknown>[]): Promise<void> {
  const ids = [...new Set(rows.map((r) => String(r.document_id)))]
  if (ids.length === 0) return
  const { rows: held } = await c.tx.query<{ id: string }>(`SELECT id FROM documents WHERE id = ANY($1::text[]) AND tenant_id = $2`, [
    ids,
    c.tenantId,
  ])
  const found = new Set(held.map((h) => h.id))
  const missing = ids.find((id) => !found.has(id))
  if (missing !== undefined) {
    throw new MemoryError('INVALID_INPUT', `A sync row of "doc_versions" names a document this sync's tenant (${c.tenantId}) does not hold`, {
      details: { table: 'doc_versions', documentId: missing },
    })
  }
}

/**
 * A user's context name has one context, as a key has one document. Its description and
 * priority follow the later change (`updated_at`).
 */
export async function applyContexts(c: Ctx, rows: readonly Record<string, unknown>[]): Promise<number> {
  const { added } = await applyOnePerName(c, 'memory_contexts', rows, await sameNameOtherId(c.tx, rows), renameContexts)
  const changed = await takeContextChanges(c.tx, rows)
  for (const id of changed) c.received.push({ tbl: 'memory_contexts', id })
  return added + changed.length
}

/** Entity-node revisions merge by what they hold (`mergeNodeRevisions`), numbered by time on every side. */
export async function applyNodes(c: Ctx, rows: readonly Record<string, unknown>[]): Promise<number> {
  const { added, nodeIds } = await mergeNodeRevisions(c.tx, rows)
  for (const id of nodeIds) c.received.push({ tbl: 'nodes', id })
  return added
}
