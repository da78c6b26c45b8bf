// LoCoMo-style conversations (see the data folder's README) read into a memory through the
// public API: one event per turn, the session's date as its time, the speaker as actor, one
// conversation per session. Shared by bench/quality.ts and bench/quality-cv.ts.
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Engine } from '../../src/core/engine.ts'

interface Turn {
  speaker: string
  dia_id: string
  text: string
  blip_caption?: string
}

interface Qa {
  question: string
  evidence?: string[]
  category: number
}

/** A question of categories 1–4 with its evidence turns (read only to score). */
export interface Question {
  question: string
  category: number
  evidence: Set<string>
}

export interface Ingested {
  /** The user id every turn is scoped to (search with `scope: { userId }`). */
  user: string
  /** Event id → the turn's dia_id. */
  diaOf: Map<string, string>
  /** dia_id → speaker. */
  speakerOf: Map<string, string>
  questions: Question[]
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october',
  'november', 'december']

/** "1:56 pm on 8 May, 2023" → a Date (UTC). */
export function sessionDate(s: string): Date {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(s)
  if (!m) throw new Error(`unreadable session date: ${s}`)
  let hour = Number(m[1]) % 12
  if (m[3]!.toLowerCase() === 'pm') hour += 12
  const month = MONTHS.indexOf(m[5]!.toLowerCase())
  return new Date(Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2])))
}

/** The data folder's conversation files, sorted; `only` keeps the named ones ("26" for 26.json). */
export async function conversationFiles(dir: string, only?: string[]): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json') && (!only || only.includes(f.replace('.json', ''))))
  return files.sort()
}

export async function readConversation(dir: string, file: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(dir, file), 'utf8')) as Record<string, unknown>
}

/**
 * Every turn of `conv` in session order, with its session, the session's date and its text (a
 * shared image's caption appended).
 */
function* turnsOf(conv: Record<string, unknown>): Generator<Turn & { session: string; createdAt: Date }> {
  const sessions = Object.keys(conv)
    .filter((k) => /^session_\d+$/.test(k))
    .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)))
  for (const session of sessions) {
    const createdAt = sessionDate(conv[`${session}_date_time`] as string)
    for (const turn of conv[session] as Turn[]) {
      const text = turn.blip_caption ? `${turn.text} [shares ${turn.blip_caption}]` : turn.text
      yield { ...turn, text, session, createdAt }
    }
  }
}

/**
 * Stores every turn of `conv` through `save` (which returns the id it was stored under) and
 * returns the conversation's questions of categories 1–4, with id → dia_id in `diaOf`.
 */
async function storeTurns(
  conv: Record<string, unknown>,
  user: string,
  save: (turn: Turn & { session: string; createdAt: Date }) => Promise<string>,
): Promise<Ingested> {
  const diaOf = new Map<string, string>()
  const speakerOf = new Map<string, string>()
  for (const turn of turnsOf(conv)) {
    diaOf.set(await save(turn), turn.dia_id)
    speakerOf.set(turn.dia_id, turn.speaker)
  }
  return { user, diaOf, speakerOf, questions: questionsOf(conv) }
}

const pair = (conv: Record<string, unknown>) => `${conv.speaker_a as string}-${conv.speaker_b as string}`

/** Records every turn of `conv` in `memory` and returns its questions of categories 1–4. */
export async function ingestConversation(memory: Engine, conv: Record<string, unknown>, file: string): Promise<Ingested> {
  const user = pair(conv)
  return storeTurns(conv, user, async (turn) => {
    const { eventId } = await memory.record({
      kind: 'message',
      scope: { conversationId: `${file}:${turn.session}`, userId: user },
      actor: { type: 'human', id: turn.speaker },
      content: { text: turn.text, diaId: turn.dia_id },
      createdAt: turn.createdAt,
    })
    return eventId
  })
}

/**
 * Saves every turn of `conv` in `memory` as a curated memory ("Speaker: text", then `suffix`;
 * exact dedup only, so no turn supersedes another) for `user` (by default the two speakers'
 * names) and returns its questions of categories 1–4, with memory id → dia_id in `diaOf`.
 */
export async function rememberConversation(memory: Engine, conv: Record<string, unknown>, user = pair(conv), suffix = ''): Promise<Ingested> {
  return storeTurns(conv, user, async (turn) => {
    const saved = await memory.remember({ content: `${turn.speaker}: ${turn.text}${suffix}`, category: 'fact', userId: user, dedup: 'exact' })
    return saved.id
  })
}

/** The value after `--name` on the command line, or `fallback`. */
export function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : process.argv[i + 1]
}

function questionsOf(conv: Record<string, unknown>): Question[] {
  return (conv.qa as Qa[])
    .filter((qa) => qa.category >= 1 && qa.category <= 4 && qa.evidence?.length)
    .map((qa) => ({
      question: qa.question,
      category: qa.category,
      evidence: new Set(qa.evidence!.flatMap((e) => e.split(/[;,]\s*/)).map((e) => e.trim())),
    }))
}

/** Share of `evidence` among the first `k` of `ranked` (dia_ids). */
export function recallAt(ranked: string[], evidence: Set<string>, k: number): number {
  return new Set(ranked.slice(0, k).filter((d) => evidence.has(d))).size / evidence.size
}
