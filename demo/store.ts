import { isSealed, type Memory, MemoryError, type VaultStatus } from '../src/index.ts'
import { docPath, SAMPLE_FILES } from './project.ts'

/** The demo's own bookkeeping lives in the memory's key-value store, so export/import carries it. */
export const KV_SCOPE = 'engram-demo'
export const USER_ID = 'demo-user'
export const AGENT_ID = 'demo-agent'

export interface Conversation {
  id: string
  title: string
  createdAt: string
  turns: number
}

export interface TrackedDocument {
  /** Workspace-relative path. */
  path: string
  /** True for files of the live sample project (false: generated history). */
  workspace: boolean
}

/** What the page shows for text a locked memory reads as stored (sealed). */
export function readable(text: string): { text: string; sealed: boolean } {
  return isSealed(text)
    ? { text: 'Encrypted. Reload the page and unlock this memory with its passphrase to read it.', sealed: true }
    : { text, sealed: false }
}

export type Change = 'turn' | 'conversation' | 'files' | 'memories' | 'all'

/** Everything the page shares: the memory, the open conversation and the sample project's files. */
export class Store extends EventTarget {
  memory: Memory
  files = new Map<string, string>()
  conversations: Conversation[] = []
  documents: TrackedDocument[] = []
  currentId = ''
  /** The last message typed, or being typed: the query the Context panel explains. */
  query = ''
  /** Whether sensitive content is encrypted at rest here (`open`), and readable (not `locked`). */
  vault: VaultStatus = 'none'
  /** Whether what is sent or remembered next is marked sensitive (`high`). */
  sensitive = false

  constructor(memory: Memory) {
    super()
    this.memory = memory
  }

  get current(): Conversation | undefined {
    return this.conversations.find((c) => c.id === this.currentId)
  }

  /** Tells the panels what changed. */
  changed(what: Change): void {
    this.dispatchEvent(new CustomEvent<Change>('change', { detail: what }))
  }

  onChange(listener: (what: Change) => void): void {
    this.addEventListener('change', (event) => listener((event as CustomEvent<Change>).detail))
  }

  /** Reads conversations, tracked documents and the files' latest contents back from the memory. */
  async load(): Promise<void> {
    this.vault = await this.memory.vault.status()
    const conversations = await this.memory.kv.list(KV_SCOPE, 'conversations')
    this.conversations = conversations
      .map((entry) => entry.payload as Conversation)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id))
    const tracked = await this.memory.kv.list(KV_SCOPE, 'documents')
    const known = new Map<string, TrackedDocument>(SAMPLE_FILES.map(([path]) => [path, { path, workspace: true }]))
    for (const entry of tracked) {
      const doc = entry.payload as TrackedDocument
      known.set(doc.path, doc)
    }
    this.documents = [...known.values()].sort((a, b) => Number(b.workspace) - Number(a.workspace) || a.path.localeCompare(b.path))
    this.files.clear()
    for (const [path, content] of SAMPLE_FILES) this.files.set(path, content)
    for (const doc of this.documents.filter((d) => d.workspace)) {
      const content = await this.latestContent(doc.path)
      if (content !== null) this.files.set(doc.path, content)
    }
    if (this.conversations.length === 0) await this.newConversation()
    else this.currentId = this.conversations[0]?.id ?? ''
  }

  /** The latest stored content of a document, or null when the memory has never seen it. */
  async latestContent(path: string): Promise<string | null> {
    try {
      const { versions } = await this.memory.documents.history(docPath(path))
      const latest = versions.at(-1)
      if (!latest) return null
      return (await this.memory.documents.version(latest.id)).content ?? null
    } catch (error) {
      if (MemoryError.is(error, 'NOT_FOUND')) return null
      throw error
    }
  }

  async newConversation(title = 'New conversation'): Promise<Conversation> {
    const conversation: Conversation = {
      id: `conv-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`,
      title,
      createdAt: new Date().toISOString(),
      turns: 0,
    }
    await this.saveConversation(conversation)
    this.currentId = conversation.id
    this.changed('conversation')
    return conversation
  }

  async saveConversation(conversation: Conversation): Promise<void> {
    await this.memory.kv.put(KV_SCOPE, 'conversations', conversation.id, { ...conversation })
    const i = this.conversations.findIndex((c) => c.id === conversation.id)
    if (i >= 0) this.conversations[i] = conversation
    else this.conversations.push(conversation)
    this.conversations.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id))
  }

  async trackDocument(path: string, workspace: boolean): Promise<void> {
    if (this.documents.some((d) => d.path === path)) return
    const doc = { path, workspace }
    await this.memory.kv.put(KV_SCOPE, 'documents', path, { ...doc })
    this.documents.push(doc)
  }

  select(conversationId: string): void {
    this.currentId = conversationId
    this.changed('conversation')
  }
}
