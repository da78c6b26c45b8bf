import type { SyncReport } from '../../src/index.ts'
import { showError } from '../errors.ts'
import type { Store } from '../store.ts'
import { el } from '../tabs.ts'

/** The server address is kept in this browser; the token is not, so it is typed each visit. */
const URL_KEY = 'engram-demo-sync-url'

/** "3 events, 1 memory", or "nothing". */
export function describeRows(counts: Partial<Record<string, number>>): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([table, n]) => `${n} ${table.replaceAll('_', ' ')}`)
  return parts.length > 0 ? parts.join(', ') : 'nothing'
}

/**
 * The Sync panel: a server memory's address and this device's token, a button to sync, and
 * what the last sync sent and took. After a sync the page reads everything again.
 */
export function syncPanel(store: Store, root: HTMLElement, reload: () => Promise<void>) {
  const url = el('input', { attrs: { id: 'sync-url', type: 'url', placeholder: 'http://127.0.0.1:8787/sync', autocomplete: 'url' } })
  url.value = localStorage.getItem(URL_KEY) ?? ''
  const token = el('input', { attrs: { id: 'sync-token', type: 'password', autocomplete: 'off' } })
  const button = el('button', { text: 'Sync now', attrs: { type: 'button', id: 'sync-now' } })
  const status = el('p', { className: 'hint', attrs: { role: 'status', id: 'sync-status' } })
  let last: { report: SyncReport; at: Date } | null = null

  const show = () => {
    if (!last) {
      status.textContent = 'Not synced yet on this page.'
      return
    }
    status.textContent = `Last sync ${last.at.toLocaleTimeString()}: sent ${describeRows(last.report.pushed)}; took ${describeRows(last.report.pulled)}.`
  }

  button.addEventListener('click', () => {
    button.disabled = true
    status.textContent = 'Syncing…'
    localStorage.setItem(URL_KEY, url.value)
    store.memory
      .sync({ url: url.value, token: token.value })
      .then(async (report) => {
        last = { report, at: new Date() }
        show()
        await reload()
      })
      .catch((error: unknown) => {
        status.textContent = 'The sync failed; nothing of it is lost, and the next one goes on from where it stopped.'
        showError(error, 'sync with the server')
      })
      .finally(() => {
        button.disabled = false
      })
  })

  const render = () => {
    root.replaceChildren(
      el('h3', { text: 'Sync' }),
      el('p', {
        className: 'hint',
        text: 'Sync this memory with a server memory, to carry conversations, memories and notes to another browser or device. Serve one with serveSync() in Node (docs/sync.md), and give each device a token from devices.add().',
      }),
      el('div', { className: 'row wrap' }, el('label', { text: 'Server address', attrs: { for: 'sync-url' } }), url),
      el('div', { className: 'row wrap' }, el('label', { text: 'Device token', attrs: { for: 'sync-token' } }), token, button),
      status,
    )
    show()
    return Promise.resolve()
  }
  return { render }
}
