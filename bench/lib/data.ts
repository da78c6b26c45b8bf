/**
 * Deterministic synthetic agent sessions for the benchmarks: the same seed gives the same
 * turns, queries and sentences on every machine, in Node and (serialised) in the browser.
 *
 * Text is drawn from a ~3,000-word vocabulary (real technical words first, then made-up
 * words) with a Zipf-like skew, so keyword search sees common and rare terms as in real logs.
 */
import type { RecordTurnInput } from '../../src/core/turns/turns.ts'

/** mulberry32: a small, fast, seeded PRNG in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const REAL_WORDS = (
  'the a to of and in is it that for on with this as be was not are you we at by or from can ' +
  'test tests bug fix login auth token session user password cache database query index table ' +
  'migration schema column row insert update delete select join error exception stack trace ' +
  'timeout retry request response header body json yaml config option flag env variable build ' +
  'deploy release version branch merge commit rebase pull push review comment issue ticket task ' +
  'sprint deadline friday monday staging production server client worker thread queue job cron ' +
  'payment invoice customer order cart checkout price discount refund email notification webhook ' +
  'api endpoint route handler middleware controller service repository model view component ' +
  'render state props hook effect memo reducer store action dispatch selector style theme layout ' +
  'button form input modal dialog menu sidebar header footer page link image icon font color ' +
  'typescript javascript python rust node browser chrome firefox safari webpack vite eslint ' +
  'prettier jest vitest playwright docker kubernetes terraform aws gcp azure bucket lambda queue ' +
  'logging metrics tracing alert dashboard latency throughput memory cpu disk network socket ' +
  'flaky slow fast broken green red passing failing skipped pending merged closed open draft ' +
  'refactor rename extract inline move split combine simplify optimize improve remove add ' +
  'please could should would will must need want try check look read write run open close ' +
  'file folder path module package function class method interface type enum const let variable ' +
  'decision agreed decided prefer preference always never usually sometimes because therefore ' +
  'first second third next last before after during while until since again also only just'
).split(/\s+/)

const SYLLABLES = 'ka lo mi re tu sa ne vo ri pa zel dor fin gar hul jin kor lum mar nix'.split(' ')

/** The English words, once each, most common first. */
const ENGLISH_WORDS = [...new Set(REAL_WORDS)]

function buildVocabulary(size: number): string[] {
  const words = [...ENGLISH_WORDS]
  const r = seededRandom(7)
  const seen = new Set(words)
  while (words.length < size) {
    const n = 2 + Math.floor(r() * 3)
    let word = ''
    for (let i = 0; i < n; i++) word += SYLLABLES[Math.floor(r() * SYLLABLES.length)]!
    if (!seen.has(word)) {
      seen.add(word)
      words.push(word)
    }
  }
  return words
}

export const VOCABULARY = buildVocabulary(3000)

/** A word with a Zipf-like skew: low indexes (common words) come up far more often. */
export function pickWord(r: () => number, words: readonly string[] = VOCABULARY): string {
  return words[Math.floor(words.length * r() ** 2.6)]!
}

export function sentence(r: () => number, words: number, from: readonly string[] = VOCABULARY): string {
  const out: string[] = []
  for (let i = 0; i < words; i++) out.push(pickWord(r, from))
  const text = out.join(' ')
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`
}

function paragraph(r: () => number, minWords: number, maxWords: number): string {
  let remaining = minWords + Math.floor(r() * (maxWords - minWords + 1))
  const parts: string[] = []
  while (remaining > 0) {
    const n = Math.min(remaining, 6 + Math.floor(r() * 14))
    parts.push(sentence(r, n))
    remaining -= n
  }
  return parts.join(' ')
}

function fileBody(file: number, revision: number): string {
  const r = seededRandom(file * 100_003 + revision)
  const lines: string[] = [`// src/mod${file}.ts revision ${revision}`]
  const count = 15 + Math.floor(r() * 25)
  for (let i = 0; i < count; i++) {
    lines.push(`export function ${pickWord(r)}${i}(${pickWord(r)}: string) { return '${pickWord(r)} ${pickWord(r)}' }`)
  }
  return `${lines.join('\n')}\n`
}

export interface SessionShape {
  turns: number
  conversations: number
  files: number
}

/** Turns for a memory of about `events` events: each turn writes 4 (user, agent, tool call, tool result). */
export function sessionShape(events: number): SessionShape {
  const turns = Math.max(1, Math.ceil(events / 4))
  return { turns, conversations: Math.max(1, Math.ceil(turns / 25)), files: Math.max(20, Math.ceil(turns / 20)) }
}

export const BENCH_SCOPE = { userId: 'bench-user', agentId: 'bench-agent' }

/**
 * The n-th turn of a synthetic coding session: a user request (10–60 words), the agent's
 * reply (20–120 words), a file read, a file write and a test run with 3–12 lines of output.
 * Every tenth read finds the file changed outside the agent.
 */
export function makeTurns(shape: SessionShape, seed: number, from = 0, count = shape.turns): RecordTurnInput[] {
  const r = seededRandom(seed)
  const revision = new Array<number>(shape.files).fill(0)
  const turns: RecordTurnInput[] = []
  for (let n = 0; n < from + count; n++) {
    const read = Math.floor(r() * shape.files)
    const written = Math.floor(r() * shape.files)
    if (n % 10 === 0) revision[read] = (revision[read] ?? 0) + 1
    revision[written] = (revision[written] ?? 0) + 1
    const user = `${paragraph(r, 10, 60)} See src/mod${read}.ts.`
    const agent = `${paragraph(r, 20, 120)} Changed src/mod${written}.ts.`
    const outputLines = [`PASS src/mod${written}.test.ts (${1 + Math.floor(r() * 40)} tests)`]
    const extra = 2 + Math.floor(r() * 10)
    for (let i = 0; i < extra; i++) outputLines.push(`  ${sentence(r, 4 + Math.floor(r() * 8))}`)
    if (n < from) continue
    turns.push({
      conversationId: `conv-${n % shape.conversations}`,
      scope: BENCH_SCOPE,
      user,
      agent,
      procedures: [
        {
          tool: 'read_file',
          args: { path: `src/mod${read}.ts` },
          document: { path: `src/mod${read}.ts`, content: fileBody(read, revision[read] ?? 0), effect: 'read' },
        },
        {
          tool: 'edit_file',
          args: { path: `src/mod${written}.ts`, find: pickWord(r), replace: pickWord(r) },
          document: { path: `src/mod${written}.ts`, content: fileBody(written, revision[written] ?? 0), effect: 'write' },
        },
        { tool: 'run_tests', args: { filter: `mod${written}` }, output: `${outputLines.join('\n')}\n` },
      ],
    })
  }
  return turns
}

/** Search queries of 2–6 words, mid-frequency words mixed with common ones. */
export function makeQueries(count: number, seed: number): string[] {
  const r = seededRandom(seed)
  return Array.from({ length: count }, () => {
    const n = 2 + Math.floor(r() * 5)
    return Array.from({ length: n }, () => pickWord(r)).join(' ')
  })
}

/**
 * Sentences of 15–19 words for the embedding throughput figures, drawn from the English
 * words only (same skew). A model's cost follows its token count, and the made-up words of
 * the event texts split into several word pieces each: ~46 tokens a sentence against ~22
 * for English of the same length, which would measure a text no agent writes.
 */
export function embeddingSentences(count: number, seed: number): string[] {
  const r = seededRandom(seed)
  return Array.from({ length: count }, () => sentence(r, 15 + Math.floor(r() * 5), ENGLISH_WORDS))
}
