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

/** Records every turn of `conv` in `memory` and returns its questions of categories 1–4. */
export async function ingestConversation(memory: Engine, conv: Record<string, unknown>, file: string): Promise<Ingested> {
  const diaOf = new Map<string, string>()
  const speakerOf = new Map<string, string>()
  const sessions = Object.keys(conv)
    .filter((k) => /^session_\d+$/.test(k))
    .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)))
  const user = `${conv.speaker_a as string}-${conv.speaker_b as string}`
  for (const key of sessions) {
    const createdAt = sessionDate(conv[`${key}_date_time`] as string)
    for (const turn of conv[key] as Turn[]) {
      const text = turn.blip_caption ? `${turn.text} [shares ${turn.blip_caption}]` : turn.text
      const { eventId } = await memory.record({
        kind: 'message',
        scope: { conversationId: `${file}:${key}`, userId: user },
        actor: { type: 'human', id: turn.speaker },
        content: { text, diaId: turn.dia_id },
        createdAt,
      })
      diaOf.set(eventId, turn.dia_id)
      speakerOf.set(turn.dia_id, turn.speaker)
    }
  }
  return { user, diaOf, speakerOf, questions: questionsOf(conv) }
}

/**
 * Saves every turn of `conv` in `memory` as a curated memory ("Speaker: text", exact dedup
 * only, so no turn supersedes another) for `user` (by default the two speakers' names) and
 * returns its questions of categories 1–4, with memory id → dia_id in `diaOf`.
 */
export async function rememberConversation(
  memory: Engine,
  conv: Record<string, unknown>,
  user = `${conv.speaker_a as string}-${conv.speaker_b as string}`,
): Promise<Ingested> {
  const diaOf = new Map<string, string>()
  const speakerOf = new Map<string, string>()
  for (const key of Object.keys(conv).filter((k) => /^session_\d+$/.test(k))) {
    for (const turn of conv[key] as Turn[]) {
      const text = turn.blip_caption ? `${turn.text} [shares ${turn.blip_caption}]` : turn.text
      const { id } = await memory.remember({ content: `${turn.speaker}: ${text}`, category: 'fact', userId: user, dedup: 'exact' })
      diaOf.set(id, turn.dia_id)
      speakerOf.set(turn.dia_id, turn.speaker)
    }
  }
  return { user, diaOf, speakerOf, questions: questionsOf(conv) }
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
