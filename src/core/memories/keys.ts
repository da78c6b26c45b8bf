import type { Queryable } from '../kernel/db.ts'
import { writeEdges } from '../graph/entities.ts'
import { type HistoryEntry, logHistory } from './history.ts'

/** A memory that lost its key to a later one. */
interface Loser {
  id: string
  winner: string
  content: string
  key: string
  tenant_id: string
  user_id: string | null
  agent_id: string | null
  run_id: string | null
}

/**
 * One active memory per key: when a sync brings two saved under one key by the same user,
 * agent and run on two devices, the later saved (then the greater id) supersedes the others,
 * as saving again under the key does. Looks at the keys of `ids`; returns the superseded.
 */
export async function settleKeys(tx: Queryable, ids: readonly string[], at: Date): Promise<string[]> {
  if (ids.length === 0) return []
  const { rows } = await tx.query<Loser>(
    `WITH touched AS (
       SELECT DISTINCT tenant_id, scope, user_id, agent_id, run_id, project_id, key FROM memories
        WHERE id = ANY($1::text[]) AND key IS NOT NULL AND status = 'active'
     ), ranked AS (
       SELECT m.id, m.content, m.key, m.tenant_id, m.user_id, m.agent_id, m.run_id,
              first_value(m.id) OVER (PARTITION BY m.tenant_id, m.scope, m.user_id, m.agent_id, m.run_id, m.project_id, m.key
                                      ORDER BY m.created_at DESC, m.id DESC) AS winner
         FROM memories m JOIN touched t
           ON m.tenant_id = t.tenant_id AND m.scope = t.scope AND m.key = t.key
          AND m.user_id IS NOT DISTINCT FROM t.user_id AND m.agent_id IS NOT DISTINCT FROM t.agent_id
          AND m.run_id IS NOT DISTINCT FROM t.run_id AND m.project_id IS NOT DISTINCT FROM t.project_id
        WHERE m.status = 'active'
     )
     SELECT * FROM ranked WHERE id <> winner ORDER BY id`,
    [[...ids]],
  )
  if (rows.length === 0) return []
  await tx.query(
    `UPDATE memories m SET status = 'superseded', superseded_by = x.winner, updated_at = $2
       FROM jsonb_to_recordset($1::jsonb) AS x(id text, winner text) WHERE m.id = x.id`,
    [JSON.stringify(rows.map((r) => ({ id: r.id, winner: r.winner }))), at],
  )
  const who = (r: Loser) => ({ tenantId: r.tenant_id, userId: r.user_id, agentId: r.agent_id, runId: r.run_id })
  const history: HistoryEntry[] = rows.map((r) => ({
    memoryId: r.id,
    event: 'UPDATE',
    oldValue: r.content,
    newValue: r.content,
    changes: { status: ['active', 'superseded'], supersededBy: r.winner },
    ...who(r),
  }))
  await logHistory(tx, history, at)
  await writeEdges(
    tx,
    rows.map((r) => ({
      src: r.winner,
      rel: 'SUPERSEDES',
      dst: r.id,
      payload: { key: r.key },
      tenantId: r.tenant_id,
      ...(r.run_id === null ? {} : { runId: r.run_id }),
    })),
    at,
  )
  return rows.map((r) => r.id)
}
