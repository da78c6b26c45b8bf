// Search settings chosen by cross-validation on LoCoMo-style conversations: each conversation
// goes into a fresh memory once (bench/lib/locomo.ts, as in bench/quality.ts), and every
// setting of each grid is asked every question through the public `search` (per-call
// `weights`). Then, leaving out one conversation at a time, the setting that did best on the
// others is scored on the one left out: a recall the settings were not chosen on.
//
//   node bench/run.mjs bench/quality-cv.ts --data ../shared/locomo-dev [--k 10] [--out FILE] \
//        [--grid '{"name":[{"vector":1},{"vector":0.6}]}']
//
// Without --grid: the z-score fusion over `vector` × `zShift`, and reciprocal rank over
// `vector` × `rrfK`. The query's vector is embedded once per question and reused.
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import type { Embedder } from '../src/core/kernel/embedder.ts'
import { createEngine } from '../src/core/engine.ts'
import type { ScoringInput } from '../src/core/kernel/scoring.ts'
import { createTransformersEmbedder } from '../src/embed/transformers-embedder.ts'
import { arg, conversationFiles, ingestConversation, readConversation, recallAt } from './lib/locomo.ts'

const cross = <A, B>(as: A[], bs: B[], f: (a: A, b: B) => ScoringInput) => as.flatMap((a) => bs.map((b) => f(a, b)))
const DEFAULT_GRIDS: Record<string, ScoringInput[]> = {
  zscore: cross([0.6, 0.8, 1, 1.25], [4, 6, 8, 10], (v, s) => ({ fusion: 'zscore', vector: v, zShift: s })),
  rrf: cross([0.3, 0.6, 1], [20, 60, 120], (v, k) => ({ fusion: 'rrf', vector: v, rrfK: k })),
}

const data = arg('data', '../shared/locomo-dev') as string
const k = Number(arg('k', '10'))
const out = arg('out')
const grids = arg('grid') === undefined ? DEFAULT_GRIDS : (JSON.parse(arg('grid') as string) as Record<string, ScoringInput[]>)

/** The bundled model, each distinct text embedded once: every setting asks the same questions. */
function memoised(inner: Embedder): Embedder {
  const seen = new Map<string, Float32Array>()
  return {
    id: inner.id,
    dims: inner.dims,
    async embed(texts: string[]): Promise<Float32Array[]> {
      const missing = [...new Set(texts.filter((t) => !seen.has(t)))]
      if (missing.length) (await inner.embed(missing)).forEach((v, i) => seen.set(missing[i]!, v))
      return texts.map((t) => seen.get(t)!)
    },
  }
}

const model = await createTransformersEmbedder({ batchSize: 32 })
const embedder = memoised(model)
const files = await conversationFiles(data)
const settings = Object.entries(grids).flatMap(([grid, list]) => list.map((weights) => ({ grid, weights })))
// recall[setting][file]: the sum of recall@k over that conversation's questions.
const recall = settings.map(() => new Map<string, number>())
const questionsOf = new Map<string, number>()
const started = performance.now()

for (const file of files) {
  const db = await PGlite.create({ extensions: { vector } })
  const memory = await createEngine({ db, indexing: 'manual', embedder })
  const { user, diaOf, questions } = await ingestConversation(memory, await readConversation(data, file), file)
  await memory.indexNow()
  questionsOf.set(file, questions.length)
  for (const [i, { weights }] of settings.entries()) {
    let sum = 0
    for (const q of questions) {
      const hits = await memory.search(q.question, { limit: k, scope: { userId: user }, weights })
      sum += recallAt(hits.map((h) => diaOf.get(h.eventId) ?? ''), q.evidence, k)
    }
    recall[i]!.set(file, sum)
  }
  await db.close()
  process.stderr.write(`${file}: ${settings.length} settings (${((performance.now() - started) / 1000).toFixed(0)} s)\n`)
}

const round = (x: number) => Math.round(x * 1000) / 1000
const total = [...questionsOf.values()].reduce((a, b) => a + b, 0)
const sumOver = (i: number, keep: (f: string) => boolean) => files.filter(keep).reduce((a, f) => a + (recall[i]!.get(f) ?? 0), 0)
const result = {
  k,
  questions: total,
  conversations: files,
  grids: Object.fromEntries(
    Object.keys(grids).map((grid) => {
      const members = settings.flatMap((s, i) => (s.grid === grid ? [i] : []))
      const picks = files.map((heldOut) => {
        const others = (f: string) => f !== heldOut
        const best = members.reduce((a, b) => (sumOver(b, others) > sumOver(a, others) ? b : a))
        return { heldOut, best, sum: recall[best]!.get(heldOut) ?? 0 }
      })
      return [
        grid,
        {
          // Recall@k on conversations the settings were not chosen on, over all questions.
          crossValidated: round(picks.reduce((a, p) => a + p.sum, 0) / total),
          picks: picks.map((p) => ({
            heldOut: p.heldOut,
            weights: settings[p.best]!.weights,
            recall: round(p.sum / questionsOf.get(p.heldOut)!),
          })),
          settings: members.map((i) => ({
            weights: settings[i]!.weights,
            recall: round(sumOver(i, () => true) / total),
            byConversation: Object.fromEntries(files.map((f) => [f, round((recall[i]!.get(f) ?? 0) / questionsOf.get(f)!)])),
          })),
        },
      ]
    }),
  ),
}
const json = JSON.stringify(result, null, 2)
process.stdout.write(`${json}\n`)
if (out) {
  await mkdir(dirname(out), { recursive: true })
  await writeFile(out, `${json}\n`)
}
if ('dispose' in model) await (model as { dispose(): Promise<void> }).dispose()
