// Evidence recall@k of search on LoCoMo-style conversations (see the data folder's README):
// each conversation goes into a fresh memory through the public API (one event per turn,
// session date as its time, speaker as actor, one conversation per session), then every
// question of categories 1–4 goes through the public `search`.
//
//   node bench/run.mjs bench/quality.ts --data ../shared/locomo-dev --k 5,10,20 --mode hybrid \
//        [--out FILE] [--weights '{"neighbour":0}'] [--ranker search|tsrank|pg_textsearch|memories]
//        [--files 26,30]
//
// `--ranker tsrank` and `--ranker pg_textsearch` rank single turns with ts_rank_cd (OR of the
// query's lexemes) or pg_textsearch BM25 instead of `search`, for comparison. `--ranker
// memories` saves each turn as a curated memory ("Speaker: text") and asks `memories.search`
// (`--mode keyword`: with no embedder); there `--weights` takes only `fusion` ('zscore' or 'rrf').
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import type { Embedder } from '../src/core/kernel/embedder.ts'
import { createEngine } from '../src/core/engine.ts'
import type { SearchMode } from '../src/core/retrieval/search.ts'
import { createTransformersEmbedder } from '../src/embed/transformers-embedder.ts'
import type { MemoryFusion } from '../src/core/memories/memories.ts'
import { arg, conversationFiles, ingestConversation, readConversation, recallAt, rememberConversation } from './lib/locomo.ts'

const data = arg('data', '../shared/locomo-dev') as string
const ks = (arg('k', '5,10,20') as string).split(',').map(Number)
const mode = (arg('mode', 'hybrid') as SearchMode)
const ranker = arg('ranker', 'search') as 'search' | 'tsrank' | 'pg_textsearch' | 'memories'
const weights = arg('weights') === undefined ? undefined : (JSON.parse(arg('weights') as string) as object)
const out = arg('out')
const only = arg('files')?.split(',')
const maxK = Math.max(...ks)

let embedder: Embedder | undefined
if ((ranker === 'search' || ranker === 'memories') && mode !== 'keyword') embedder = await createTransformersEmbedder({ batchSize: 32 })
const extensions =
  ranker === 'pg_textsearch'
    ? { vector, pg_textsearch: (await import('@electric-sql/pglite-pg_textsearch')).pg_textsearch }
    : { vector }

const files = await conversationFiles(data, only)
const totals: Record<string, number> = Object.fromEntries(ks.map((k) => [k, 0]))
const byCategory: Record<string, { questions: number; recall: Record<string, number> }> = {}
let questions = 0
// How often the evidence, and what was returned, is the turn of a person the question names.
const named = { evidence: 0, evidenceAll: 0, hits: 0, hitsAll: 0 }
const started = performance.now()

for (const file of files) {
  const conv = await readConversation(data, file)
  const db = await PGlite.create({ extensions })
  const scoring = weights && ranker !== 'memories' ? { scoring: weights } : {}
  const memory = await createEngine({ db, indexing: 'manual', ...(embedder ? { embedder } : {}), ...scoring })
  const { user, diaOf, speakerOf, questions: asked } =
    ranker === 'memories' ? await rememberConversation(memory, conv) : await ingestConversation(memory, conv, file)
  if (embedder && ranker !== 'memories') await memory.indexNow()
  if (ranker === 'pg_textsearch') {
    await db.exec(`CREATE EXTENSION IF NOT EXISTS pg_textsearch;
      CREATE INDEX chunks_bm25 ON chunks USING bm25(text) WITH (text_config='english')`)
  }

  for (const qa of asked) {
    const evidence = qa.evidence
    let ranked: string[]
    if (ranker === 'search') {
      const t0 = performance.now()
      const hits = await memory.search(qa.question, { limit: maxK, mode, scope: { userId: user } })
      ranked = hits.map((h) => diaOf.get(h.eventId) ?? '')
      if (process.env.TRACE) process.stderr.write(`${(performance.now() - t0).toFixed(0)} ms ${qa.question}\n`)
    } else if (ranker === 'memories') {
      const fusion = (weights as { fusion?: MemoryFusion } | undefined)?.fusion
      const hits = await memory.memories.search(qa.question, { limit: maxK, userId: user, ...(fusion ? { fusion } : {}) })
      ranked = hits.map((h) => diaOf.get(h.id) ?? '')
    } else if (ranker === 'tsrank') {
      const { rows } = await db.query<{ source_id: string }>(
        `WITH q AS (
           SELECT (SELECT string_agg('''' || replace(lexeme, '''', '''''') || '''', ' | ')
                   FROM unnest(to_tsvector('english', $1)))::tsquery AS q
         )
         SELECT source_id FROM chunks, q WHERE tsv @@ q.q ORDER BY ts_rank_cd(tsv, q.q) DESC, id LIMIT $2`,
        [qa.question, maxK],
      )
      ranked = rows.map((r) => diaOf.get(r.source_id) ?? '')
    } else {
      const { rows } = await db.query<{ source_id: string }>(
        `SELECT source_id FROM chunks ORDER BY text <@> to_bm25query($1, 'chunks_bm25'), id LIMIT $2`,
        [qa.question, maxK],
      )
      ranked = rows.map((r) => diaOf.get(r.source_id) ?? '')
    }
    if (questions % 25 === 0) process.stderr.write(`  ${file} q${questions} ${((performance.now() - started) / 1000).toFixed(0)} s\n`)
    const cat = String(qa.category)
    byCategory[cat] ??= { questions: 0, recall: Object.fromEntries(ks.map((k) => [k, 0])) }
    byCategory[cat].questions++
    questions++
    const words = new Set(qa.question.toLowerCase().split(/[^a-z]+/))
    const isNamed = (dia: string) => words.has((speakerOf.get(dia) ?? '').toLowerCase())
    named.evidenceAll += evidence.size
    named.evidence += [...evidence].filter(isNamed).length
    const top10 = ranked.slice(0, 10)
    named.hitsAll += top10.length
    named.hits += top10.filter(isNamed).length
    for (const k of ks) {
      const r = recallAt(ranked, evidence, k)
      totals[k] = (totals[k] ?? 0) + r
      byCategory[cat].recall[k] = (byCategory[cat].recall[k] ?? 0) + r
    }
  }
  await db.close()
  process.stderr.write(`${file}: done (${((performance.now() - started) / 1000).toFixed(0)} s)\n`)
}

const round = (x: number) => Math.round(x * 1000) / 1000
const result = {
  mode,
  ranker,
  ...(weights ? { weights } : {}),
  recall: Object.fromEntries(ks.map((k) => [k, round((totals[k] ?? 0) / questions)])),
  byCategory: Object.fromEntries(
    Object.entries(byCategory)
      .sort()
      .map(([c, v]) => [
        c,
        { questions: v.questions, recall: Object.fromEntries(ks.map((k) => [k, round((v.recall[k] ?? 0) / v.questions)])) },
      ]),
  ),
  questions,
  // Share of evidence turns, and of the top 10 returned, spoken by a person the question names.
  namedSpeaker: { evidence: round(named.evidence / named.evidenceAll), top10: round(named.hits / named.hitsAll) },
}
const json = JSON.stringify(result, null, 2)
process.stdout.write(`${json}\n`)
if (out) {
  await mkdir(dirname(out), { recursive: true })
  await writeFile(out, `${json}\n`)
}
if (embedder && 'dispose' in embedder) await (embedder as { dispose(): Promise<void> }).dispose()
