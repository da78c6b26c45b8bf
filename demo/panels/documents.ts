import { MemoryError } from '../../src/index.ts'
import { docPath } from '../project.ts'
import type { Store } from '../store.ts'
import { el } from '../tabs.ts'

const SHOWN_VERSIONS = 12

/** The Documents panel: each document's versions, who changed it, and which past turns now see an old version. */
export function documentsPanel(store: Store, root: HTMLElement) {
  const render = async () => {
    const m = store.memory
    const blocks: HTMLElement[] = []
    for (const tracked of store.documents) {
      let history
      try {
        history = await m.documents.history(docPath(tracked.path))
      } catch (error) {
        if (MemoryError.is(error, 'NOT_FOUND')) continue
        throw error
      }
      const signals = await m.documents.signals(docPath(tracked.path))
      const pending = tracked.workspace && (await store.latestContent(tracked.path)) !== (store.files.get(tracked.path) ?? null)
      const versions = history.versions.slice(-SHOWN_VERSIONS)
      const items: HTMLElement[] = []
      for (const v of versions) {
        const seenBy = (await m.graph.in(v.id)).filter((e) => e.conversationId !== null)
        const who = v.provenance === 'agent' ? 'written by the agent' : v.provenance === 'external' ? 'changed outside the agent' : 'first read'
        const stale = signals.staleness[v.id] ?? 0
        const turns = seenBy.map((e) => {
          const title = store.conversations.find((c) => c.id === e.conversationId)?.title ?? e.conversationId ?? ''
          return el('li', {
            className: stale > 0 ? 'stale' : 'fresh',
            text: `${e.rel} in “${title}”${e.turnIndex === null ? '' : ` turn ${e.turnIndex + 1}`}${stale > 0 ? ` — saw a version ${stale} behind` : ' — up to date'}`,
          })
        })
        items.push(
          el('li', { className: `version ${v.provenance}`, attrs: { 'data-version': String(v.version) } },
            el('span', { className: 'vnum', text: `v${v.version}` }),
            el('span', { className: 'prov', text: who }),
            el('time', { text: new Date(v.createdAt).toLocaleString(), attrs: { datetime: v.createdAt } }),
            turns.length ? el('ul', { className: 'seen-by', attrs: { 'aria-label': 'Turns that saw this version' } }, ...turns) : '',
          ),
        )
      }
      const facts = `${signals.versionCount} version${signals.versionCount === 1 ? '' : 's'} · ${signals.agentChanges} by the agent · ${signals.externalChanges} outside · seen in ${signals.familiarity} conversation${signals.familiarity === 1 ? '' : 's'} · ${signals.volatility.toFixed(2)} changes/day`
      const details = el('details', { className: 'document', attrs: { 'data-path': tracked.path } },
        el('summary', {}, el('code', { text: tracked.path }), el('span', { className: 'facts', text: facts })),
        pending ? el('p', { className: 'notice', text: 'Edited in the page since the memory last saw it: the agent\'s next read records an external version.' }) : '',
        history.versions.length > SHOWN_VERSIONS ? el('p', { className: 'hint', text: `The last ${SHOWN_VERSIONS} of ${history.versions.length} versions:` }) : '',
        el('ol', { className: 'timeline' }, ...items),
      )
      if (tracked.workspace) details.open = true
      blocks.push(details)
    }
    root.replaceChildren(
      el('h3', { text: 'Documents' }),
      blocks.length ? el('div', {}, ...blocks) : el('p', { className: 'hint', text: 'No document stored yet. Ask the agent to read a file.' }),
    )
  }
  return { render }
}
