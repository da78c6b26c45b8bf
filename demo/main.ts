import { createMemory, deleteMemory, type EmbedderInfo, type Memory, type VaultInput } from '../src/index.ts'
import { indexingView } from './api.ts'
import { setupChat } from './chat.ts'
import { explainError, showError } from './errors.ts'
import { loadHistory, setupChatImport } from './history.ts'
import { ROOT } from './project.ts'
import { contextPanel } from './panels/context.ts'
import { documentsPanel } from './panels/documents.ts'
import { graphPanel } from './panels/graph.ts'
import { memoriesPanel } from './panels/memories.ts'
import { storagePanel } from './panels/storage.ts'
import { syncPanel } from './panels/sync.ts'
import { type Change, Store } from './store.ts'
import { setupTabs } from './tabs.ts'

const MEMORY_NAME = 'engram-demo'
const HISTORY = { conversations: 6, turns: 3000 }

function q<T extends HTMLElement>(selector: string): T {
  const node = document.querySelector<T>(selector)
  if (!node) throw new Error(`missing ${selector}`)
  return node
}

const status = q<HTMLParagraphElement>('#status')

const OPTIONS = { name: MEMORY_NAME, persist: true, workspace: { mode: 'local', root: ROOT } } as const

/** Opens the memory once it has booted: a wrong passphrase fails here, and its worker ends. */
function open(vault?: VaultInput): Promise<Memory> {
  return createMemory({ ...OPTIONS, ...(vault ? { vault } : {}) })
}

/**
 * A memory whose sensitive content is encrypted asks for its passphrase before the page uses
 * it; the person may also open it locked. Each try closes the locked memory and opens it with
 * the passphrase given.
 */
async function unlock(locked: Memory): Promise<Memory> {
  const dialog = q<HTMLDialogElement>('#unlock-dialog')
  const input = q<HTMLInputElement>('#unlock-passphrase')
  const error = q<HTMLParagraphElement>('#unlock-error')
  let memory: Memory | null = locked
  for (;;) {
    input.value = ''
    // Escape closes the dialog without touching returnValue: start each round from none.
    dialog.returnValue = ''
    dialog.showModal()
    const choice = await new Promise<string>((resolve) => {
      dialog.addEventListener('close', () => resolve(dialog.returnValue), { once: true })
    })
    if (choice !== 'unlock') return memory ?? open()
    status.textContent = 'Unlocking…'
    await memory?.close()
    memory = null
    try {
      return await open({ passphrase: input.value })
    } catch (cause) {
      const e = explainError(cause)
      error.textContent = `${e.message} ${e.advice}`
      status.textContent = 'This memory is encrypted.'
    }
  }
}

async function start(): Promise<void> {
  let memory: Memory
  try {
    memory = await open()
    if ((await memory.vault.status()) === 'locked') memory = await unlock(memory)
  } catch (error) {
    const e = explainError(error)
    status.textContent = `The memory could not start (${e.code}): ${e.message} ${e.advice}`
    return
  }
  const boot = await memory.ready
  const store = new Store(memory)
  await store.load()
  const where = boot.storage === 'opfs' ? 'OPFS' : boot.storage === 'idb' ? 'IndexedDB' : 'memory'
  const lock = store.vault === 'open' ? ', sensitive content encrypted' : store.vault === 'locked' ? ', locked: sensitive content unreadable' : ''
  status.textContent = `Memory ready in ${where} (${boot.created ? 'new' : 'reopened'}, ${Math.round(boot.bootMs)} ms${lock}).`
  // Before the page says it is ready: a file chosen at once must find its listener.
  setupChatImport(store)
  document.body.dataset.ready = 'true'

  watchModel(memory, () => watchIndexing())
  const chat = setupChat(store)
  const panels: Record<string, { render: () => Promise<void> }> = {
    'panel-context': contextPanel(store, q('#panel-context')),
    'panel-graph': graphPanel(store, q('#panel-graph')),
    'panel-documents': documentsPanel(store, q('#panel-documents')),
    'panel-memories': memoriesPanel(store, q('#panel-memories')),
    'panel-storage': storagePanel(store, q('#panel-storage'), boot, {
      clear: async () => {
        delete document.body.dataset.ready
        status.textContent = 'Deleting this memory…'
        await memory.close()
        await deleteMemory(MEMORY_NAME)
        location.reload()
      },
      reload: async () => {
        await store.load()
        store.changed('all')
      },
    }),
    'panel-sync': syncPanel(store, q('#panel-sync'), async () => {
      await store.load()
      store.changed('all')
    }),
  }
  let active = 'panel-context'
  const dirty = new Set(Object.keys(panels))
  let rendering: Promise<void> = Promise.resolve()
  const renderPanel = (id: string) => {
    const panel = panels[id]
    if (!panel) return
    dirty.delete(id)
    rendering = rendering
      .then(() => panel.render())
      .then(() => q(`#${id}`).setAttribute('data-rendered', String(Date.now())))
      .catch((error: unknown) => showError(error, 'update the panel'))
  }
  setupTabs(q('#tabs'), (id) => {
    active = id
    if (dirty.has(id)) renderPanel(id)
  })
  store.onChange((what: Change) => {
    for (const id of Object.keys(panels)) dirty.add(id)
    if (what !== 'files' || active === 'panel-documents') renderPanel(active)
    if (what !== 'memories') chat.render().catch((error: unknown) => showError(error, 'show the conversation'))
    watchIndexing()
  })
  await chat.render()
  renderPanel(active)
  watchIndexing()

  const historyButton = q<HTMLButtonElement>('#load-history')
  const markLoaded = () => {
    if (store.conversations.some((c) => c.id.startsWith('history-'))) {
      historyButton.disabled = true
      historyButton.textContent = 'Larger history loaded'
    }
  }
  markLoaded()
  historyButton.textContent = `Load a larger history (${HISTORY.turns.toLocaleString()} turns)`
  markLoaded()
  historyButton.addEventListener('click', () => {
    const box = q<HTMLDivElement>('#history-progress')
    const bar = q<HTMLProgressElement>('#history-bar')
    const text = q<HTMLSpanElement>('#history-text')
    historyButton.disabled = true
    box.hidden = false
    const started = performance.now()
    loadHistory(store, HISTORY, (done, total) => {
      bar.value = done / total
      const rate = done / ((performance.now() - started) / 1000)
      text.textContent = `${done.toLocaleString()} / ${total.toLocaleString()} (${Math.round(rate)} turns/s)`
    })
      .then(() => {
        text.textContent += ' — done'
        markLoaded()
        store.changed('all')
      })
      .catch((error: unknown) => {
        historyButton.disabled = false
        showError(error, 'write the generated history')
      })
  })

  function watchIndexing(): void {
    if (watching) return
    watching = true
    const tick = async () => {
      const view = indexingView((await memory.stats()) as unknown as Record<string, unknown>)
      const index = q<HTMLDivElement>('#index-progress')
      const badge = q<HTMLSpanElement>('#search-mode')
      const total = (view.embedded ?? 0) + view.pending
      // Meaning counts from the moment the model is ready; until then every search is by keyword.
      const keywordOnly = modelState !== 'ready' || view.vectors === false
      index.hidden = keywordOnly || view.pending === 0
      if (total > 0) q<HTMLProgressElement>('#index-bar').value = (view.embedded ?? 0) / total
      q<HTMLSpanElement>('#index-text').textContent = `${view.pending.toLocaleString()} chunks to embed`
      badge.hidden = false
      badge.textContent = keywordOnly
        ? modelState === 'loading'
          ? 'keyword search (model loading)'
          : 'keyword search only'
        : view.pending > 0 ? 'meaning + keyword search (indexing)' : 'meaning + keyword search'
      badge.title = keywordOnly
        ? 'No embedding model is running in this memory: search matches words, not meaning.'
        : 'Search matches meaning (embeddings) and words.'
      return view.pending > 0 && !keywordOnly
    }
    const loop = () => {
      tick()
        .then((again) => {
          if (again) setTimeout(loop, 1500)
          else watching = false
        })
        .catch(() => {
          watching = false
        })
    }
    loop()
  }
}

let watching = false
/** Where the embedding model stands, as `watchModel` last saw it. */
let modelState: EmbedderInfo['state'] = 'loading'

/**
 * Shows the model's stages as they happen: its files downloading (a bar of the bytes read),
 * then starting, then gone once it is ready. `changed` runs once it is ready or unavailable,
 * so the badge says at once that searches now match meaning.
 */
function watchModel(memory: Memory, changed: () => void): void {
  const box = q<HTMLDivElement>('#model-progress')
  const bar = q<HTMLProgressElement>('#model-bar')
  const text = q<HTMLSpanElement>('#model-text')
  const files = new Map<string, { loaded: number; total: number }>()
  const mb = (bytes: number) => (bytes / 1e6).toFixed(1)
  const stop = memory.onProgress((p) => {
    if (modelState !== 'loading') return
    box.hidden = false
    if (p.stage === 'progress' && p.total > 0) files.set(p.file, { loaded: p.loaded, total: p.total })
    if (p.stage === 'done') files.set(p.file, { loaded: p.total, total: p.total })
    let loaded = 0
    let total = 0
    for (const f of files.values()) {
      loaded += f.loaded
      total += f.total
    }
    if (p.stage === 'ready' || (total > 0 && loaded >= total && p.stage === 'done' && p.file.endsWith('.onnx'))) {
      // The files are in; the runtime now compiles and the model's session is made.
      bar.removeAttribute('value')
      text.textContent = 'starting…'
    } else if (total > 0) {
      bar.value = loaded / total
      text.textContent = `${mb(loaded)} / ${mb(total)} MB`
    }
  })
  const poll = async () => {
    const info = await memory.embedderInfo()
    if (info.state === 'loading') {
      box.hidden = false
      setTimeout(() => void poll().catch(() => {}), 250)
      return
    }
    modelState = info.state
    stop()
    box.hidden = true
    changed()
  }
  poll().catch(() => {})
}
start().catch((error: unknown) => showError(error, 'start the demo'))
