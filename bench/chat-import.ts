/**
 * A large chat export imported in Node: a ChatGPT conversations.json of CONVERSATIONS
 * conversations (default 500) with TURNS turns each (default 4), written in the format's real
 * shape, imported with `importChatHistory` into a new in-memory memory (no model). Reports the
 * parse-and-check time, turns per second with p50 / p95 per conversation, and how long a second
 * import of the same file (which adds nothing) takes.
 *
 *   node bench/run.mjs bench/chat-import.ts
 *   CONVERSATIONS=2000 TURNS=5 node bench/run.mjs bench/chat-import.ts
 */
import { importChatHistory, openMemory } from '../src/node/index.ts'
import { latency } from './lib/metrics.ts'

const CONVERSATIONS = Number(process.env.CONVERSATIONS ?? 500)
const TURNS = Number(process.env.TURNS ?? 4)
const TOPICS = ['the parser', 'the deploy script', 'the login page', 'billing', 'the search index', 'offline sync']

function message(id: string, role: string, text: string, time: number, parent: string | null, child: string | null) {
  return {
    id,
    message: {
      id,
      author: { role, name: null, metadata: {} },
      create_time: time,
      content: { content_type: 'text', parts: [text] },
      status: 'finished_successfully',
      weight: 1,
      metadata: {},
      recipient: 'all',
    },
    parent,
    children: child ? [child] : [],
  }
}

/** One conversation: a chain of user and assistant messages, a day apart from the previous one. */
function conversation(c: number) {
  const start = 1_700_000_000 + c * 86_400
  const mapping: Record<string, unknown> = { root: { id: 'root', message: null, parent: null, children: ['u0'] } }
  let parent = 'root'
  for (let t = 0; t < TURNS; t++) {
    const topic = TOPICS[(c + t) % TOPICS.length]
    const next = t + 1 < TURNS ? `u${t + 1}` : null
    mapping[`u${t}`] = message(`u${t}`, 'user', `Question ${t} of chat ${c}: how does ${topic} handle dates and retries?`, start + t * 60, parent, `a${t}`)
    mapping[`a${t}`] = message(`a${t}`, 'assistant', `For ${topic}, dates are read as ISO strings and retries back off; see note ${c}-${t}.`, start + t * 60 + 5, `u${t}`, next)
    parent = `a${t}`
  }
  return { title: `Chat ${c}`, create_time: start, mapping, current_node: parent, conversation_id: `conv-${c}`, id: `conv-${c}` }
}

const file = JSON.stringify(Array.from({ length: CONVERSATIONS }, (_, c) => conversation(c)))
const memory = await openMemory({ indexing: 'manual' })
try {
  const perConversation: number[] = []
  let last = performance.now()
  let first: number | undefined
  const started = performance.now()
  const result = await importChatHistory(memory, file, {
    onProgress: () => {
      const now = performance.now()
      first ??= now - started
      perConversation.push(now - last)
      last = now
    },
  })
  const seconds = (performance.now() - started) / 1000
  const again = performance.now()
  const second = await importChatHistory(memory, file)
  const secondSeconds = (performance.now() - again) / 1000
  const { p50, p95 } = latency(perConversation)
  process.stdout.write(
    [
      `${CONVERSATIONS} conversations × ${TURNS} turns, ${(file.length / 2 ** 20).toFixed(1)} MiB of JSON`,
      `first import: ${result.turns} turns in ${seconds.toFixed(1)} s, ${(result.turns / seconds).toFixed(0)} turns/s`,
      `per conversation (${TURNS} turns): p50 ${p50?.toFixed(1)} ms, p95 ${p95?.toFixed(1)} ms; the first progress after ${first?.toFixed(0)} ms`,
      `second import of the same file: ${second.turns} turns added, ${second.skipped} skipped, in ${secondSeconds.toFixed(1)} s`,
    ].join('\n') + '\n',
  )
} finally {
  await memory.close()
}
