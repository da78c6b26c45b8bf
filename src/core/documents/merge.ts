import type { Queryable } from '../kernel/db.ts'
import { PARKED_COUNTER } from '../kernel/limits.ts'
import type { Alias } from '../kernel/aliases.ts'

/**
 * Merging what two memories know of the same documents, for a sync (src/core/sync/apply.ts).
 * A key has one document; a document's versions form one chain in time order, and no version
 * repeats the content of the one before it.
 */

/** The documents this memory holds under another id than these rows give the same key. */
export async function sameKeyOtherId(tx: Queryable, rows: readonly Record<string, unknown>[]): Promise<{ theirs: string; ours: string }[]> {
  if (rows.length === 0) return []
  const { rows: found } = await tx.query<{ theirs: string; ours: string }>(
    `SELECT x.id AS theirs, d.id AS ours FROM jsonb_populate_recordset(NULL::documents, $1::jsonb) x
       JOIN documents d ON d.tenant_id = x.tenant_id AND d.key_kind = x.key_kind
                       AND d.canonical_key = x.canonical_key AND d.id <> x.id`,
    [JSON.stringify(rows)],
  )
  return found
}

/**
 * Gives this memory's documents the other side's ids: frees their keys, lets `insert` write
 * the other side's rows, then moves the versions and edges over and removes the old rows.
 */
export async function renameDocuments(tx: Queryable, moves: readonly Alias[], insert: () => Promise<unknown>): Promise<void> {
  const olds = moves.map((m) => m.old)
  if (olds.length > 0) {
    // The key is unique per tenant; the old row holds it under its id until it goes.
    await tx.query(`UPDATE documents SET canonical_key = id || ' ' || canonical_key WHERE id = ANY($1::text[])`, [olds])
  }
  await insert()
  if (olds.length === 0) return
  const json = JSON.stringify(moves)
  const pairs = `jsonb_to_recordset($1::jsonb) AS p(old text, new text)`
  await tx.query(`UPDATE doc_versions v SET document_id = p.new FROM ${pairs} WHERE v.document_id = p.old`, [json])
  await tx.query(`UPDATE edges e SET dst = p.new FROM ${pairs} WHERE e.dst = p.old`, [json])
  await tx.query(`UPDATE edges e SET document_id = p.new FROM ${pairs} WHERE e.document_id = p.old`, [json])
  await tx.query(`DELETE FROM documents WHERE id = ANY($1::text[])`, [olds])
}

/**
 * Makes each document's versions one chain again: a version with the content of the one just
 * before it (by time, then id) folds into that one, which takes its edges (and its content,
 * when it held none); then the versions are numbered from 1 in that order. Returns the folded.
 */
export async function mergeChains(tx: Queryable, documentIds: readonly string[]): Promise<Alias[]> {
  if (documentIds.length === 0) return []
  const ids = [...new Set(documentIds)]
  const { rows: folds } = await tx.query<Alias>(
    `WITH ordered AS (
       SELECT id, document_id, created_at,
              CASE WHEN content_hash IS DISTINCT FROM lag(content_hash) OVER w THEN 1 ELSE 0 END AS starts
         FROM doc_versions WHERE document_id = ANY($1::text[])
       WINDOW w AS (PARTITION BY document_id ORDER BY created_at, id)
     ), runs AS (
       SELECT id, document_id, created_at, sum(starts) OVER (PARTITION BY document_id ORDER BY created_at, id) AS run FROM ordered
     ), heads AS (
       SELECT id, first_value(id) OVER (PARTITION BY document_id, run ORDER BY created_at, id) AS head FROM runs
     )
     SELECT id AS old, head AS new FROM heads WHERE id <> head`,
    [ids],
  )
  if (folds.length > 0) await fold(tx, folds)
  await numberVersions(tx, ids)
  return folds
}

/** Numbers each document's versions from 1 by time, then id. */
export async function numberVersions(tx: Queryable, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  await tx.query(
    `WITH n AS (
       SELECT id, row_number() OVER (PARTITION BY document_id ORDER BY created_at, id)::int AS version
         FROM doc_versions WHERE document_id = ANY($1::text[])
     )
     UPDATE doc_versions v SET version = ${PARKED_COUNTER} + n.version FROM n WHERE v.id = n.id AND v.version <> n.version`,
    [ids],
  )
  await tx.query(`UPDATE doc_versions SET version = version - ${PARKED_COUNTER} WHERE document_id = ANY($1::text[]) AND version > ${PARKED_COUNTER}`, [ids])
}

/** Folds each `old` version into `new`, the earlier one with the same content. */
async function fold(tx: Queryable, folds: readonly Alias[]): Promise<void> {
  const json = JSON.stringify(folds)
  const pairs = `jsonb_to_recordset($1::jsonb) AS p(old text, new text)`
  const olds = folds.map((f) => f.old)
  // A content seen only by its hash on one side is kept from the other.
  await tx.query(
    `UPDATE doc_versions k SET content = coalesce(f.content, s.content), bytes = coalesce(k.bytes, f.bytes)
       FROM ${pairs} JOIN doc_versions f ON f.id = p.old LEFT JOIN doc_versions s ON s.id = f.content_of
      WHERE k.id = p.new AND k.content IS NULL AND k.content_of IS NULL AND coalesce(f.content, s.content) IS NOT NULL`,
    [json],
  )
  await tx.query(
    `UPDATE doc_versions v SET content_of = coalesce(k.content_of, k.id)
       FROM ${pairs} JOIN doc_versions k ON k.id = p.new WHERE v.content_of = p.old`,
    [json],
  )
  // The version the folded one belonged to is the kept one's document: one VERSION_OF suffices.
  await tx.query(`DELETE FROM edges WHERE src = ANY($1::text[]) AND rel = (SELECT id FROM relations WHERE name = 'VERSION_OF')`, [olds])
  await tx.query(`UPDATE edges e SET src = p.new FROM ${pairs} WHERE e.src = p.old`, [json])
  await tx.query(`UPDATE edges e SET dst = p.new FROM ${pairs} WHERE e.dst = p.old`, [json])
  await tx.query(`DELETE FROM doc_versions WHERE id = ANY($1::text[])`, [olds])
}
