import type { Queryable } from '../kernel/db.ts'

/**
 * Ids a sync retired (`sync_aliases`): when two memories held one document, version or memory
 * context under two ids, one id stays, and rows or reads that name the other follow it.
 */

/** A retired id and the id that took its place. */
export interface Alias {
  old: string
  new: string
}

/** SQL for the id that took the place of `param` (a query parameter), or `param` itself. */
export const currentId = (param: string) => `coalesce((SELECT a.new_id FROM sync_aliases a WHERE a.old_id = ${param}), ${param})`

/** Notes each retired id; ids that led to a retired one lead on to its replacement. */
export async function retireIds(tx: Queryable, aliases: readonly Alias[], at: Date): Promise<void> {
  if (aliases.length === 0) return
  const json = JSON.stringify(aliases)
  await tx.query(
    `UPDATE sync_aliases a SET new_id = x.new FROM jsonb_to_recordset($1::jsonb) AS x(old text, new text) WHERE a.new_id = x.old`,
    [json],
  )
  await tx.query(
    `INSERT INTO sync_aliases (old_id, new_id, created_at)
     SELECT x.old, x.new, $2 FROM jsonb_to_recordset($1::jsonb) AS x(old text, new text)
     ON CONFLICT (old_id) DO UPDATE SET new_id = excluded.new_id`,
    [json, at],
  )
}

/** The ids among these that were retired here, each with the id that took its place. */
export async function replacements(tx: Queryable, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map()
  const { rows } = await tx.query<{ old_id: string; new_id: string }>(
    `SELECT old_id, new_id FROM sync_aliases WHERE old_id = ANY($1::text[])`,
    [[...new Set(ids)]],
  )
  return new Map(rows.map((r) => [r.old_id, r.new_id]))
}
