/**
 * Cypher in `npm run bench`: the seed's three graph questions as Cypher (`memory.cypher`,
 * AGE in its own thread) beside the same questions in SQL over the engine's tables (or its
 * own graph read, `graph.walk`), on the bench memory; and what a query after a burst of 100
 * turns pays to catch its graph up.
 */
import { openGraphDatabase } from '../../src/node/graph-database.ts'
import { createEngine, type Engine } from '../../src/core/engine.ts'
import { BENCH_SCOPE, makeTurns, sessionShape } from './data.ts'
import { latency } from './metrics.ts'
import type { Dataset, SuiteOptions, SuiteOutput } from './node-suite.ts'

export const CYPHER_METRICS = [
  'cypher_first_query_ms',
  'cypher_documents_ms',
  'sql_documents_ms',
  'cypher_two_hops_ms',
  'walk_two_hops_ms',
  'cypher_readers_ms',
  'sql_readers_ms',
  'cypher_catch_up_ms',
  'cypher_steady_ms',
]

/** (1) From a question to the documents its turn touched, their versions, and the other conversations that touched them. */
const DOCUMENTS_CYPHER = `
  MATCH (q:Message {id: $id})-[:MESSAGE]->(:Message)-[]->(:Version)-[:VERSION_OF]->(d:Document)
  OPTIONAL MATCH (v:Version)-[:VERSION_OF]->(d)
  OPTIONAL MATCH (m:Message)-[]->(:Version)-[:VERSION_OF]->(d)
  WHERE m.conversationId <> q.conversationId
  RETURN d.key AS document, count(DISTINCT v) AS versions, collect(DISTINCT m.conversationId) AS conversations`
const DOCUMENTS_SQL = `
  WITH q AS (SELECT id, conversation_id FROM events WHERE id = $1),
       docs AS (SELECT DISTINCT t.document_id FROM q
                JOIN edges m ON m.src = q.id AND m.tombstoned_at IS NULL
                JOIN relations r ON r.id = m.rel AND r.name = 'MESSAGE'
                JOIN edges t ON t.src = m.dst AND t.document_id IS NOT NULL AND t.tombstoned_at IS NULL)
  SELECT d.canonical_key AS document,
         (SELECT count(*) FROM doc_versions v WHERE v.document_id = d.id) AS versions,
         (SELECT array_agg(DISTINCT ev.conversation_id) FROM edges e JOIN events ev ON ev.id = e.src
          WHERE e.document_id = d.id AND e.tombstoned_at IS NULL AND ev.conversation_id <> (SELECT conversation_id FROM q)) AS conversations
  FROM docs JOIN documents d ON d.id = docs.document_id`

/** (2) The subgraph within two hops of a match. */
const TWO_HOPS_CYPHER = 'MATCH (n {id: $id})-[*1..2]-(m) RETURN DISTINCT m.id AS id'

/** (3) The conversations that read a document this conversation edits. */
const READERS_CYPHER = `
  MATCH (me:Message {conversationId: $conversation})-[w]->(:Version)-[:VERSION_OF]->(d:Document)
  WHERE w.props.effect = 'write'
  MATCH (other:Message)-[r]->(:Version)-[:VERSION_OF]->(d)
  WHERE other.conversationId <> $conversation AND r.props.effect = 'read'
  RETURN DISTINCT other.conversationId AS conversation`
const READERS_SQL = `
  SELECT DISTINCT other.conversation_id AS conversation
  FROM events me
  JOIN edges w ON w.src = me.id AND w.props ->> 'effect' = 'write' AND w.tombstoned_at IS NULL
  JOIN edges r ON r.document_id = w.document_id AND r.props ->> 'effect' = 'read' AND r.tombstoned_at IS NULL
  JOIN events other ON other.id = r.src
  WHERE me.conversation_id = $1 AND me.tenant_id = 'default' AND other.conversation_id <> $1`

async function timed(samples: number[], work: () => Promise<unknown>): Promise<void> {
  const t0 = performance.now()
  await work()
  samples.push(performance.now() - t0)
}

export async function cypherSuite(data: Dataset, options: SuiteOptions, out: SuiteOutput): Promise<void> {
  // An engine of its own over the bench's database, with a graph database to draw in.
  const engine: Engine = await createEngine({
    db: data.db,
    indexing: 'manual',
    workspace: { mode: 'local', root: '/bench/repo' },
    graphDatabase: () => openGraphDatabase(),
  })
  try {
    const { rows: questions } = await data.pg.query<{ id: string; reply: string; conversation_id: string }>(
      `SELECT u.id, a.id AS reply, u.conversation_id FROM events u
       JOIN events a ON a.conversation_id = u.conversation_id AND a.turn_index = u.turn_index AND a.actor_type = 'agent' AND a.kind = 'message'
       WHERE u.kind = 'message' AND u.actor_type = 'human' ORDER BY u.seq`,
    )
    if (questions.length === 0) throw new Error('cypher suite: no questions in the bench memory')
    const pick = (i: number) => questions[(i * 7919) % questions.length]!
    const first: number[] = []
    await timed(first, () => engine.cypher(DOCUMENTS_CYPHER, { id: pick(0).id }))
    out.metrics.cypher_first_query_ms = latency(first, "the first query: AGE's thread started, the graph drawn whole, question (1) run")

    const t = { cd: [] as number[], sd: [] as number[], ch: [] as number[], wh: [] as number[], cr: [] as number[], sr: [] as number[] }
    const ops = Math.max(1, Math.floor(options.ops / 4))
    for (let i = 0; i < Math.max(1, Math.floor(options.warmup / 4)) + ops; i++) {
      const q = pick(i + 1)
      const keep = i >= Math.floor(options.warmup / 4)
      const samples = keep ? t : { cd: [], sd: [], ch: [], wh: [], cr: [], sr: [] }
      await timed(samples.cd, () => engine.cypher(DOCUMENTS_CYPHER, { id: q.id }))
      await timed(samples.sd, () => data.db.query(DOCUMENTS_SQL, [q.id]))
      await timed(samples.ch, () => engine.cypher(TWO_HOPS_CYPHER, { id: q.reply }, { limit: 10_000 }))
      await timed(samples.wh, () => engine.graph.walk(q.reply, { depth: 2, limit: 10_000 }))
      await timed(samples.cr, () => engine.cypher(READERS_CYPHER, { conversation: q.conversation_id }))
      await timed(samples.sr, () => data.db.query(READERS_SQL, [q.conversation_id]))
    }
    out.metrics.cypher_documents_ms = latency(t.cd, 'question (1) as one Cypher query')
    out.metrics.sql_documents_ms = latency(t.sd, 'question (1) as one SQL query over the same tables')
    out.metrics.cypher_two_hops_ms = latency(t.ch, 'question (2), from a reply: MATCH (n {id})-[*1..2]-(m)')
    out.metrics.walk_two_hops_ms = latency(t.wh, 'question (2) by graph.walk(id, { depth: 2 })')
    out.metrics.cypher_readers_ms = latency(t.cr, 'question (3) as one Cypher query')
    out.metrics.sql_readers_ms = latency(t.sr, 'question (3) as one SQL query over the same tables')

    // A burst of 100 turns, then the cheapest question: its time is mostly the catch-up.
    const shape = sessionShape(options.size)
    const steady: number[] = []
    const caughtUp: number[] = []
    const count = 'MATCH (d:Document) RETURN count(d) AS n'
    for (let burst = 0; burst < Math.max(1, Math.min(5, options.bulkRuns + 2)); burst++) {
      for (const turn of makeTurns(shape, 4242 + burst, 0, 100)) {
        await engine.recordTurn({ ...turn, conversationId: `burst-${burst}-${turn.conversationId}`, scope: BENCH_SCOPE })
      }
      await timed(caughtUp, () => engine.cypher(count))
      await timed(steady, () => engine.cypher(count))
    }
    out.metrics.cypher_catch_up_ms = latency(caughtUp, 'the first query after 100 turns (400 events): catch-up and a count')
    out.metrics.cypher_steady_ms = latency(steady, 'the same query again, nothing to catch up')
  } finally {
    await engine.stopIndexing()
  }
}
