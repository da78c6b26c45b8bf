import { respond } from './agent.ts'
import { showError } from './errors.ts'
import { relPath } from './project.ts'
import { AGENT_ID, readable, type Store, USER_ID } from './store.ts'
import { el } from './tabs.ts'

const SHOWN_TURNS = 40

function q<T extends HTMLElement>(selector: string): T {
  const node = document.querySelector<T>(selector)
  if (!node) throw new Error(`missing ${selector}`)
  return node
}

/** The conversation list, the message log, the composer and the project's files. */
export function setupChat(store: Store): { render: () => Promise<void> } {
  const list = q<HTMLUListElement>('#conversations')
  const messages = q<HTMLOListElement>('#messages')
  const form = q<HTMLFormElement>('#composer')
  const input = q<HTMLTextAreaElement>('#message')
  const send = q<HTMLButtonElement>('#send')
  const files = q<HTMLUListElement>('#files')
  const dialog = q<HTMLDialogElement>('#edit-dialog')
  const editContent = q<HTMLTextAreaElement>('#edit-content')
  const editTitle = q<HTMLHeadingElement>('#edit-title')
  const suggestions = q<HTMLParagraphElement>('#suggestions')
  const sensitive = q<HTMLInputElement>('#sensitive')
  let editing = ''

  const renderConversations = () => {
    list.replaceChildren(
      ...store.conversations.map((c) => {
        const button = el('button', { text: c.title, attrs: { type: 'button', 'data-conversation': c.id } })
        if (c.id === store.currentId) button.setAttribute('aria-current', 'true')
        button.addEventListener('click', () => store.select(c.id))
        return el('li', {}, button, el('span', { className: 'count', text: `${c.turns} turn${c.turns === 1 ? '' : 's'}` }))
      }),
    )
  }

  const renderFiles = () => {
    files.replaceChildren(
      ...[...store.files.keys()].map((path) => {
        const edit = el('button', { className: 'link', text: 'Edit', attrs: { type: 'button', 'aria-label': `Edit ${path}` } })
        edit.addEventListener('click', () => {
          editing = path
          editTitle.textContent = `Edit ${path}`
          editContent.value = store.files.get(path) ?? ''
          dialog.showModal()
        })
        return el('li', {}, el('code', { text: path }), edit)
      }),
    )
  }

  const renderMessages = async () => {
    const id = store.currentId
    const graph = await store.memory.graph.conversation(id)
    if (id !== store.currentId) return
    const versions = new Map(graph.versions.map((v) => [v.id, v]))
    const documents = new Map(graph.documents.map((d) => [d.id, d]))
    const toolEdges = graph.edges.filter((e) => e.rel !== 'MESSAGE' && e.rel !== 'VERSION_OF' && e.rel !== 'RESULT')
    const shown = graph.events.filter((e) => e.kind === 'message')
    const from = Math.max(0, shown.length - SHOWN_TURNS * 2)
    const items: HTMLElement[] = []
    if (from > 0) items.push(el('li', { className: 'note', text: `${from / 2} earlier turns are in the memory (see the Graph panel).` }))
    for (const event of shown.slice(from)) {
      const human = event.actor.type === 'human'
      const shown = readable(typeof event.content.text === 'string' ? event.content.text : '')
      const bubble = el('li', { className: human ? 'msg user' : 'msg agent', attrs: { 'data-event': event.id } })
      const who = el('span', { className: 'who', text: human ? 'You' : 'Agent' })
      if (event.sensitivity === 'high') {
        const sealed = event.meta.sealed === true
        who.append(el('span', { className: 'sensitive', text: sealed ? 'sensitive · encrypted' : 'sensitive', attrs: { title: sealed ? 'Encrypted at rest' : 'Stored as written: set a passphrase in the Storage panel to encrypt it' } }))
      }
      bubble.append(who, el('div', { className: shown.sealed ? 'text sealed' : 'text', text: shown.text }))
      if (!human) {
        const chips = toolEdges
          .filter((e) => e.src === event.id)
          .map((e) => {
            const args = e.props.args as Record<string, unknown> | undefined
            const v = versions.get(e.dst)
            const doc = v ? documents.get(v.documentId) : undefined
            const target = doc ? relPath(doc.canonicalKey) : typeof args?.path === 'string' ? args.path : ''
            const detail = v ? ` → v${v.version}${v.provenance === 'agent' ? '' : ` (${v.provenance})`}` : ''
            return el('li', { className: `chip ${e.rel}`, text: `${e.rel} ${target}${detail}`.trim() })
          })
        if (chips.length) bubble.append(el('ul', { className: 'chips', attrs: { 'aria-label': 'Tool calls' } }, ...chips))
      }
      items.push(bubble)
    }
    if (items.length === 0) {
      items.push(el('li', { className: 'note', text: 'No messages yet. Ask the agent to read or change a file, or ask about earlier work.' }))
    }
    messages.replaceChildren(...items)
    messages.scrollTop = messages.scrollHeight
  }

  const render = async () => {
    renderConversations()
    renderFiles()
    await renderMessages()
  }

  const submit = async () => {
    const text = input.value.trim()
    if (!text) return
    send.disabled = true
    input.disabled = true
    try {
      const conversation = store.current ?? (await store.newConversation())
      store.query = text
      store.sensitive = sensitive.checked
      const reply = await respond(store, text)
      await store.memory.recordTurn({
        conversationId: conversation.id,
        scope: { userId: USER_ID, agentId: AGENT_ID },
        user: text,
        agent: reply.answer,
        procedures: reply.procedures,
        ...(store.sensitive ? { sensitivity: 'high' as const } : {}),
      })
      for (const [path, content] of reply.writes) {
        store.files.set(path, content)
        await store.trackDocument(path, true)
      }
      await store.saveConversation({
        ...conversation,
        // The list of conversations is kept plain: a sensitive first message does not name it.
        title: conversation.turns === 0 ? (store.sensitive ? 'Sensitive conversation' : text.slice(0, 60)) : conversation.title,
        turns: conversation.turns + 1,
      })
      input.value = ''
      store.changed('turn')
    } catch (error) {
      showError(error, 'record the turn')
    } finally {
      send.disabled = false
      input.disabled = false
      input.focus()
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault()
    void submit()
  })
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault()
      void submit()
    }
  })
  let typing: ReturnType<typeof setTimeout> | undefined
  input.addEventListener('input', () => {
    clearTimeout(typing)
    typing = setTimeout(() => {
      const text = input.value.trim()
      if (text && text !== store.query) {
        store.query = text
        store.changed('conversation')
      }
    }, 400)
  })

  q<HTMLButtonElement>('#remember').addEventListener('click', () => {
    const content = input.value.trim()
    const category = q<HTMLSelectElement>('#remember-category').value as 'fact'
    if (!content) {
      suggestions.textContent = 'Type what to remember first, e.g. “We use tabs, not spaces”.'
      return
    }
    store.memory
      .remember({ content, category, source: 'explicit', userId: USER_ID, ...(sensitive.checked ? { sensitivity: 'high' as const } : {}) })
      .then((saved) => {
        suggestions.textContent =
          saved.action === 'superseded'
            ? `Remembered as a ${category}; it replaces an earlier memory (see Memories).`
            : saved.action === 'unchanged'
              ? 'Already remembered.'
              : `Remembered as a ${category} (see Memories).`
        input.value = ''
        store.changed('memories')
      })
      .catch((error: unknown) => showError(error, 'save the memory'))
  })

  q<HTMLButtonElement>('#new-conversation').addEventListener('click', () => {
    store
      .newConversation()
      .then(() => input.focus())
      .catch((error: unknown) => showError(error, 'start a conversation'))
  })

  dialog.addEventListener('close', () => {
    if (dialog.returnValue !== 'save' || !editing) return
    store.files.set(editing, editContent.value)
    suggestions.textContent = `${editing} changed outside the agent. Ask the agent to read it: the memory records the change as an external version.`
    store.changed('files')
  })

  suggestions.textContent = 'Try: “add a logout function to auth.ts”, “read README.md”, “remember that we use tabs”, or “what did we do about login?”'
  return { render }
}
