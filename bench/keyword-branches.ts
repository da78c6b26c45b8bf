/**
 * The keyword list's candidate branches over the bench's memory of SIZE events (default
 * 100,000), each found both ways: as the planner chooses for `ORDER BY created_at DESC LIMIT`
 * (for a common term, a walk of the tenant's chunks by time until enough match) and reading
 * every chunk the branch matches, then sorting (`readsEveryMatch`, src/core/retrieval/search.ts). For
 * each branch of the bench's 50 queries: the chunks it matches, its bound (`most`), which way
 * search takes it, and the median of ROUNDS timings of each way (default 15, alternating, after
 * 3 untimed). For the branch of pairs of common terms, also one OR of every pair against one
 * tsquery per term (`keywordBranches`), both reading every match. Checks that both ways keep
 * the same chunks.
 *
 *   CACHE_MB=448 node bench/run.mjs bench/keyword-branches.ts
 *   SIZE=10000 node bench/run.mjs bench/keyword-branches.ts
 */
import { BENCH_SCOPE, makeQueries } from './lib/data.ts'
import { buildBenchMemory } from './lib/node-suite.ts'
import { percentile } from './lib/metrics.ts'
import { type KeywordBranch, keywordBranches, MAX_PAIRED_TERMS, newestMatches, readsEveryMatch } from '../src/core/retrieval/search.ts'
import { allowedSensitivities } from '../src/core/privacy/channels.ts'

const SIZE = Number(process.env.SIZE ?? 100_000)
const ROUNDS = Number(process.env.ROUNDS ?? 15)
const CACHE_MB = process.env.CACHE_MB === undefined ? undefined : Number(process.env.CACHE_MB)
const CANDIDATES = 200
const print = (line: string) => process.stdout.write(`${line}\n`)

const data = await buildBenchMemory(SIZE, CACHE_MB, (line) => process.stderr.write(`${line}\n`))
const { pg } = data

const allowed = allowedSensitivities('private')
const scope = `c.tenant_id = 'default' AND c.user_id = '${BENCH_SCOPE.userId}' AND c.agent_id = '${BENCH_SCOPE.agentId}'
  AND c.sensitivity = ANY('{${allowed.join(',')}}'::text[])`
const literal = (query: string) => `'${query.replace(/'/g, "''")}'::tsquery`
const where = (queries: readonly string[]) => `(${queries.map((q) => `c.tsv @@ ${literal(q)}`).join(' OR ')}) AND ${scope}`
// The branch's statement as search writes it, both ways; only the ids come back (in search its
// rows stay inside the statement).
const idsOf = (sql: string) => `SELECT id FROM (${sql}) b`
const planned = (queries: readonly string[]) => idsOf(newestMatches('chunks c', where(queries), String(CANDIDATES), false))
const everyMatch = (queries: readonly string[]) => idsOf(newestMatches('chunks c', where(queries), String(CANDIDATES), true))

/** Median ms of each statement, run alternately; and whether they return the same ids. */
async function compare(statements: readonly string[]): Promise<{ ms: number[]; same: boolean }> {
  const ids = await Promise.all(statements.map(async (sql) => JSON.stringify((await pg.query(sql)).rows)))
  const times = statements.map(() => [] as number[])
  for (let round = 0; round < ROUNDS + 3; round++) {
    for (const [i, sql] of statements.entries()) {
      const t0 = performance.now()
      await pg.query(sql)
      if (round >= 3) times[i]!.push(performance.now() - t0)
    }
  }
  return { ms: times.map((t) => percentile(t.sort((a, b) => a - b), 50)), same: ids.every((x) => x === ids[0]) }
}

const { rows: corpus } = await pg.query<{ n: number }>(`SELECT coalesce(sum(chunks), 0)::float8 AS n FROM chunk_stats WHERE tenant_id = 'default'`)
const tenantChunks = Number(corpus[0]?.n ?? 0)
print(`${SIZE} events, ${tenantChunks} chunks; a branch reads every match up to ${Math.round(Math.max(CANDIDATES, Math.sqrt(CANDIDATES * tenantChunks)))}`)
print('| query | branch | matches | most | search takes | planner ms | every match ms | pairs as one OR ms |')
print('| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |')
const totals = { planner: 0, everyMatch: 0, taken: 0, best: 0, oneOr: 0, perTerm: 0 }
let differ = 0
for (const query of makeQueries(50, 1234)) {
  const { rows } = await pg.query<{ lexeme: string; df: number; rows: number }>(
    `SELECT q.lexeme, coalesce(sum(s.df) FILTER (WHERE s.sensitivity = ANY($2::text[])), 0)::float8 AS df, coalesce(sum(s.df), 0)::float8 AS rows
     FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $1))) q
     JOIN term_stats s ON s.tenant_id = 'default' AND s.lexeme = q.lexeme
     GROUP BY q.lexeme HAVING sum(s.df) > 0 ORDER BY 2, 1`,
    [query, allowed],
  )
  const terms = rows.map((r) => ({ lexeme: r.lexeme, df: Number(r.df), rows: Number(r.rows) }))
  const { always, fallback } = keywordBranches(terms, CANDIDATES)
  const branches: [string, KeywordBranch][] = [...always.map((b) => ['always', b] as [string, KeywordBranch]), ...(fallback ? [['fallback', fallback] as [string, KeywordBranch]] : [])]
  for (const [kind, branch] of branches) {
    const matches = Number((await pg.query<{ n: number }>(`SELECT count(*)::float8 AS n FROM chunks c WHERE ${where(branch.queries)}`)).rows[0]?.n)
    const reads = readsEveryMatch(branch.most, CANDIDATES, tenantChunks)
    const { ms, same } = await compare([planned(branch.queries), everyMatch(branch.queries)])
    if (!same) differ++
    let pairs = ''
    if (branch.queries.length > 1) {
      const common = terms.filter((t) => t.df > CANDIDATES).slice(0, MAX_PAIRED_TERMS)
      const oneOr = common.flatMap((a, i) => common.slice(i + 1).map((b) => `('${a.lexeme}' & '${b.lexeme}')`)).join(' | ')
      const both = await compare([everyMatch([oneOr]), everyMatch(branch.queries)])
      if (!both.same) differ++
      totals.oneOr += both.ms[0]!
      totals.perTerm += both.ms[1]!
      pairs = `${both.ms[0]!.toFixed(2)} (per term ${both.ms[1]!.toFixed(2)})`
    }
    totals.planner += ms[0]!
    totals.everyMatch += ms[1]!
    totals.taken += reads ? ms[1]! : ms[0]!
    totals.best += Math.min(ms[0]!, ms[1]!)
    const label = branch.queries.join(' OR ')
    const shown = (label.length > 50 ? `${label.slice(0, 47)}…` : label).replace(/\|/g, '\\|')
    print(`| ${query} | ${kind}: ${shown} | ${matches} | ${Math.round(branch.most)} | ${reads ? 'every match' : 'planner'} | ${ms[0]!.toFixed(2)} | ${ms[1]!.toFixed(2)} | ${pairs} |`)
  }
}
print('')
print(`Sum of the branches' medians: planner ${totals.planner.toFixed(1)} ms, every match ${totals.everyMatch.toFixed(1)} ms, as search takes them ${totals.taken.toFixed(1)} ms, the faster of the two each time ${totals.best.toFixed(1)} ms.`)
print(`Pairs of common terms, reading every match: one OR ${totals.oneOr.toFixed(1)} ms, one tsquery per term ${totals.perTerm.toFixed(1)} ms.`)
print(differ === 0 ? 'Both ways kept the same chunks for every branch.' : `${differ} branches kept different chunks.`)
process.exit(differ === 0 ? 0 : 1)
