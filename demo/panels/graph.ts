import cytoscape from 'cytoscape'
import type { Memory } from '../../src/index.ts'
import { showError } from '../errors.ts'
import { relPath } from '../project.ts'
import type { Store } from '../store.ts'
import { el } from '../tabs.ts'

/** The newest turns drawn; older ones stay in the memory (the chat says how many). */
const DRAWN_TURNS = 12

type Graph = Awaited<ReturnType<Memory['graph']['conversation']>>

function short(text: string, max = 28): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

function elements(graph: Graph, title: string): cytoscape.ElementDefinition[] {
  const lastTurn = Math.max(-1, ...graph.events.map((e) => e.turnIndex ?? -1))
  const events = graph.events.filter((e) => e.turnIndex === null || e.turnIndex > lastTurn - DRAWN_TURNS)
  const ids = new Set<string>()
  const out: cytoscape.ElementDefinition[] = []
  let previousTurn: string | undefined
  const conv = `conversation:${graph.conversationId}`
  out.push({ data: { id: conv, label: short(title, 32), kind: 'conversation' } })
  for (const e of events) {
    const text = typeof e.content.text === 'string' ? e.content.text : typeof e.content.tool === 'string' ? e.content.tool : e.kind
    const kind = e.kind === 'message' ? (e.actor.type === 'human' ? 'user' : 'agent') : e.kind
    out.push({ data: { id: e.id, label: `${kind === 'user' ? 'You' : kind === 'agent' ? 'Agent' : kind}: ${short(text)}`, kind } })
    ids.add(e.id)
    if (kind === 'user') {
      // Turns hang off the conversation in a chain, so the drawing reads top to bottom.
      out.push({ data: { id: `turn:${e.id}`, source: previousTurn ?? conv, target: e.id, label: `turn ${(e.turnIndex ?? 0) + 1}`, rel: 'TURN' } })
      previousTurn = e.id
    }
  }
  const documents = new Map(graph.documents.map((d) => [d.id, d]))
  const touched = new Set(graph.edges.filter((e) => ids.has(e.src)).map((e) => e.dst))
  const versions = graph.versions.filter((v) => touched.has(v.id))
  const used = new Set<string>()
  for (const v of versions) {
    const doc = documents.get(v.documentId)
    const name = doc ? relPath(doc.canonicalKey).split('/').at(-1) ?? doc.canonicalKey : 'document'
    out.push({ data: { id: v.id, label: `${name} v${v.version}`, kind: 'version', provenance: v.provenance } })
    ids.add(v.id)
    used.add(v.documentId)
  }
  for (const id of used) {
    const doc = documents.get(id)
    if (!doc) continue
    out.push({ data: { id, label: relPath(doc.canonicalKey), kind: 'document' } })
    ids.add(id)
  }
  for (const e of graph.edges) {
    if (!ids.has(e.src) || !ids.has(e.dst)) continue
    out.push({ data: { id: e.id, source: e.src, target: e.dst, label: e.rel, rel: e.rel } })
  }
  return out
}

const STYLE: cytoscape.StylesheetJson = [
  {
    selector: 'node',
    style: {
      label: 'data(label)',
      'font-size': 9,
      color: '#1b1f24',
      'text-wrap': 'wrap',
      'text-max-width': '110px',
      'text-valign': 'bottom',
      'text-margin-y': 3,
      width: 18,
      height: 18,
      'background-color': '#8a94a6',
      'border-width': 1,
      'border-color': '#fff',
    },
  },
  { selector: 'node[kind = "conversation"]', style: { shape: 'round-rectangle', width: 26, height: 26, 'background-color': '#5b3cc4', 'font-weight': 'bold', 'text-valign': 'top', 'text-margin-y': -3 } },
  { selector: 'node[kind = "user"]', style: { 'background-color': '#1f6feb' } },
  { selector: 'node[kind = "agent"]', style: { 'background-color': '#1a7f37' } },
  { selector: 'node[kind = "tool_call"], node[kind = "tool_result"]', style: { shape: 'diamond', 'background-color': '#9a6700' } },
  { selector: 'node[kind = "version"]', style: { shape: 'round-rectangle', 'background-color': '#bf8700' } },
  { selector: 'node[provenance = "external"]', style: { 'background-color': '#cf222e' } },
  { selector: 'node[kind = "document"]', style: { shape: 'hexagon', width: 24, height: 24, 'background-color': '#6e40c9' } },
  { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#0b57d0' } },
  {
    selector: 'edge',
    style: {
      width: 1.2,
      'line-color': '#b6bfcc',
      'target-arrow-color': '#b6bfcc',
      'target-arrow-shape': 'triangle',
      'arrow-scale': 0.7,
      'curve-style': 'bezier',
      label: 'data(label)',
      'font-size': 7,
      color: '#57606a',
      'text-rotation': 'autorotate',
    },
  },
  { selector: 'edge[rel = "TURN"]', style: { 'line-style': 'dashed', label: '' } },
  { selector: 'edge[rel = "write_file"]', style: { 'line-color': '#1a7f37', 'target-arrow-color': '#1a7f37' } },
]

/** The Graph panel: the current conversation's turns, tool-call edges and document versions. */
export function graphPanel(store: Store, root: HTMLElement) {
  const canvas = el('div', { className: 'graph', attrs: { role: 'img', 'aria-label': 'Graph of the conversation' } })
  const legend = el('p', { className: 'legend' },
    ...[['user', 'your message'], ['agent', 'agent reply'], ['tool', 'tool call'], ['version', 'document version'], ['external', 'external change'], ['document', 'document']].map(([k, t]) =>
      el('span', { className: `key key-${k ?? ''}`, text: t ?? '' }),
    ),
  )
  const detail = el('div', { className: 'node-detail', attrs: { 'aria-live': 'polite' } }, el('p', { className: 'hint', text: 'Click a node to see what it holds.' }))
  const summary = el('p', { className: 'hint' })
  const expand = el('button', { text: 'Show neighbours', attrs: { type: 'button', disabled: '' } })
  const listing = el('ul', { className: 'node-list' })
  const asList = el('details', { className: 'as-list' }, el('summary', { text: 'The graph as a list' }), listing)
  root.replaceChildren(el('h3', { text: 'Graph' }), summary, legend, canvas, el('div', { className: 'row' }, expand), asList, detail)
  let cy: cytoscape.Core | undefined
  let selected: string | null = null

  const show = async (id: string) => {
    selected = id
    expand.disabled = id.startsWith('conversation:')
    const m = store.memory
    if (id.startsWith('evt_')) {
      const event = await m.events.get(id)
      detail.replaceChildren(
        el('h4', { text: `${event.kind} by ${event.actor.type} ${event.actor.id}` }),
        el('p', { className: 'meta', text: `${event.scope.conversationId}${event.turnIndex === null ? '' : `, turn ${event.turnIndex + 1}`} · ${new Date(event.createdAt).toLocaleString()}` }),
        el('pre', { text: typeof event.content.text === 'string' ? event.content.text : JSON.stringify(event.content, null, 2) }),
      )
    } else if (id.startsWith('ver_')) {
      const v = await m.documents.version(id)
      const doc = await m.documents.get({ documentId: v.documentId })
      const staleness = await m.documents.stalenessOf(id)
      detail.replaceChildren(
        el('h4', { text: `${relPath(doc.canonicalKey)} version ${v.version} (${v.provenance})` }),
        el('p', { className: 'meta', text: staleness.staleness === 0 ? 'This is the latest version.' : `${staleness.staleness} newer version${staleness.staleness === 1 ? '' : 's'} since: latest is v${staleness.latestVersion}.` }),
        el('pre', { text: v.content ?? '(content not kept)' }),
      )
    } else if (id.startsWith('doc_')) {
      const { document, versions } = await m.documents.history({ documentId: id })
      detail.replaceChildren(
        el('h4', { text: relPath(document.canonicalKey) }),
        el('ol', {}, ...versions.map((v) => el('li', { text: `v${v.version} — ${v.provenance} — ${new Date(v.createdAt).toLocaleString()}` }))),
      )
    } else {
      const c = store.current
      detail.replaceChildren(el('h4', { text: c?.title ?? id }), el('p', { text: `${c?.turns ?? 0} turns` }))
    }
  }

  expand.addEventListener('click', () => {
    if (!selected || !cy) return
    const core = cy
    store.memory.graph
      .walk(selected, { depth: 2, limit: 60 })
      .then((walk) => {
        const add: cytoscape.ElementDefinition[] = []
        for (const n of walk.nodes) {
          if (core.getElementById(n.id).nonempty()) continue
          add.push({ data: { id: n.id, label: n.kind === 'version' ? 'version' : n.kind === 'event' ? 'event' : n.kind ?? n.id, kind: n.kind === 'event' ? 'agent' : (n.kind ?? 'other') } })
        }
        for (const e of walk.edges) {
          if (core.getElementById(e.id).nonempty()) continue
          add.push({ data: { id: e.id, source: e.src, target: e.dst, label: e.rel, rel: e.rel } })
        }
        core.add(add)
        core.layout({ name: 'cose', animate: false }).run()
        summary.textContent = `Walked two steps from the selected node: ${walk.nodes.length} nodes, ${walk.edges.length} edges${walk.truncated ? ' (cut short)' : ''}.`
      })
      .catch((error: unknown) => showError(error, 'walk the graph'))
  })

  const render = async () => {
    const conversation = store.current
    if (!conversation) return
    const graph = await store.memory.graph.conversation(conversation.id)
    const els = elements(graph, conversation.title)
    const turns = graph.events.filter((e) => e.kind === 'message' && e.actor.type === 'human').length
    summary.textContent = `${turns} turn${turns === 1 ? '' : 's'}, ${graph.edges.length} edges, ${graph.versions.length} document versions${turns > DRAWN_TURNS ? ` — the last ${DRAWN_TURNS} turns are drawn` : ''}.`
    cy?.destroy()
    cy = cytoscape({
      container: canvas,
      elements: els,
      style: STYLE,
      layout:
        turns <= 3
          ? { name: 'breadthfirst', directed: true, roots: [`conversation:${conversation.id}`], spacingFactor: 1.25, padding: 16 }
          : { name: 'cose', animate: false, padding: 16, nodeRepulsion: () => 9000, idealEdgeLength: () => 40 },
      wheelSensitivity: 0.3,
      minZoom: 0.2,
      maxZoom: 3,
    })
    listing.replaceChildren(
      ...els
        .filter((e) => e.data.source === undefined)
        .map((e) => {
          const id = e.data.id ?? ''
          const button = el('button', { className: 'link', text: String(e.data.label), attrs: { type: 'button', 'data-node': id, 'data-kind': String(e.data.kind) } })
          button.addEventListener('click', () => {
            cy?.$(':selected').unselect()
            cy?.getElementById(id).select()
            show(id).catch((error: unknown) => showError(error, 'show the node'))
          })
          return el('li', {}, button)
        }),
    )
    cy.on('tap', 'node', (event) => {
      const node = event.target as cytoscape.NodeSingular
      show(node.id()).catch((error: unknown) => showError(error, 'show the node'))
    })
  }
  return { render, get cy() { return cy } }
}
