import type { Memory } from '../src/index.ts'
import { relPath } from './project.ts'

/** A document version a past turn read or wrote, and how far behind the latest it is now. */
export interface SeenVersion {
  path: string
  tool: string
  versionId: string
  version: number
  latestVersion: number
  /** Versions written since this one (0: still the latest). */
  staleness: number
}

/** A past turn as the page shows it: both messages and the documents it touched. */
export interface PastTurn {
  conversationId: string
  turnIndex: number | null
  user: string
  agent: string
  agentEventId: string | null
  seen: SeenVersion[]
}

function textOf(content: Record<string, unknown>): string {
  return typeof content.text === 'string' ? content.text : ''
}

/**
 * The turn an event belongs to, through the graph: a user message's MESSAGE edge leads to
 * the reply; the reply's procedure edges lead to the document versions the turn saw.
 */
export async function pastTurn(memory: Memory, eventId: string): Promise<PastTurn> {
  const event = await memory.events.get(eventId)
  let user = ''
  let agent = ''
  let agentEventId: string | null = null
  if (event.kind === 'message' && event.actor.type === 'human') {
    user = textOf(event.content)
    const reply = (await memory.graph.out(eventId, 'MESSAGE'))[0]
    if (reply) {
      agentEventId = reply.dst
      agent = textOf((await memory.events.get(reply.dst)).content)
    }
  } else if (event.kind === 'message') {
    agent = textOf(event.content)
    agentEventId = eventId
    const asked = (await memory.graph.in(eventId, 'MESSAGE'))[0]
    if (asked) user = textOf((await memory.events.get(asked.src)).content)
  } else {
    user = textOf(event.content) || JSON.stringify(event.content).slice(0, 200)
  }
  return {
    conversationId: event.scope.conversationId,
    turnIndex: event.turnIndex,
    user,
    agent,
    agentEventId,
    seen: agentEventId ? await versionsSeenBy(memory, agentEventId) : [],
  }
}

/** The document versions a reply's tool calls read or wrote, with their staleness now. */
export async function versionsSeenBy(memory: Memory, agentEventId: string): Promise<SeenVersion[]> {
  const edges = (await memory.graph.out(agentEventId)).filter((e) => e.dst.startsWith('ver_'))
  const seen: SeenVersion[] = []
  for (const edge of edges) {
    const staleness = await memory.documents.stalenessOf(edge.dst)
    const doc = await memory.documents.get({ documentId: staleness.documentId })
    seen.push({
      path: relPath(doc.canonicalKey),
      tool: edge.rel,
      versionId: edge.dst,
      version: staleness.version,
      latestVersion: staleness.latestVersion,
      staleness: staleness.staleness,
    })
  }
  return seen
}

/** "src/auth.ts v2 (now v3: 1 change since)" */
export function describeSeen(v: SeenVersion): string {
  if (v.staleness === 0) return `${v.path} v${v.version} (still current)`
  return `${v.path} v${v.version} (now v${v.latestVersion}: ${v.staleness} change${v.staleness === 1 ? '' : 's'} since — stale)`
}
