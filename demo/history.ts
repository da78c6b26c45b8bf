import type { RecordTurnInput } from '../src/core/turns/turns.ts'
import { importChatHistory } from '../src/index.ts'
import { showError } from './errors.ts'
import { docPath } from './project.ts'
import { AGENT_ID, type Store, USER_ID } from './store.ts'

/** A seeded PRNG (mulberry32): the same history every time. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const TOPICS = [
  { title: 'Reminders and due dates', file: 'lib/reminders.ts', words: ['reminder', 'due date', 'snooze', 'timezone', 'notification'] },
  { title: 'Sharing lists with family', file: 'lib/sharing.ts', words: ['share link', 'invite', 'permission', 'owner', 'read-only'] },
  { title: 'Offline sync', file: 'lib/sync.ts', words: ['conflict', 'merge', 'offline queue', 'retry', 'last write wins'] },
  { title: 'Search across tasks', file: 'lib/search.ts', words: ['index', 'ranking', 'typo', 'filter', 'tag'] },
  { title: 'Accessibility pass', file: 'lib/a11y.ts', words: ['screen reader', 'focus order', 'contrast', 'keyboard shortcut', 'label'] },
  { title: 'Billing and plans', file: 'lib/billing.ts', words: ['invoice', 'trial', 'upgrade', 'refund', 'receipt'] },
] as const

function pick<T>(list: readonly [T, ...T[]], r: number): T {
  return list[Math.floor(r * list.length)] ?? list[0]
}

const ASKS: [(w: string) => string, ...((w: string) => string)[]] = [
  (w: string) => `How should ${w} work for recurring tasks?`,
  (w: string) => `Can you check what we do about ${w}?`,
  (w: string) => `The ${w} is wrong on mobile, can you look?`,
  (w: string) => `Let's decide how to handle ${w}.`,
  (w: string) => `Write down the rule for ${w} so we keep it consistent.`,
  (w: string) => `Does the ${w} code have tests?`,
]
const ANSWERS: [(w: string, f: string) => string, ...((w: string, f: string) => string)[]] = [
  (w: string, f: string) => `I read ${f}: ${w} is handled in one place; I suggest keeping it that way.`,
  (w: string, f: string) => `I changed ${f} so that ${w} is checked before saving, and noted it.`,
  (w: string, f: string) => `We decided: ${w} follows the user's settings, never a default. ${f} now says so.`,
  (w: string, f: string) => `The tests for ${w} pass; ${f} covers the empty and the full case.`,
  (w: string) => `For ${w}, the simplest rule is to treat it like any other task field.`,
]

export interface HistoryPlan {
  conversations: number
  turns: number
}

/**
 * Writes a large, deterministic history: several conversations about the TODO app's
 * features, each turn a recordTurn (some reading or editing a generated file), in batches,
 * back-dated over the last 60 days. Reports progress after each batch.
 */
export async function loadHistory(store: Store, plan: HistoryPlan, progress: (done: number, total: number) => void): Promise<void> {
  const random = prng(20_240_601)
  const topics = TOPICS.slice(0, plan.conversations)
  const perConversation = Math.ceil(plan.turns / topics.length)
  const start = Date.now() - 60 * 86_400_000
  const step = (60 * 86_400_000) / (perConversation * topics.length + 1)
  const versions = new Map<string, number>()
  const ids = topics.map((t, i) => `history-${i + 1}-${t.file.replace(/\W+/g, '-')}`)
  for (const [i, topic] of topics.entries()) {
    await store.trackDocument(topic.file, false)
    await store.saveConversation({
      id: ids[i] ?? '',
      title: `${topic.title} (generated)`,
      createdAt: new Date(start + i * 1000).toISOString(),
      turns: 0,
    })
  }
  // A version's content depends on the version alone, so reading it again finds no change.
  const contentOf = (file: string, version: number, words: readonly string[]) =>
    `// ${file} — generated sample, version ${version}\n${Array.from({ length: 6 + (version % 5) }, (_, l) => `export const rule${l} = '${words[(version + l) % words.length] ?? ''} rule ${l} (v${version})'`).join('\n')}\n`

  const turnAt = (n: number): RecordTurnInput => {
    const c = n % topics.length
    const topic = topics[c] ?? TOPICS[0]
    const word = topic.words[Math.floor(random() * topic.words.length)] ?? 'task'
    const ask = pick(ASKS, random())
    const answer = pick(ANSWERS, random())
    const kind = random()
    const path = topic.file
    let version = versions.get(path) ?? 0
    const procedures: NonNullable<RecordTurnInput['procedures']> = []
    if (kind < 0.35 || version === 0) {
      if (version === 0) version = 1
      procedures.push({ tool: 'read_file', args: { path }, document: { path: docPath(path), content: contentOf(path, version, topic.words), effect: 'read' } })
    } else if (kind < 0.5) {
      version += 1
      procedures.push({ tool: 'write_file', args: { path }, document: { path: docPath(path), content: contentOf(path, version, topic.words), effect: 'write' } })
    } else if (kind < 0.65) {
      procedures.push({ tool: 'run_tests', args: { filter: word }, output: `${3 + (n % 7)} passed, 0 failed (${word})` })
    }
    versions.set(path, version)
    return {
      conversationId: ids[c] ?? '',
      scope: { userId: USER_ID, agentId: AGENT_ID },
      user: ask(word),
      agent: answer(word, path),
      procedures,
      createdAt: new Date(start + n * step).toISOString(),
    }
  }

  const total = perConversation * topics.length
  const BATCH = 60
  const counts = new Array<number>(topics.length).fill(0)
  for (let done = 0; done < total; ) {
    const batch: RecordTurnInput[] = []
    for (let n = done; n < Math.min(done + BATCH, total); n++) batch.push(turnAt(n))
    // One chain per conversation keeps each conversation's turns in order; chains run side by side.
    const chains = new Map<string, RecordTurnInput[]>()
    for (const turn of batch) chains.set(turn.conversationId, [...(chains.get(turn.conversationId) ?? []), turn])
    await Promise.all(
      [...chains.values()].map(async (turns) => {
        for (const turn of turns) await store.memory.recordTurn(turn)
      }),
    )
    for (const turn of batch) counts[ids.indexOf(turn.conversationId)] = (counts[ids.indexOf(turn.conversationId)] ?? 0) + 1
    done += batch.length
    progress(done, total)
  }
  for (const [i, topic] of topics.entries()) {
    const existing = store.conversations.find((c) => c.id === ids[i])
    await store.saveConversation({
      id: ids[i] ?? '',
      title: `${topic.title} (generated)`,
      createdAt: existing?.createdAt ?? new Date(start).toISOString(),
      turns: counts[i] ?? 0,
    })
  }
}

/**
 * The sidebar's import: a ChatGPT or Claude.ai export's conversations.json, recorded as turns of
 * the demo's user, each conversation listed with the others (its title marked as imported).
 */
export function setupChatImport(store: Store): void {
  const input = document.querySelector<HTMLInputElement>('#import-chat')
  const text = document.querySelector<HTMLParagraphElement>('#import-text')
  if (!input || !text) return
  input.addEventListener('change', () => {
    const file = input.files?.[0]
    if (!file) return
    input.disabled = true
    text.textContent = `Reading ${file.name}…`
    importChatHistory(store.memory, file, {
      scope: { userId: USER_ID },
      onProgress: (p) => (text.textContent = `${p.conversations.toLocaleString()} / ${p.total.toLocaleString()} conversations, ${p.turns.toLocaleString()} turns`),
    })
      .then(async (result) => {
        for (const c of result.conversations) {
          if (c.turns === 0) continue
          const title = `${c.title || 'Untitled'} (${result.source === 'chatgpt' ? 'ChatGPT' : 'Claude'})`
          await store.saveConversation({ id: c.conversationId, title, createdAt: c.startedAt ?? new Date().toISOString(), turns: c.turns })
        }
        const kept = result.skipped ? `; ${result.skipped.toLocaleString()} were already here` : ''
        const n = result.conversations.length
        text.textContent = `Imported ${n.toLocaleString()} conversation${n === 1 ? '' : 's'}, ${result.turns.toLocaleString()} new turns${kept}.`
        store.changed('all')
      })
      .catch((error: unknown) => {
        text.textContent = ''
        showError(error, 'import the chat export')
      })
      .finally(() => {
        input.disabled = false
        input.value = ''
      })
  })
}
