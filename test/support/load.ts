// Many agents writing one memory at once, and the check that nothing was lost or doubled. Used
// by test/unit/many-writers.test.ts (a short run) and bench/many-writers.ts (the full one).
import type { Engine } from '../../src/core/engine.ts'

/** The calls an agent makes, in this order, round after round. */
export const LOAD_CALLS = ['recordTurn', 'remember', 'kv.put', 'search'] as const
type LoadCall = (typeof LOAD_CALLS)[number]

/** What agents had acknowledged, and how long each call took. */
export interface LoadReport {
  /** Milliseconds per call, by call. */
  ms: Record<LoadCall, number[]>
  /** Acknowledged turns: conversation, turn number, the user event's id. */
  turns: [string, number, string][]
  /** Acknowledged memories' ids. */
  memories: string[]
  /** Acknowledged kv writes: key, revision. */
  kv: [string, number][]
  errors: string[]
}

export function emptyReport(): LoadReport {
  return { ms: { recordTurn: [], remember: [], 'kv.put': [], search: [] }, turns: [], memories: [], kv: [], errors: [] }
}

/** Adds `more` to `into`. */
export function mergeReports(into: LoadReport, more: LoadReport): LoadReport {
  for (const call of LOAD_CALLS) into.ms[call].push(...more.ms[call])
  into.turns.push(...more.turns)
  into.memories.push(...more.memories)
  into.kv.push(...more.kv)
  into.errors.push(...more.errors)
  return into
}

type Memory = Pick<Engine, 'recordTurn' | 'remember' | 'kv' | 'search'>

/**
 * `agents` agents of process `p`, each calling LOAD_CALLS in turn until `deadline`
 * (`performance.now()`). Agent `a` of every process writes conversation `c<a>` and kv key
 * `k<a>`, so the processes write the same turns and keys at once.
 */
export async function runAgents(memory: Memory, p: number, agents: number, deadline: number): Promise<LoadReport> {
  const report = emptyReport()
  const timed = async <T>(call: LoadCall, fn: () => Promise<T>): Promise<T | undefined> => {
    const began = performance.now()
    try {
      const result = await fn()
      report.ms[call].push(performance.now() - began)
      return result
    } catch (error) {
      report.errors.push(`${call}: ${(error as Error).message}`)
      return undefined
    }
  }
  const agent = async (a: number) => {
    const scope = { userId: 'ann', agentId: `p${p}-a${a}` }
    for (let i = 0; performance.now() < deadline; i++) {
      const turn = await timed('recordTurn', () =>
        memory.recordTurn({ conversationId: `c${a}`, scope, user: `Process ${p} agent ${a} asks about topic ${i % 7}`, agent: 'Noted.' }),
      )
      if (turn) report.turns.push([`c${a}`, turn.turnIndex, turn.userEventId])
      const saved = await timed('remember', () =>
        memory.remember({ content: `Fact ${p}-${a}-${i}: Ann keeps item ${p * 100_000 + a * 1_000 + i}`, userId: 'ann', category: 'fact' }),
      )
      if (saved) report.memories.push(saved.id)
      const put = await timed('kv.put', () => memory.kv.put('user:ann', 'counters', `k${a}`, { p, a, i }))
      if (put) report.kv.push([`k${a}`, put.rev])
      await timed('search', () => memory.search(`topic ${i % 7}`, { scope: { userId: 'ann' } }))
    }
  }
  await Promise.all(Array.from({ length: agents }, (_, a) => agent(a)))
  return report
}

type Query = <T>(sql: string) => Promise<T[]>

/**
 * What the database holds against what was acknowledged: a list of each broken rule (empty
 * when all hold). Turns numbered 0, 1, 2… in every conversation, two events each, every
 * acknowledged turn there once; every acknowledged memory stored; every kv key's revisions
 * 1, 2, 3… dated in order, as many as were acknowledged; the keyword statistics, with the
 * chunks still waiting to be counted, as the chunks hold them.
 */
export async function checkLoad(query: Query, report: LoadReport): Promise<string[]> {
  const broken: string[] = []
  const turns = await query<{ conversation_id: string; turn_index: number; n: number; user_id: string }>(
    `SELECT conversation_id, turn_index, count(*)::int AS n, min(id) FILTER (WHERE actor_type = 'human') AS user_id
     FROM events WHERE turn_index IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2`,
  )
  for (const [conversation, rows] of groupBy(turns, (t) => t.conversation_id)) {
    if (rows.some((r, i) => r.turn_index !== i)) broken.push(`${conversation}: turn numbers are not 0, 1, 2…`)
    if (rows.some((r) => r.n !== 2)) broken.push(`${conversation}: a turn without exactly two events`)
  }
  const stored = new Set(turns.map((t) => `${t.conversation_id}/${t.turn_index}/${t.user_id}`))
  const acked = report.turns.map(([c, i, id]) => `${c}/${i}/${id}`)
  if (new Set(acked).size !== acked.length) broken.push('a turn was acknowledged twice')
  if (acked.some((t) => !stored.has(t))) broken.push('an acknowledged turn is not stored as acknowledged')
  if (stored.size !== acked.length) broken.push(`${stored.size} turns stored, ${acked.length} acknowledged`)
  const memories = new Set((await query<{ id: string }>('SELECT id FROM memories')).map((m) => m.id))
  if (report.memories.some((id) => !memories.has(id))) broken.push('an acknowledged memory is not stored')
  const kv = await query<{ key: string; rev: number; in_order: boolean }>(
    `SELECT key, rev, created_at >= coalesce(lag(created_at) OVER (PARTITION BY key ORDER BY rev), created_at) AS in_order
     FROM kv WHERE namespace = 'counters' ORDER BY key, rev`,
  )
  for (const [key, rows] of groupBy(kv, (r) => r.key)) {
    if (rows.some((r, i) => r.rev !== i + 1)) broken.push(`${key}: revisions are not 1, 2, 3…`)
    if (rows.some((r) => !r.in_order)) broken.push(`${key}: a revision is dated before the one it follows`)
    const ackedRevs = report.kv.filter(([k]) => k === key).length
    if (rows.length !== ackedRevs) broken.push(`${key}: ${rows.length} revisions stored, ${ackedRevs} acknowledged`)
  }
  const keywords = await query<{ off: number }>(
    `WITH counted AS (
       SELECT c.tenant_id, u.lexeme, c.sensitivity, count(*) AS df FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) u GROUP BY 1, 2, 3
     ), waiting AS (
       SELECT c.tenant_id, u.lexeme, c.sensitivity, count(*) AS df FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) u
       WHERE c.stats_seq > (SELECT upto FROM keyword_counted) GROUP BY 1, 2, 3
     ), kept AS (
       SELECT tenant_id, lexeme, sensitivity, sum(df) AS df FROM (SELECT tenant_id, lexeme, sensitivity, df FROM term_stats UNION ALL SELECT * FROM waiting) x
       GROUP BY 1, 2, 3
     )
     SELECT (SELECT count(*) FROM (SELECT * FROM kept EXCEPT SELECT * FROM counted) a)::int
          + (SELECT count(*) FROM (SELECT * FROM counted EXCEPT SELECT * FROM kept) b)::int AS off`,
  )
  if ((keywords[0]?.off ?? 0) > 0) broken.push(`${keywords[0]?.off} keyword counts differ from the chunks'`)
  return broken
}

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const row of rows) {
    const group = groups.get(key(row))
    if (group) group.push(row)
    else groups.set(key(row), [row])
  }
  return groups
}
