import { type ContextBundle, type ContextItem, optionalApi, record, type ScoreExplain, searchHits, tryOptional } from '../api.ts'
import { eventIdOf, evidenceEventIds } from '../agent.ts'
import { describeSeen, pastTurn } from '../evidence.ts'
import type { Store } from '../store.ts'
import { el } from '../tabs.ts'

const BUDGETS = [500, 1000, 2000, 4000]
const EXPLAINED_EVIDENCE = 6

function fmt(n: number, digits = 2): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(digits)
}

/** "meaning #1 · similarity 0.62 · z 2.1", "words #2 · 3.140 · z 1.8", "recency 0.910", … as chips. */
export function explainChips(explain: Partial<ScoreExplain> | Record<string, unknown> | undefined): HTMLElement {
  const list = el('ul', { className: 'why', attrs: { 'aria-label': 'Why it was chosen' } })
  const e = (explain ?? {}) as Record<string, unknown>
  const vector = record(e.vector)
  const keyword = record(e.keyword)
  // z: how far above the list's average the hit stands, in standard deviations (what fusion weighs).
  const z = (list: Record<string, unknown>) => (typeof list.z === 'number' ? ` · z ${fmt(list.z, 1)}` : '')
  if (vector) list.append(el('li', { className: 'vector', text: `meaning #${String(vector.rank)} · similarity ${fmt(Number(vector.similarity))}${z(vector)}` }))
  else if ('vector' in e) list.append(el('li', { className: 'off', text: 'no meaning match' }))
  if (keyword) list.append(el('li', { className: 'keyword', text: `words #${String(keyword.rank)} · ${fmt(Number(keyword.score), 3)}${z(keyword)}` }))
  else if ('keyword' in e) list.append(el('li', { className: 'off', text: 'no word match' }))
  for (const key of ['fused', 'recency', 'staleness', 'familiarity', 'importance', 'final']) {
    const value = e[key]
    if (typeof value === 'number') list.append(el('li', { className: key, text: `${key} ${fmt(value, 3)}` }))
  }
  for (const [key, value] of Object.entries(e)) {
    if (['vector', 'keyword', 'fused', 'recency', 'staleness', 'familiarity', 'importance', 'final'].includes(key)) continue
    if (typeof value === 'number' || typeof value === 'string') list.append(el('li', { text: `${key} ${typeof value === 'number' ? fmt(value, 3) : value}` }))
  }
  return list
}

function tokenBar(used: number, cap: number, label: string): HTMLElement {
  const bar = el('div', {
    className: 'tokenbar',
    attrs: { role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': String(cap), 'aria-valuenow': String(used), 'aria-label': label },
  })
  const fill = el('div', { className: 'fill' })
  fill.style.width = `${cap > 0 ? Math.min(100, (used / cap) * 100) : 0}%`
  bar.append(fill)
  return bar
}

/** The Context panel: what the memory would put in front of the agent for the current input, and why. */
export function contextPanel(store: Store, root: HTMLElement) {
  let budget = 2000
  const render = async () => {
    const query = store.query
    const picker = el('select', { attrs: { id: 'budget' } }, ...BUDGETS.map((b) => el('option', { text: `${b} tokens`, attrs: { value: String(b) } })))
    picker.value = String(budget)
    picker.addEventListener('change', () => {
      budget = Number(picker.value)
      void render()
    })
    const head = el('div', { className: 'row' }, el('label', { text: 'Budget', attrs: { for: 'budget' } }), picker)
    if (!query) {
      root.replaceChildren(el('h3', { text: 'Context' }), head, el('p', { className: 'hint', text: 'Type a message: this panel shows what the memory retrieves for it and why.' }))
      return
    }
    const body: HTMLElement[] = [el('h3', { text: 'Context' }), el('p', { className: 'query' }, 'For: ', el('q', { text: query })), head]
    const bundle = await tryOptional<ContextBundle>(() =>
      optionalApi(store.memory).buildContext({ query, conversationId: store.currentId, channel: 'private', maxTokens: budget }),
    )
    let evidence: ContextItem[] = []
    if (bundle.available) {
      const b = bundle.value
      body.push(
        el('p', { className: 'total', text: `${b.tokenUsedEst} of ${b.budgetTokens} tokens used` }),
        tokenBar(b.tokenUsedEst, b.budgetTokens, 'Tokens used of the budget'),
      )
      for (const section of b.sections) {
        const items = section.items.map((item) => {
          const li = el('li', { className: `item ${item.kind}`, attrs: { 'data-id': item.id, 'data-event': eventIdOf(item) ?? '' } })
          li.append(
            el('div', { className: 'meta', text: `${item.kind} · ${item.tokens} tokens · score ${fmt(item.score, 3)}` }),
            el('div', { className: 'text', text: item.text.length > 300 ? `${item.text.slice(0, 299)}…` : item.text }),
            explainChips(item.explain),
          )
          return li
        })
        body.push(
          el('section', { className: 'section', attrs: { 'data-section': section.name } },
            el('h4', { text: `${section.name} — ${section.usedTokens}/${section.capTokens} tokens` }),
            tokenBar(section.usedTokens, section.capTokens, `${section.name}: tokens used of its cap`),
            items.length ? el('ol', { className: 'items' }, ...items) : el('p', { className: 'hint', text: 'Nothing chosen.' }),
          ),
        )
      }
      evidence = b.sections.flatMap((s) => s.items)
      const omissions = Array.isArray(b.omissions) ? b.omissions : []
      if (omissions.length) {
        body.push(el('details', {}, el('summary', { text: `${omissions.length} left out` }), el('pre', { text: JSON.stringify(omissions, null, 2).slice(0, 4000) })))
      }
    } else {
      const hits = await searchHits(store.memory, query, { limit: 10 })
      if (!hits.available) {
        body.push(el('p', { className: 'notice', attrs: { role: 'note' }, text: 'Retrieval (buildContext and search) is not in this build of the memory yet. The log, graph and documents still work; retrieval appears here once it lands.' }))
      } else {
        body.push(el('p', { className: 'notice', text: 'buildContext is not in this build yet: showing search hits.' }))
        const items = hits.value.map((h) => {
          evidence.push({ id: h.eventId, kind: h.kind, text: h.text, tokens: 0, score: h.score, explain: h.explain, source: { eventId: h.eventId, chunkId: h.chunkId } })
          return el('li', { className: `item ${h.kind}`, attrs: { 'data-id': h.chunkId, 'data-event': h.eventId } },
            el('div', { className: 'meta', text: `${h.kind} · ${h.conversationId}${h.turnIndex === null ? '' : ` turn ${h.turnIndex + 1}`} · score ${fmt(h.score, 3)}` }),
            el('div', { className: 'text', text: h.text }),
            explainChips(h.explain),
          )
        })
        body.push(items.length ? el('ol', { className: 'items' }, ...items) : el('p', { className: 'hint', text: 'No hits.' }))
      }
    }
    root.replaceChildren(...body)
    // Where each piece of evidence came from, and whether the files it saw have changed since.
    for (const id of evidenceEventIds(evidence).slice(0, EXPLAINED_EVIDENCE)) {
      const turn = await pastTurn(store.memory, id)
      const title = store.conversations.find((c) => c.id === turn.conversationId)?.title ?? turn.conversationId
      const from = `from “${title}”${turn.turnIndex === null ? '' : `, turn ${turn.turnIndex + 1}`}`
      const seen = turn.seen.map((v) => el('li', { className: v.staleness > 0 ? 'stale' : 'fresh', text: describeSeen(v) }))
      for (const target of root.querySelectorAll<HTMLElement>(`[data-event="${id}"]`)) {
        target.append(el('div', { className: 'source', text: from }))
        if (seen.length) target.append(el('ul', { className: 'seen', attrs: { 'aria-label': 'Documents it saw' } }, ...seen.map((s) => s.cloneNode(true))))
      }
    }
  }
  return { render }
}
