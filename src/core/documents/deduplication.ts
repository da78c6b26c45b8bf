import type { EngineContext } from '../kernel/engine-context.ts'
import { identifier } from '../kernel/scope.ts'
import { parseInput, z } from '../kernel/validate.ts'

export interface DeduplicateResult {
  /** Distinct contents that were stored more than once. */
  contents: number
  /** Versions emptied: each now reads its content from the version named in `contentOf`. */
  versions: number
  /** Bytes of stored content no longer kept twice. */
  bytesFreed: number
}

/** Empties versions whose content another version of the tenant already stores (`documents.deduplicate`). */
export async function deduplicateContents(ctx: EngineContext, options: { tenantId?: string }): Promise<DeduplicateResult> {
  const o = parseInput(z.object({ tenantId: identifier.optional() }).strict(), options, 'deduplicate options')
  return ctx.db.transaction(async (tx) => {
    await tx.query(`SET LOCAL engram.deduplicating = 'on'`)
    const { rows } = await tx.query<DeduplicateResult>(
      `WITH repeated AS (
         SELECT d.tenant_id, v.content_hash
         FROM doc_versions v JOIN documents d ON d.id = v.document_id
         WHERE v.content IS NOT NULL AND ($1::text IS NULL OR d.tenant_id = $1)
         GROUP BY 1, 2 HAVING count(*) > 1
       ), holders AS (
         SELECT v.id, first_value(v.id) OVER (PARTITION BY d.tenant_id, v.content_hash ORDER BY v.created_at, v.id) AS keeper
         FROM repeated r
         JOIN documents d ON d.tenant_id = r.tenant_id
         JOIN doc_versions v ON v.document_id = d.id AND v.content_hash = r.content_hash
         WHERE v.content IS NOT NULL
       ), emptied AS (
         UPDATE doc_versions t SET content = NULL, content_of = h.keeper
         FROM holders h JOIN doc_versions k ON k.id = h.keeper
         WHERE t.id = h.id AND h.id <> h.keeper AND t.content = k.content
         RETURNING h.keeper, octet_length(k.content) AS stored
       )
       SELECT count(DISTINCT keeper)::int AS contents, count(*)::int AS versions,
              coalesce(sum(stored), 0)::float8 AS "bytesFreed"
       FROM emptied`,
      [o.tenantId ?? null],
    )
    return rows[0] ?? { contents: 0, versions: 0, bytesFreed: 0 }
  })
}
