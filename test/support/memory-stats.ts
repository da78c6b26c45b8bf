import { expect } from 'vitest'
import type { Queryable } from '../../src/core/kernel/db.ts'

const GROUP = 'tenant_id, user_id, agent_id, run_id, project_id, scope, category, sensitivity, status'

/** Checks that the memories' kept counts (`memory_stats`) equal a recount; returns how many groups there are. */
export async function expectKeptMemoryCounts(db: Queryable): Promise<number> {
  const kept = await db.query(`SELECT ${GROUP}, memories::int, lexemes::int FROM memory_stats ORDER BY ${GROUP}`)
  const recount = await db.query(
    `SELECT ${GROUP}, count(*)::int AS memories, sum(greatest(length(tsv), 1))::int AS lexemes
     FROM memories GROUP BY ${GROUP} ORDER BY ${GROUP}`,
  )
  expect(kept.rows).toEqual(recount.rows)
  return kept.rows.length
}
