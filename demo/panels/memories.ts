import { showError } from '../errors.ts'
import { readable, type Store, USER_ID } from '../store.ts'
import { el } from '../tabs.ts'

/** The Memories panel: curated memories by category, with what replaced what and each one's history. */
export function memoriesPanel(store: Store, root: HTMLElement) {
  const render = async () => {
    const all = await store.memory.memories.list({ userId: USER_ID, status: 'any', limit: 1000 })
    const byId = new Map(all.map((m) => [m.id, m]))
    const categories = [...new Set(all.map((m) => m.category))].sort()
    const groups = categories.map((category) => {
      const items = all
        .filter((m) => m.category === category)
        .sort((a, b) => (a.status === 'active' ? 0 : 1) - (b.status === 'active' ? 0 : 1) || new Date(b.createdAt).getTime() - new Date(a.createdAt).getTime())
        .map((m) => {
          const history = el('button', { className: 'link', text: 'History', attrs: { type: 'button', 'aria-expanded': 'false' } })
          const shown = readable(m.content)
          const meta = el('div', { className: 'meta', text: `${m.status} · ${m.source} · confidence ${m.confidence} · used ${m.useCount}×` })
          if (m.sensitivity === 'high') meta.append(el('span', { className: 'sensitive', text: store.vault === 'none' ? 'sensitive' : 'sensitive · encrypted' }))
          const li = el('li', { className: `memory ${m.status}`, attrs: { 'data-memory': m.id } },
            el('div', { className: shown.sealed ? 'text sealed' : 'text', text: shown.text }),
            meta,
          )
          const successor = m.supersededBy ? byId.get(m.supersededBy) : undefined
          if (successor) li.append(el('div', { className: 'chain', text: `Replaced by: “${readable(successor.content).text}”` }))
          const predecessors = all.filter((p) => p.supersededBy === m.id)
          for (const p of predecessors) li.append(el('div', { className: 'chain', text: `Replaces: “${readable(p.content).text}”` }))
          li.append(history)
          history.addEventListener('click', () => {
            const open = li.querySelector('.history')
            if (open) {
              open.remove()
              history.setAttribute('aria-expanded', 'false')
              return
            }
            store.memory.memories
              .history(m.id)
              .then((rows) => {
                li.append(el('ol', { className: 'history' }, ...rows.map((r) => el('li', { text: `${new Date(r.createdAt).toLocaleString()} ${r.event}${r.newValue ? `: “${readable(r.newValue).text}”` : ''}${r.oldValue && r.event !== 'ADD' ? ` (was “${readable(r.oldValue).text}”)` : ''}` }))))
                history.setAttribute('aria-expanded', 'true')
              })
              .catch((error: unknown) => showError(error, 'read the memory history'))
          })
          return li
        })
      return el('section', { className: 'category' }, el('h4', { text: `${category} (${items.length})` }), el('ul', { className: 'memories' }, ...items))
    })
    root.replaceChildren(
      el('h3', { text: 'Memories' }),
      el('p', { className: 'hint', text: 'Curated memories: what the person asked to keep (“Remember this”, or “remember that …” in the chat). A near duplicate replaces the older one.' }),
      ...(groups.length ? groups : [el('p', { className: 'hint', text: 'None yet.' })]),
    )
  }
  return { render }
}
