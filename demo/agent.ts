import type { RecordTurnInput } from '../src/core/turns/turns.ts'
import { type ContextBundle, type ContextItem, optionalApi, record, searchHits, tryOptional } from './api.ts'
import { describeSeen, type PastTurn, pastTurn } from './evidence.ts'
import { docPath } from './project.ts'
import { type Store, USER_ID } from './store.ts'

type Procedure = NonNullable<RecordTurnInput['procedures']>[number]

/** What the scripted agent decided to do for one message, before it is recorded. */
export interface AgentReply {
  answer: string
  procedures: Procedure[]
  /** New contents of files the agent wrote (workspace-relative path → content). */
  writes: Map<string, string>
  /** Past turns the answer drew on. */
  evidence: PastTurn[]
  /** How retrieval was done: 'context', 'search' or 'none' (not in this build). */
  retrieval: 'context' | 'search' | 'none' | null
}

const EDIT_VERBS = /\b(add|write|create|implement|append|insert|extend)\b/i
const READ_VERBS = /\b(read|open|show|look at|view|cat|what(?:'s| is) in)\b/i
const REMEMBER = /^\s*(?:please\s+)?remember(?:\s+that)?[:,]?\s+(.+)$/is
const LIST = /\b(list|which|what)\b.*\bfiles\b/i

/** The files a message names, by path or file name (e.g. "auth.ts", "README"). */
export function mentionedFiles(text: string, paths: Iterable<string>): string[] {
  const lower = text.toLowerCase()
  const found: string[] = []
  for (const path of paths) {
    const name = path.split('/').at(-1) ?? path
    const stem = name.replace(/\.[^.]+$/, '')
    const byName = new RegExp(`(^|[^\\w./-])${escape(name.toLowerCase())}($|[^\\w-])`).test(lower)
    const byStem = stem.length > 3 && new RegExp(`\\b${escape(stem.toLowerCase())}\\b(?!\\.)`).test(lower) && name.endsWith('.md')
    if (lower.includes(path.toLowerCase()) || byName || byStem) found.push(path)
  }
  return found
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** "add a logout function" → "logout"; "add function resetPassword" → "resetPassword". */
export function functionName(text: string): string | null {
  const patterns = [
    /\b(?:add|write|create|implement)\s+(?:an?\s+|the\s+)?(?:new\s+)?`?([A-Za-z_][\w-]*)`?(?:\(\))?\s+(?:function|method|helper|test)/i,
    /\b(?:function|method|helper)\s+(?:called\s+|named\s+)?`?([A-Za-z_][\w-]*)/i,
    /\btests?\s+for\s+(?:the\s+)?`?([A-Za-z_][\w-]*)/i,
  ]
  for (const pattern of patterns) {
    const match = pattern.exec(text)
    const word = match?.[1]
    if (word && !['a', 'an', 'the', 'new', 'function', 'test'].includes(word.toLowerCase())) return camel(word)
  }
  return null
}

function camel(word: string): string {
  return word.replace(/[-_]+([a-z])/gi, (_, c: string) => c.toUpperCase())
}

const KNOWN_BODIES: Record<string, { code: string; says: string }> = {
  logout: {
    code: `/** Signs the current user out: ends the session and forgets its token. */
export function logout(): void {
  session = null
}`,
    says: 'it signs the user out by ending the session and clearing the session token',
  },
  resetPassword: {
    code: `/** Sets a new password for a user who proves the old one. */
export function resetPassword(user: string, oldPassword: string, newPassword: string): boolean {
  if (users.get(user) !== oldPassword) return false
  users.set(user, newPassword)
  return true
}`,
    says: 'it changes a password after checking the old one',
  },
}

/** The edit a message asks for, applied to one file. */
function applyEdit(path: string, content: string, text: string): { content: string; says: string } {
  const name = functionName(text)
  const base = content.endsWith('\n') ? content : `${content}\n`
  if (path.endsWith('.md')) {
    const note = text.replace(/^.*?\b(?:add|write|append)\b\s*(?:a\s+)?(?:note|line|section)?\s*(?:about|saying|that)?\s*/i, '').replace(/\s+(?:to|in)\s+\S+\s*$/i, '')
    const line = note.trim() || text.trim()
    return { content: `${base}\n- ${line}\n`, says: `a note: “${line}”` }
  }
  if (path.includes('test')) {
    const subject = name ?? 'the new behaviour'
    const body = name === 'logout' ? `  login('ann', 'correct horse')\n  logout()\n  expect(currentUser()).toBe(null)` : `  expect(${name ?? 'true'}).toBeDefined()`
    return {
      content: `${base}\ntest('${subject} works', () => {\n${body}\n})\n`,
      says: `a test for ${subject}`,
    }
  }
  const fn = name ?? 'helper'
  const known = KNOWN_BODIES[fn]
  const code = known?.code ?? `/** ${text.trim().replace(/\*\//g, '')} */\nexport function ${fn}(): void {\n  // to do\n}`
  return { content: `${base}\n${code}\n`, says: `a \`${fn}()\` function${known ? `: ${known.says}` : ''}` }
}

function summarise(path: string, content: string): string {
  const lines = content.split('\n').length
  const exports = [...content.matchAll(/export (?:async )?(?:function|const|interface|class) (\w+)/g)].map((m) => m[1])
  const tests = [...content.matchAll(/test\('([^']+)'/g)].map((m) => m[1])
  const headings = [...content.matchAll(/^#+ (.+)$/gm)].map((m) => m[1])
  const parts = [`${path} has ${lines} lines`]
  if (exports.length) parts.push(`it exports ${exports.join(', ')}`)
  if (tests.length) parts.push(`its tests: ${tests.map((t) => `“${t}”`).join(', ')}`)
  if (headings.length) parts.push(`headings: ${headings.join(', ')}`)
  return `${parts.join('; ')}.`
}

/** Whether the file changed since the memory last saw it (an edit made outside the chat). */
async function changedOutside(store: Store, path: string, content: string): Promise<boolean> {
  const stored = await store.latestContent(path)
  return stored !== null && stored !== content
}

/** The event a context item comes from, when it comes from the log. */
export function eventIdOf(item: ContextItem): string | null {
  const source = record(item.source)
  if (typeof source?.eventId === 'string') return source.eventId
  const explain = record(item.explain)
  if (typeof explain?.eventId === 'string') return explain.eventId
  return item.id.startsWith('evt_') ? item.id : null
}

/** Event ids a context bundle's items point at, in order, once each. */
export function evidenceEventIds(items: ContextItem[]): string[] {
  const ids: string[] = []
  for (const item of items) {
    const id = eventIdOf(item)
    if (id && !ids.includes(id)) ids.push(id)
  }
  return ids
}

/** Past turns relevant to a query: from the context bundle, else from search. */
async function retrieve(store: Store, query: string): Promise<{ turns: PastTurn[]; via: AgentReply['retrieval'] }> {
  const memory = store.memory
  let ids: string[] = []
  let via: AgentReply['retrieval'] = 'none'
  const bundle = await tryOptional<ContextBundle>(() =>
    optionalApi(memory).buildContext({ query, conversationId: store.currentId, channel: 'private', maxTokens: 2000 }),
  )
  if (bundle.available) {
    via = 'context'
    ids = evidenceEventIds(bundle.value.sections.flatMap((s) => s.items))
  } else {
    const hits = await searchHits(memory, query, { limit: 8 })
    if (hits.available) {
      via = 'search'
      ids = hits.value.map((h) => h.eventId)
    }
  }
  const turns: PastTurn[] = []
  const seenTurns = new Set<string>()
  for (const id of ids) {
    const turn = await pastTurn(memory, id)
    const key = `${turn.conversationId}#${turn.turnIndex}`
    if (seenTurns.has(key) || (turn.conversationId === store.currentId && turn.turnIndex === null)) continue
    seenTurns.add(key)
    turns.push(turn)
    if (turns.length === 3) break
  }
  return { turns, via }
}

function quote(text: string, max = 140): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return `“${flat.length > max ? `${flat.slice(0, max - 1)}…` : flat}”`
}

async function answerFromMemory(store: Store, text: string): Promise<AgentReply> {
  const { turns, via } = await retrieve(store, text)
  const memories = await store.memory.memories.search(text, { userId: USER_ID, limit: 3 })
  const lines: string[] = []
  if (via === 'none') lines.push('Retrieval over past conversations is not in this build yet, so I can only use what you asked me to remember.')
  for (const turn of turns) {
    const where = store.conversations.find((c) => c.id === turn.conversationId)?.title ?? turn.conversationId
    const seen = turn.seen.length ? ` It touched ${turn.seen.map(describeSeen).join(', ')}.` : ''
    lines.push(`• In “${where}”${turn.turnIndex === null ? '' : ` (turn ${turn.turnIndex + 1})`} you asked ${quote(turn.user, 90)} and I answered ${quote(turn.agent)}.${seen}`)
  }
  for (const m of memories) lines.push(`• You asked me to remember (${m.category}): ${quote(m.content)}.`)
  const answer = lines.length === 0 || (lines.length === 1 && via === 'none')
    ? `${lines.join('\n')}${lines.length ? '\n' : ''}I don't remember anything about that yet.`
    : `Here is what I remember about that:\n${lines.join('\n')}`
  const procedures: Procedure[] = [
    {
      tool: via === 'search' ? 'search_memory' : 'build_context',
      args: { query: text },
      output: turns.length ? turns.map((t) => `${t.conversationId}#${t.turnIndex ?? '-'}`).join('\n') : 'no past turns',
    },
  ]
  return { answer, procedures, writes: new Map(), evidence: turns, retrieval: via }
}

function guessCategory(text: string): 'preference' | 'convention' | 'decision' | 'constraint' | 'fact' {
  if (/\b(prefer|like|want|rather)\b/i.test(text)) return 'preference'
  if (/\b(always|never|must|don't|do not)\b/i.test(text)) return 'constraint'
  if (/\b(we decided|decision|chose|go with)\b/i.test(text)) return 'decision'
  if (/\b(convention|style|naming|format)\b/i.test(text)) return 'convention'
  return 'fact'
}

/**
 * The scripted agent: no language model, just rules. It reads and edits the sample project's
 * files, saves what it is asked to remember, and answers other questions from memory.
 *
 * @example
 * const reply = await respond(store, 'add a logout function to auth.ts')
 */
export async function respond(store: Store, text: string): Promise<AgentReply> {
  const empty = { writes: new Map<string, string>(), evidence: [], retrieval: null }
  const remember = REMEMBER.exec(text)
  if (remember?.[1]) {
    const content = remember[1].trim()
    const category = guessCategory(content)
    const saved = await store.memory.remember({ content, category, source: 'explicit', userId: USER_ID, ...(store.sensitive ? { sensitivity: 'high' as const } : {}) })
    const how = saved.action === 'superseded' ? ' It replaces what I remembered before.' : saved.action === 'unchanged' ? ' I already knew that.' : ''
    return {
      ...empty,
      answer: `I'll remember that (${category}): ${quote(content)}.${how}`,
      procedures: [{ tool: 'save_memory', args: { content, category }, output: `${saved.action} ${saved.id}` }],
    }
  }
  const files = mentionedFiles(text, store.files.keys())
  if (files.length === 0 && LIST.test(text)) {
    const list = [...store.files.keys()].join('\n')
    return { ...empty, answer: `The project has ${store.files.size} files:\n${list}`, procedures: [{ tool: 'list_files', args: {}, output: list }] }
  }
  if (files.length === 0) return answerFromMemory(store, text)

  const procedures: Procedure[] = []
  const writes = new Map<string, string>()
  const sentences: string[] = []
  const editing = EDIT_VERBS.test(text) && !READ_VERBS.test(text)
  for (const path of files) {
    const content = store.files.get(path) ?? ''
    const outside = await changedOutside(store, path, content)
    procedures.push({ tool: 'read_file', args: { path }, document: { path: docPath(path), content, effect: 'read' } })
    const note = outside ? ' (it was changed outside this chat since I last saw it)' : ''
    if (editing) {
      const edit = applyEdit(path, content, text)
      writes.set(path, edit.content)
      procedures.push({ tool: 'write_file', args: { path }, document: { path: docPath(path), content: edit.content, effect: 'write' } })
      sentences.push(`I read ${path}${note} and added ${edit.says}.`)
    } else {
      sentences.push(`${summarise(path, content)}${outside ? ` It was changed outside this chat since I last saw it.` : ''}`)
    }
  }
  return { ...empty, answer: sentences.join('\n'), procedures, writes }
}
