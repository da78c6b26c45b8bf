import type { Queryable } from '../kernel/db.ts'
import { type EventKind, eventText } from './events.ts'
import { newId } from '../kernel/ids.ts'
import type { JsonObject } from '../kernel/json.ts'
import { chunkText, estimateTokens } from '../kernel/tokens.ts'

const BATCH = 500

/**
 * Recreates the chunks of every event that has none — after an import, or when derived data
 * was dropped — or only of `eventIds` among them. Events sealed at rest (src/core/privacy/vault.ts)
 * keep none. Cut exactly as the write path cuts them, so
 * a rebuilt memory searches the same. Runs inside the caller's transaction; returns the
 * number of chunks written.
 */
export async function rebuildMissingChunks(tx: Queryable, eventIds?: readonly string[]): Promise<number> {
  let written = 0
  let after = ''
  for (;;) {
    const { rows } = await tx.query<{ id: string; kind: EventKind; content: JsonObject }>(
      `SELECT e.id, e.kind, e.content
         FROM events e
        WHERE e.id > $1 AND ($2::text[] IS NULL OR e.id = ANY($2))
          AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.source_id = e.id)
          AND NOT e.meta ? 'sealed'
        ORDER BY e.id
        LIMIT ${BATCH}`,
      [after, eventIds ?? null],
    )
    if (rows.length === 0) break
    const ids: string[] = []
    const sources: string[] = []
    const ords: number[] = []
    const texts: string[] = []
    const tokens: number[] = []
    for (const row of rows) {
      after = row.id
      chunkText(eventText(row.kind, row.content)).forEach((text, ord) => {
        ids.push(newId('chunk'))
        sources.push(row.id)
        ords.push(ord)
        texts.push(text)
        tokens.push(estimateTokens(text))
      })
    }
    if (ids.length > 0) {
      await tx.query(
        `INSERT INTO chunks (id, source_id, ord, text, token_est, tenant_id, user_id, agent_id, conversation_id,
                             run_id, kind, channel, sensitivity, tags, created_at)
         SELECT c.id, e.id, c.ord, c.text, c.tokens, e.tenant_id, e.user_id, e.agent_id, e.conversation_id,
                e.run_id, e.kind, e.channel, e.sensitivity, e.tags, e.created_at
           FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[]) AS c(id, source_id, ord, text, tokens)
           JOIN events e ON e.id = c.source_id`,
        [ids, sources, ords, texts, tokens],
      )
      written += ids.length
    }
  }
  return written
}
