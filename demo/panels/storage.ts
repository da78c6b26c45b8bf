import type { BootInfo, VaultStatus } from '../../src/index.ts'
import { indexingView, optionalApi, tryOptional } from '../api.ts'
import { showError } from '../errors.ts'
import type { Store } from '../store.ts'
import { el } from '../tabs.ts'

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  let v = n / 1024
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`
}

const STORAGE_NAMES: Record<string, string> = {
  opfs: 'the Origin Private File System (OPFS)',
  idb: 'IndexedDB',
  memory: 'memory only (nothing kept after closing)',
}

const VAULT_STATES: Record<VaultStatus, string> = {
  none: 'stored as written (no passphrase set)',
  open: 'encrypted at rest',
  locked: 'encrypted, and unreadable here: this page opened the memory without its passphrase',
}

const VAULT_HINTS: Record<VaultStatus, string> = {
  none: 'Messages and memories marked “Sensitive” are kept out of search. With a passphrase they are also encrypted in this browser’s storage, and the demo asks for it each time it opens. Export files hold them open: give the file a passphrase of its own.',
  open: 'Messages and memories marked “Sensitive” are encrypted in this browser’s storage. A new passphrase replaces the old one.',
  locked: 'Reload the page and give the passphrase to read sensitive content or change the passphrase.',
}

export interface StorageActions {
  /** Deletes this memory from the browser and starts an empty one. */
  clear(): Promise<void>
  /** Re-reads everything after an import. */
  reload(): Promise<void>
}

/** The Storage panel: where the memory lives, how big it is, export, import and clear. */
export function storagePanel(store: Store, root: HTMLElement, boot: BootInfo, actions: StorageActions) {
  const status = el('p', { className: 'hint', attrs: { role: 'status', id: 'storage-status' } })
  const exportButton = el('button', { text: 'Export memory', attrs: { type: 'button', id: 'export' } })
  const fileInput = el('input', { attrs: { type: 'file', id: 'import-file', accept: '.engram,application/octet-stream,*/*' } })
  const importButton = el('button', { text: 'Import (replaces everything)', attrs: { type: 'button', id: 'import' } })
  const filePassphrase = el('input', { attrs: { type: 'password', id: 'file-passphrase', autocomplete: 'off' } })
  const clearButton = el('button', { className: 'danger', text: 'Clear memory', attrs: { type: 'button', id: 'clear' } })
  const facts = el('dl', { className: 'facts' })
  const vaultLabel = el('label', { attrs: { for: 'vault-passphrase' } })
  const vaultInput = el('input', { attrs: { type: 'password', id: 'vault-passphrase', autocomplete: 'new-password', minlength: '8' } })
  const vaultButton = el('button', { attrs: { type: 'button', id: 'vault-set' } })
  const vaultHint = el('p', { className: 'hint' })
  const vaultRow = el('div', { className: 'row wrap' }, vaultLabel, vaultInput, vaultButton)
  const counts = el('table', { className: 'counts' })

  exportButton.addEventListener('click', () => {
    status.textContent = 'Exporting…'
    const passphrase = filePassphrase.value
    tryOptional(() => optionalApi(store.memory).exportFile(passphrase ? { passphrase } : {}))
      .then((result) => {
        if (!result.available) {
          status.textContent = 'Export is not in this build of the memory yet.'
          return
        }
        const url = URL.createObjectURL(result.value)
        const a = el('a', { attrs: { href: url, download: `engram-demo-${new Date().toISOString().slice(0, 19).replace(/:/g, '-')}.engram` } })
        document.body.append(a)
        a.click()
        a.remove()
        setTimeout(() => URL.revokeObjectURL(url), 10_000)
        status.textContent = `Exported ${formatBytes(result.value.size)}.`
      })
      .catch((error: unknown) => {
        status.textContent = ''
        showError(error, 'export the memory')
      })
  })

  importButton.addEventListener('click', () => {
    const file = fileInput.files?.[0]
    if (!file) {
      status.textContent = 'Choose an exported file first.'
      fileInput.focus()
      return
    }
    status.textContent = `Importing ${file.name}…`
    const passphrase = filePassphrase.value
    tryOptional(() => optionalApi(store.memory).importFile(file, { mode: 'replace', ...(passphrase ? { passphrase } : {}) }))
      .then(async (result) => {
        if (!result.available) {
          status.textContent = 'Import is not in this build of the memory yet.'
          return
        }
        await actions.reload()
        status.textContent = `Imported ${file.name}.`
      })
      .catch((error: unknown) => {
        status.textContent = ''
        showError(error, 'import the file')
      })
  })

  vaultButton.addEventListener('click', () => {
    const passphrase = vaultInput.value
    const first = store.vault === 'none'
    status.textContent = first ? 'Encrypting the sensitive content already stored…' : 'Changing the passphrase…'
    store.memory.vault
      .setKey({ passphrase })
      .then(async (state) => {
        store.vault = state
        vaultInput.value = ''
        status.textContent = first
          ? 'Sensitive content is now encrypted at rest. The demo asks for this passphrase when it opens again.'
          : 'Passphrase changed: the old one opens this memory no more.'
        await render()
        store.changed('all')
      })
      .catch((error: unknown) => {
        status.textContent = ''
        showError(error, 'set the passphrase')
      })
  })

  clearButton.addEventListener('click', () => {
    if (!confirm('Delete everything this memory holds? Export first if you want to keep it.')) return
    status.textContent = 'Clearing…'
    actions.clear().catch((error: unknown) => showError(error, 'clear the memory'))
  })

  root.replaceChildren(
    el('h3', { text: 'Storage' }),
    facts,
    el('div', { className: 'row wrap' }, el('label', { text: 'File passphrase (optional: encrypts the export, opens an encrypted file)', attrs: { for: 'file-passphrase' } }), filePassphrase),
    el('div', { className: 'row wrap' }, exportButton, clearButton),
    el('div', { className: 'row wrap' }, el('label', { text: 'Exported file', attrs: { for: 'import-file' } }), fileInput, importButton),
    el('h4', { text: 'Encryption at rest' }),
    vaultHint,
    vaultRow,
    status,
    el('h4', { text: 'Rows by table' }),
    counts,
  )

  const render = async () => {
    const stats = await store.memory.stats()
    const estimate = typeof navigator.storage?.estimate === 'function' ? await navigator.storage.estimate() : null
    const persisted = typeof navigator.storage?.persisted === 'function' ? await navigator.storage.persisted() : null
    const indexing = indexingView(stats as unknown as Record<string, unknown>)
    vaultRow.hidden = store.vault === 'locked'
    vaultLabel.textContent = store.vault === 'none' ? 'New passphrase (8 characters or more)' : 'New passphrase'
    vaultButton.textContent = store.vault === 'none' ? 'Encrypt sensitive content' : 'Change passphrase'
    vaultHint.textContent = VAULT_HINTS[store.vault]
    const rows: [string, string][] = [
      ['Stored in', STORAGE_NAMES[boot.storage] ?? boot.storage],
      ['Data directory', boot.dataDir],
      ['This tab', boot.role === 'follower' ? 'uses the memory another tab holds' : 'holds the memory'],
      ['Started', `${boot.created ? (boot.fromTemplate ? 'new, from the bundled template' : 'new') : 'existing memory'} in ${Math.round(boot.bootMs)} ms`],
      ['Sensitive content', VAULT_STATES[store.vault]],
      ['Database size', formatBytes(stats.bytes)],
      ['Schema', `v${stats.schemaVersion}`],
      ['Site storage used', estimate?.usage === undefined ? 'unknown' : `${formatBytes(estimate.usage)} of ${estimate.quota === undefined ? '?' : formatBytes(estimate.quota)} allowed`],
      ['Kept under pressure', persisted === null ? 'unknown' : persisted ? 'yes (persistent)' : 'no (the browser may evict it)'],
      [
        'Embeddings',
        indexing.vectors === false || (indexing.vectors === null && !indexing.embedded)
          ? `none: keyword search only (${indexing.pending.toLocaleString()} chunks not embedded)`
          : `${(indexing.embedded ?? 0).toLocaleString()} chunks embedded, ${indexing.pending.toLocaleString()} waiting`,
      ],
      ['Events', stats.oldestEventAt ? `${new Date(stats.oldestEventAt).toLocaleDateString()} – ${new Date(stats.newestEventAt ?? stats.oldestEventAt).toLocaleDateString()}` : 'none yet'],
    ]
    facts.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })]))
    counts.replaceChildren(
      el('thead', {}, el('tr', {}, el('th', { text: 'table', attrs: { scope: 'col' } }), el('th', { text: 'rows', attrs: { scope: 'col' } }))),
      el('tbody', {}, ...Object.entries(stats.counts).sort(([a], [b]) => a.localeCompare(b)).map(([t, n]) => el('tr', {}, el('td', { text: t }), el('td', { text: n.toLocaleString() })))),
    )
  }
  return { render }
}
