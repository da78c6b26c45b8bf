import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { SCHEMA_VERSION } from '../../src/core/db/schema/migrations.ts'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { createSyncHandler, type NodeMemory, serveSync, type SyncRemote } from '../../src/node/index.ts'
import { openTestMemory } from '../support/memory.ts'

const EPOCH = '1970-01-01T00:00:00.000Z'

/** A remote that reaches the server's handler in this process, with a hook around each request. */
function remoteTo(
  server: NodeMemory,
  token: string,
  around?: (op: string, send: () => Promise<Response>) => Promise<Response>,
  pageRows?: number,
): SyncRemote {
  const handle = createSyncHandler(server)
  return {
    url: 'http://sync.test/sync',
    token,
    ...(pageRows === undefined ? {} : { pageRows }),
    fetch: (input, init) => {
      const send = () => handle(new Request(input, init))
      return around ? around(new URL(input).pathname.split('/').pop() ?? '', send) : send()
    },
  }
}

/** A hook for `remoteTo` that runs `meanwhile` (another device's sync) before the first push goes. */
function beforeFirstPush(meanwhile: () => Promise<unknown>) {
  let first = true
  return async (op: string, send: () => Promise<Response>) => {
    if (op === 'push' && first) {
      first = false
      await meanwhile()
    }
    return send()
  }
}

/** What a sync must make equal on both sides: rows by id, with the numbers each holds. */
async function held(memory: NodeMemory) {
  const all = await memory.diffSince(EPOCH)
  const memories = await memory.memories.list({ userId: 'ann', limit: 100 })
  return {
    events: all.events.map((e) => `${e.id} ${e.scope.conversationId}#${e.turnIndex} ${e.kind}`).sort(),
    kv: all.kv.map((k) => `${k.namespace}/${k.key}@${k.rev} ${JSON.stringify(k.payload)}`).sort(),
    edges: all.edges.map((e) => `${e.id} ${e.src} ${e.rel} ${e.dst} #${e.turnIndex}`).sort(),
    documents: all.documents.map((d) => `${d.id} ${d.canonicalKey}`).sort(),
    versions: all.versions.map((v) => `${v.id} ${v.documentId} v${v.version} ${v.contentHash.slice(0, 8)}`).sort(),
    nodes: all.nodes.map((n) => `${n.id}@${n.rev} ${n.type} ${JSON.stringify(n.payload)} ${n.tombstone}`).sort(),
    contexts: (await memory.memories.contexts({ userId: 'ann' })).map((c) => `${c.id} ${c.name} ${c.memories} ${c.priority}`).sort(),
    memories: memories.map((m) => `${m.id} ${m.status} ${m.content}`).sort(),
    forgets: all.forgets.map((f) => f.id).sort(),
  }
}

/** Turn numbers of a conversation and how many events each holds. */
async function turnsOf(memory: NodeMemory, conversationId: string) {
  const all = await memory.diffSince(EPOCH)
  const count = new Map<number, number>()
  for (const e of all.events) {
    if (e.scope.conversationId === conversationId && e.turnIndex !== null) count.set(e.turnIndex, (count.get(e.turnIndex) ?? 0) + 1)
  }
  return [...count.entries()].sort((a, b) => a[0] - b[0])
}

/** The user's words of each turn of a conversation, in turn order. */
async function textsOf(memory: NodeMemory, conversationId: string) {
  const all = await memory.diffSince(EPOCH)
  return all.events
    .filter((e) => e.scope.conversationId === conversationId && e.actor.type === 'human')
    .sort((x, y) => (x.turnIndex ?? 0) - (y.turnIndex ?? 0))
    .map((e) => (e.content as { text?: string }).text)
}

/** A remote in pages of 2 rows whose second request of kind `op` fails, before or after the server takes it. */
function cutRemote(server: NodeMemory, token: string, op: 'pull' | 'push', after: boolean): SyncRemote {
  let seen = 0
  return remoteTo(
    server,
    token,
    async (name, send) => {
      if (name !== op || ++seen !== 2) return send()
      if (after) await send()
      throw new TypeError('network down')
    },
    2,
  )
}

/** A document's versions, in order, by their content. */
async function contentsOf(memory: NodeMemory, path: string) {
  const { versions } = await memory.documents.history(path)
  return Promise.all(versions.map(async (v) => (await memory.documents.version(v.id)).content))
}

const turn = (memory: NodeMemory, conversationId: string, text: string) =>
  memory.recordTurn({ conversationId, scope: { userId: 'ann' }, user: `${text}?`, agent: `${text}.` })

/** A server memory and two devices (a laptop, a phone) with their remotes; all closed on dispose. */
async function threeMemories() {
  const server = await openTestMemory({ indexing: 'manual' })
  const a = await openTestMemory({ indexing: 'manual' })
  const b = await openTestMemory({ indexing: 'manual' })
  const ta = await server.devices.add({ name: 'laptop' })
  const tb = await server.devices.add({ name: 'phone' })
  return {
    server,
    a,
    b,
    ra: remoteTo(server, ta.token),
    rb: remoteTo(server, tb.token),
    deviceA: ta.deviceId,
    [Symbol.asyncDispose]: async () => {
      await Promise.all([a.close(), b.close()])
      await server.close()
    },
  }
}

describe('sync between devices and a server memory', () => {
  it('gives two devices that wrote the same conversation offline the same memory, nothing twice', async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    await turn(a, 'c1', 'first')
    await turn(a, 'c1', 'second')
    await a.sync(ra)
    await b.sync(rb)
    expect(await turnsOf(b, 'c1')).toEqual([[0, 2], [1, 2]])
    // Offline: each writes turn 2 of c1, the same policy key, and a memory.
    await turn(a, 'c1', 'from the laptop')
    await a.kv.put('user:ann', 'prefs', 'editor', { text: 'vim' })
    await a.remember({ content: 'Ann reviews code in the morning', category: 'preference', userId: 'ann' })
    await turn(b, 'c1', 'from the phone')
    await turn(b, 'c2', 'only on the phone')
    await b.kv.put('user:ann', 'prefs', 'editor', { text: 'emacs' })
    await b.remember({ content: 'Ann writes Rust at work', category: 'fact', userId: 'ann' })
    const pushedA = await a.sync(ra)
    expect(pushedA.pushed).toMatchObject({ events: 2, kv: 1, memories: 1 })
    await b.sync(rb)
    await a.sync(ra)
    expect(await held(a)).toEqual(await held(server))
    expect(await held(b)).toEqual(await held(server))
    // Turn 2 went to the laptop, which reached the server first; the phone's moved to 3.
    expect(await turnsOf(b, 'c1')).toEqual([[0, 2], [1, 2], [2, 2], [3, 2]])
    const texts = await textsOf(b, 'c1')
    expect(texts).toEqual(['first?', 'second?', 'from the laptop?', 'from the phone?'])
    expect(await turnsOf(a, 'c2')).toEqual([[0, 2]])
    // The policy key's revisions are in the order they were written: the phone's is the latest.
    expect((await a.kv.get('user:ann', 'prefs', 'editor'))?.payload).toEqual({ text: 'emacs' })
    expect((await a.kv.history('user:ann', 'prefs', 'editor')).map((r) => r.rev)).toEqual([1, 2])
    expect((await b.memories.list({ userId: 'ann' })).map((m) => m.content).sort()).toEqual([
      'Ann reviews code in the morning',
      'Ann writes Rust at work',
    ])
    // Nothing new: a sync again sends and takes nothing.
    const quiet = await b.sync(rb)
    expect(quiet.pushed).toEqual({})
    expect(quiet.pulled).toEqual({})
  })

  it("keeps a device's turns apart and in order when the server moves them, page by page", async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    for (const text of ['laptop one', 'laptop two', 'laptop three']) await turn(a, 'c1', text)
    await turn(b, 'c1', 'phone one')
    // The phone syncs after the laptop pulled and before it pushes: the server moves the laptop's turns.
    await a.sync(remoteTo(server, ra.token, beforeFirstPush(() => b.sync(rb)), 2))
    await b.sync(rb)
    expect(await textsOf(b, 'c1')).toEqual(['phone one?', 'laptop one?', 'laptop two?', 'laptop three?'])
    expect(await turnsOf(b, 'c1')).toEqual([[0, 2], [1, 2], [2, 2], [3, 2]])
    expect(await held(a)).toEqual(await held(server))
  })

  it('gives the same memory when a sync is cut off at any request and run again, pages of a few rows each', async () => {
    for (const op of ['pull', 'push'] as const) {
      for (const when of ['before', 'after'] as const) {
        await using t = await threeMemories()
        const { server, a, b, ra, rb } = t
        await turn(b, 'c1', 'the phone first')
        await b.kv.put('user:ann', 'prefs', 'theme', { text: 'dark' })
        await b.observeDocument({ conversationId: 'c1', path: '/repo/README.md', content: 'one' })
        await b.sync(rb)
        await a.observeDocument({ conversationId: 'c3', path: '/repo/README.md', content: 'one' })
        await a.observeDocument({ conversationId: 'c3', path: '/repo/README.md', content: 'two' })
        await turn(a, 'c1', 'the laptop')
        await turn(a, 'c3', 'only on the laptop')
        await a.kv.put('user:ann', 'prefs', 'theme', { text: 'light' })
        await a.remember({ content: 'Ann likes short answers', category: 'preference', userId: 'ann' })
        // The second request of its kind is cut: pages before it are stored, the rest follow.
        let seen = 0
        const failing = remoteTo(
          server,
          ra.token,
          async (name, send) => {
            if (name !== op || ++seen !== 2) return send()
            if (when === 'before') throw new TypeError('network down')
            await send()
            throw new TypeError('connection reset')
          },
          2,
        )
        await expect(a.sync(failing)).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' })
        await a.sync({ ...ra, pageRows: 2 })
        await b.sync(rb)
        const label = `${op} cut ${when}`
        expect(await held(a), label).toEqual(await held(server))
        expect(await held(b), label).toEqual(await held(server))
        expect(await turnsOf(server, 'c1'), label).toEqual([[0, 2], [1, 2]])
        expect(await turnsOf(b, 'c3'), label).toEqual([[0, 2]])
        expect((await server.kv.history('user:ann', 'prefs', 'theme')).map((r) => r.payload), label).toEqual([
          { text: 'dark' },
          { text: 'light' },
        ])
        expect(await contentsOf(a, '/repo/README.md'), label).toEqual(['one', 'two'])
      }
    }
  })

  it('keeps one document per path and one chain of its versions, a content seen on both sides once', async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    // Offline, both read README.md as it was; the laptop then sees it changed, the phone reads a file of its own.
    const laptop = await a.observeDocument({ conversationId: 'c1', path: '/repo/README.md', content: 'one' })
    const { userEventId } = await turn(b, 'c2', 'read the readme')
    const phone = await b.observeDocument({ conversationId: 'c2', path: '/repo/README.md', content: 'one', eventId: userEventId })
    await a.observeDocument({ conversationId: 'c1', path: '/repo/README.md', content: 'two' })
    await b.observeDocument({ conversationId: 'c2', path: '/repo/notes.md', content: 'only on the phone' })
    // A copy whose content the laptop stores once: it travels whole.
    await a.observeDocument({ conversationId: 'c1', path: '/repo/copy.md', content: 'two' })
    expect((await a.documents.deduplicate()).versions).toBe(1)
    await a.sync(ra)
    await b.sync(rb)
    await a.sync(ra)
    expect(await held(a)).toEqual(await held(server))
    expect(await held(b)).toEqual(await held(server))
    for (const memory of [server, a, b]) {
      expect(await contentsOf(memory, '/repo/README.md')).toEqual(['one', 'two'])
      expect((await memory.documents.history('/repo/README.md')).versions.map((v) => v.version)).toEqual([1, 2])
      expect((await memory.documents.history('/repo/notes.md')).versions.map((v) => v.version)).toEqual([1])
      expect(await contentsOf(memory, '/repo/copy.md')).toEqual(['two'])
      // The phone's read touched the laptop's first version, which its own folded into.
      const touches = await memory.documents.interactions('/repo/README.md')
      expect(touches.map((x) => [x.conversationId, x.versionId])).toContainEqual(['c2', laptop.versionId])
    }
    // The laptop reached the server first: its ids stay, and the phone's still name the same rows.
    expect((await b.documents.get(phone.documentId)).id).toBe(laptop.documentId)
    expect((await b.documents.version(phone.versionId)).id).toBe(laptop.versionId)
    expect((await b.documents.stalenessOf(phone.versionId)).staleness).toBe(1)
    // A later read on the phone continues the one chain.
    await b.observeDocument({ conversationId: 'c2', path: '/repo/README.md', content: 'three' })
    await b.sync(rb)
    await a.sync(ra)
    expect(await contentsOf(a, '/repo/README.md')).toEqual(['one', 'two', 'three'])
    expect(await held(a)).toEqual(await held(b))
  })

  it("joins a document pushed under a device's own id to the server's document of that path", async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    const laptop = await a.observeDocument({ conversationId: 'c1', path: '/repo/README.md', content: 'one' })
    const { userEventId } = await turn(b, 'c2', 'read the readme')
    const phone = await b.observeDocument({ conversationId: 'c2', path: '/repo/README.md', content: 'one', eventId: userEventId })
    await b.observeDocument({ conversationId: 'c2', path: '/repo/README.md', content: 'two' })
    // The laptop syncs after the phone pulled and before it pushes: the server holds the path first.
    await b.sync(remoteTo(server, rb.token, beforeFirstPush(() => a.sync(ra))))
    await a.sync(ra)
    expect(await held(a)).toEqual(await held(server))
    expect(await held(b)).toEqual(await held(server))
    for (const memory of [server, a, b]) {
      expect(await contentsOf(memory, '/repo/README.md')).toEqual(['one', 'two'])
      const touches = await memory.documents.interactions('/repo/README.md')
      expect(touches.map((x) => [x.conversationId, x.versionId])).toContainEqual(['c2', laptop.versionId])
    }
    // The server and the phone still know the phone's ids; the laptop never saw them.
    for (const memory of [server, b]) {
      expect((await memory.documents.get(phone.documentId)).id).toBe(laptop.documentId)
      expect((await memory.documents.version(phone.versionId)).id).toBe(laptop.versionId)
    }
  })

  it("keeps a document's later versions when another device forgot the whole tenant before them", async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    await a.observeDocument({ conversationId: 'c1', path: '/repo/README.md', content: 'one' })
    await a.sync(ra)
    await b.sync(rb)
    await b.forget({ scope: { tenantId: 'default' } })
    await a.observeDocument({ conversationId: 'c1', path: '/repo/README.md', content: 'two' })
    await a.sync(ra)
    await b.sync(rb)
    await a.sync(ra)
    for (const memory of [server, a, b]) {
      expect(await contentsOf(memory, '/repo/README.md')).toEqual(['two'])
      expect((await memory.documents.history('/repo/README.md')).versions.map((v) => v.version)).toEqual([1])
    }
    expect(await held(a)).toEqual(await held(server))
    expect(await held(b)).toEqual(await held(server))
  })

  it('keeps a read made after a forget when another device read the same content before it', async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    await b.observeDocument({ conversationId: 'c1', path: '/repo/README.md', content: 'same' })
    await b.sync(rb)
    // The laptop, not synced yet, forgets everything and then reads the file: its read is after the forget.
    await a.forget({ scope: { tenantId: 'default' } })
    const after = await a.observeDocument({ conversationId: 'c1', path: '/repo/README.md', content: 'same' })
    await a.sync(ra)
    await b.sync(rb)
    for (const memory of [server, a, b]) {
      const { versions } = await memory.documents.history('/repo/README.md')
      expect(versions.map((v) => v.id)).toEqual([after.versionId])
    }
    expect(await held(a)).toEqual(await held(server))
    expect(await held(b)).toEqual(await held(server))
  })

  it('keeps one memory per key: the one saved later on any device supersedes the other', async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    await a.remember({ content: 'Ann edits in vim', category: 'preference', userId: 'ann', key: 'editor' })
    const later = await b.remember({ content: 'Ann edits in Helix', category: 'preference', userId: 'ann', key: 'editor' })
    await b.sync(rb)
    await a.sync(ra)
    await b.sync(rb)
    for (const memory of [server, a, b]) {
      const active = await memory.memories.list({ userId: 'ann', key: 'editor' })
      expect(active.map((m) => m.content)).toEqual(['Ann edits in Helix'])
      const history = await memory.memories.list({ userId: 'ann', key: 'editor', status: 'superseded' })
      expect(history.map((m) => [m.content, m.supersededBy])).toEqual([['Ann edits in vim', later.id]])
    }
    expect(await held(a)).toEqual(await held(server))
    expect(await held(b)).toEqual(await held(server))
  })

  it('merges the entity graph and memory contexts written on two devices', async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    await a.graph.putGraph({
      relations: [{ name: 'works_on' }],
      nodes: [{ id: 'ann', type: 'person', payload: { role: 'developer' } }, { id: 'engram', type: 'project' }],
      edges: [{ src: 'ann', rel: 'works_on', dst: 'engram' }],
    })
    await a.remember({ content: 'Ann ships on Fridays', category: 'fact', userId: 'ann', context: 'work' })
    await a.sync(ra)
    await b.sync(rb)
    // Offline: both change Ann's node, the phone later; each files a memory under a new context of one name.
    await a.graph.putNode({ id: 'ann', type: 'person', payload: { role: 'reviewer' } })
    await a.graph.removeNode('engram')
    await b.graph.putNode({ id: 'ann', type: 'person', payload: { role: 'lead' } })
    await b.graph.putGraph({ relations: [{ name: 'likes' }], nodes: [{ id: 'tea', type: 'drink' }], edges: [{ src: 'ann', rel: 'likes', dst: 'tea' }] })
    await a.remember({ content: 'Ann plans the week on Mondays', category: 'fact', userId: 'ann', context: 'planning' })
    await b.remember({ content: 'Ann reviews plans with Bo', category: 'fact', userId: 'ann', context: 'planning' })
    // The later change of a context both hold wins: the phone's.
    await a.memories.defineContext({ name: 'work', userId: 'ann', priority: 0.2 })
    await b.memories.defineContext({ name: 'work', userId: 'ann', priority: 0.9, description: 'the job' })
    await a.sync(ra)
    await b.sync(rb)
    await a.sync(ra)
    expect(await held(a)).toEqual(await held(server))
    expect(await held(b)).toEqual(await held(server))
    for (const memory of [server, a, b]) {
      expect((await memory.graph.getNode('ann'))?.payload).toEqual({ role: 'lead' })
      expect((await memory.graph.nodeHistory('ann')).map((n) => n.rev)).toEqual([1, 2, 3])
      expect(await memory.graph.getNode('engram')).toBeNull()
      const neighbors = await memory.graph.neighbors('ann')
      expect(neighbors.map((n) => `${n.rel} ${n.neighbor}`)).toEqual(['likes tea'])
      const contexts = await memory.memories.contexts({ userId: 'ann' })
      expect(contexts.map((c) => `${c.name} ${c.memories} ${c.priority}`).sort()).toEqual(['planning 2 0.5', 'work 1 0.9'])
      expect((await memory.graph.verify()).ok).toBe(true)
    }
  })

  it('ends with equal memories and whole chains after any offline writes and syncs of two devices', async () => {
    const device = fc.constantFrom(0, 1)
    const op = fc.oneof(
      fc.record({ kind: fc.constant('observe'), device, path: fc.constantFrom('/r/a.md', '/r/b.md'), content: fc.constantFrom('x', 'y', 'z') }),
      fc.record({ kind: fc.constant('node'), device, id: fc.constantFrom('ann', 'bo'), role: fc.constantFrom('dev', 'lead') }),
      fc.record({ kind: fc.constant('remove'), device, id: fc.constantFrom('ann', 'bo') }),
      fc.record({ kind: fc.constant('remember'), device, key: fc.constantFrom('editor', 'lang'), text: fc.constantFrom('one', 'two'), context: fc.constantFrom('work', 'home') }),
      fc.record({ kind: fc.constant('turn'), device, conversation: fc.constantFrom('c1', 'c2') }),
      fc.record({ kind: fc.constant('define'), device, context: fc.constantFrom('work', 'home'), priority: fc.constantFrom(0.1, 0.9) }),
      fc.record({ kind: fc.constant('sync'), device }),
      fc.record({ kind: fc.constant('cut'), device, op: fc.constantFrom('pull', 'push'), after: fc.boolean() }),
      fc.record({ kind: fc.constant('forget'), device, conversation: fc.constantFrom('c1', 'c2', null) }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 16 }), async (ops) => {
        await using t = await threeMemories()
        const devices = [t.a, t.b] as const
        const remotes = [t.ra, t.rb] as const
        let n = 0
        for (const o of ops) {
          const m = devices[o.device]
          n++
          if (o.kind === 'observe') await m.observeDocument({ conversationId: 'c1', path: o.path, content: o.content })
          else if (o.kind === 'node') await m.graph.putNode({ id: o.id, type: 'person', payload: { role: o.role } })
          else if (o.kind === 'remove') await m.graph.removeNode(o.id)
          else if (o.kind === 'remember') await m.remember({ content: `Ann's ${o.key} is ${o.text} (${n})`, category: 'preference', userId: 'ann', key: o.key, context: o.context })
          else if (o.kind === 'turn') await turn(m, o.conversation, `step ${n}`)
          else if (o.kind === 'define') await m.memories.defineContext({ name: o.context, userId: 'ann', priority: o.priority })
          else if (o.kind === 'cut') await m.sync(cutRemote(t.server, remotes[o.device].token, o.op, o.after)).catch(() => undefined)
          else if (o.kind === 'forget') await m.forget(o.conversation ? { conversationId: o.conversation } : { scope: { tenantId: 'default' } })
          else await m.sync(remotes[o.device])
        }
        for (const i of [0, 1, 0, 1] as const) await devices[i].sync(remotes[i])
        const expected = await held(t.server)
        for (const m of [t.server, ...devices]) {
          if (m !== t.server) expect(await held(m)).toEqual(expected)
          expect((await m.graph.verify()).ok).toBe(true)
          for (const path of ['/r/a.md', '/r/b.md']) {
            const history = await m.documents.history(path).catch(() => null)
            if (!history) continue
            expect(history.versions.map((v) => v.version)).toEqual(history.versions.map((_, i) => i + 1))
            const hashes = history.versions.map((v) => v.contentHash)
            expect(hashes.filter((h, i) => i > 0 && h === hashes[i - 1])).toEqual([])
          }
          for (const key of ['editor', 'lang']) expect((await m.memories.list({ userId: 'ann', key })).length).toBeLessThanOrEqual(1)
        }
      }),
      { numRuns: 15, seed: 20261207 },
    )
  }, 120_000)

  it('carries the later change of a memory, a removed edge, a deleted policy entry and a forget by id', async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    const kept = await a.remember({ content: 'Ann ships on Tuesdays', category: 'fact', userId: 'ann' })
    const gone = await a.remember({ content: 'Ann drinks tea', category: 'preference', userId: 'ann' })
    await a.graph.putGraph({ relations: [{ name: 'related_to' }], edges: [{ src: kept.id, rel: 'related_to', dst: gone.id }] })
    await a.kv.put('user:ann', 'prefs', 'lang', { text: 'en' })
    await a.sync(ra)
    await b.sync(rb)
    // Offline on both: the same memory changed twice, the phone's change the later one.
    await a.memories.update(kept.id, { content: 'Ann ships on Wednesdays' })
    await b.memories.update(kept.id, { content: 'Ann ships on Thursdays' })
    await a.graph.removeEdge(kept.id, 'related_to', gone.id)
    await b.kv.delete('user:ann', 'prefs', 'lang')
    await b.forget({ memoryIds: [gone.id] })
    await a.sync(ra)
    await b.sync(rb)
    await a.sync(ra)
    for (const memory of [server, a, b]) {
      expect((await memory.memories.list({ userId: 'ann' })).map((m) => m.content)).toEqual(['Ann ships on Thursdays'])
      expect(await memory.kv.get('user:ann', 'prefs', 'lang')).toBeNull()
      const edges = (await memory.diffSince(EPOCH)).edges.filter((e) => e.rel === 'related_to')
      expect(edges.every((e) => e.tombstonedAt !== null)).toBe(true)
    }
    expect(await held(a)).toEqual(await held(server))
    expect(await held(b)).toEqual(await held(server))
  })

  it('keeps high content sealed on the server, and opens it on a device that joined the vault', async () => {
    const passphrase = 'a long shared passphrase'
    const server = await openTestMemory({ indexing: 'manual' })
    await using _s = server
    const a = await openTestMemory({ indexing: 'manual', vault: { passphrase } })
    await using _a = a
    const b = await openTestMemory({ indexing: 'manual' })
    await using _b = b
    const c = await openTestMemory({ indexing: 'manual', vault: { passphrase } })
    await using _c = c
    const [ra, rb, rc] = await Promise.all(['laptop', 'phone', 'tablet'].map(async (name) => remoteTo(server, (await server.devices.add({ name })).token)))
    const secret = 'the harbour gate code is 4471'
    await a.recordTurn({ conversationId: 'c1', scope: { userId: 'ann' }, sensitivity: 'high', user: `${secret}?`, agent: 'Noted.' })
    await a.remember({ content: `Ann said ${secret}`, category: 'fact', userId: 'ann', sensitivity: 'high' })
    await b.recordTurn({ conversationId: 'c2', scope: { userId: 'ann' }, sensitivity: 'high', user: 'my locker is 12?', agent: 'Noted.' })
    await a.sync(ra as SyncRemote)

    // The server holds ciphertext only.
    const onServer = JSON.stringify([await server.diffSince(EPOCH), await server.memories.list({ userId: 'ann' })])
    expect(onServer).not.toContain('4471')
    expect(onServer).toContain('sealed1:')

    // A device without the vault must join it with the passphrase; a wrong one changes nothing.
    await expect(b.sync(rb as SyncRemote)).rejects.toMatchObject({ code: 'VAULT_LOCKED' })
    await expect(b.sync({ ...(rb as SyncRemote), vault: { passphrase: 'not the passphrase' } })).rejects.toMatchObject({ code: 'WRONG_PASSPHRASE' })
    expect(await b.vault.status()).toBe('none')
    await b.sync({ ...(rb as SyncRemote), vault: { passphrase } })
    expect(await b.vault.status()).toBe('open')
    expect(await textsOf(b, 'c1')).toEqual([`${secret}?`])
    expect((await b.memories.list({ userId: 'ann' })).map((m) => m.content)).toEqual([`Ann said ${secret}`])
    await a.sync(ra as SyncRemote)
    expect(await textsOf(a, 'c2')).toEqual(['my locker is 12?'])
    expect(JSON.stringify(await server.diffSince(EPOCH))).not.toContain('locker is 12')

    // A vault of its own (another key, even under the same passphrase) cannot join.
    await expect(c.sync(rc as SyncRemote)).rejects.toMatchObject({ code: 'CONFLICT' })
  })

  it('refuses a wrong or revoked token, and keeps what the device synced', async () => {
    await using t = await threeMemories()
    const { server, a, ra, deviceA } = t
    await turn(a, 'c1', 'before the revoke')
    await a.sync(ra)
    await expect(a.sync({ ...ra, token: 'engram_sync_wrong' })).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
    expect((await server.devices.revoke(deviceA)).revokedAt).not.toBeNull()
    await turn(a, 'c1', 'after the revoke')
    await expect(a.sync(ra)).rejects.toMatchObject({ code: 'UNAUTHORIZED' })
    expect(await turnsOf(server, 'c1')).toEqual([[0, 2]])
    expect((await server.devices.list()).map((d) => [d.name, d.revokedAt !== null])).toEqual([
      ['laptop', true],
      ['phone', false],
    ])
    await expect(server.devices.revoke('dev_missing')).rejects.toMatchObject({ code: 'NOT_FOUND' })
  })

  it('carries a forget to the server and the other devices, keeping what was written after it', async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    await turn(a, 'c1', 'a secret plan')
    await a.sync(ra)
    await b.sync(rb)
    await b.forget({ conversationId: 'c1' })
    await turn(b, 'c1', 'after the forget')
    await b.sync(rb)
    await a.sync(ra)
    for (const memory of [server, a, b]) {
      const texts = await textsOf(memory, 'c1')
      expect(texts).toEqual(['after the forget?'])
    }
    expect(await held(a)).toEqual(await held(server))
  })

  it("forgets on the server what a device sent after another device's forget of it arrived", async () => {
    await using t = await threeMemories()
    const { server, a, b, ra, rb } = t
    await turn(a, 'c1', 'a plan')
    await a.sync(ra)
    await b.sync(rb)
    await turn(a, 'c1', 'more of the plan, offline')
    await b.forget({ conversationId: 'c1' })
    // The phone's forget reaches the server after the laptop pulled and before it pushes.
    await a.sync(remoteTo(server, ra.token, beforeFirstPush(() => b.sync(rb))))
    await a.sync(ra)
    await b.sync(rb)
    for (const memory of [server, a, b]) expect(await textsOf(memory, 'c1')).toEqual([])
  })

  it('refuses a push of rows that break a rule or belong to another tenant, and writes none of it', async () => {
    await using t = await threeMemories()
    const { server, a, ra } = t
    await turn(a, 'c1', 'hello')
    const rows = (await a.diffSince(EPOCH)).events
    expect(rows.length).toBe(2)
    const other = await server.devices.add({ name: 'other tenant', tenantId: 'acme' })
    await a.observeDocument({ conversationId: 'c1', path: '/repo/a.ts', content: 'export {}' })
    const sent = await rawRows(a)
    const event = { ...sent.events?.[0] }
    const push = (token: string, r: unknown) => server.syncServer.push(token, { schemaVersion: SCHEMA_VERSION, pulledUntil: null, rows: { events: [r] } } as never)
    await expect(push(other.token, event)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(push(ra.token, { ...event, turn_index: -1 })).rejects.toMatchObject({ code: 'IMPORT_CORRUPT' })
    await expect(push(ra.token, { ...event, content: 'not an object' })).rejects.toBeInstanceOf(MemoryError)
    await expect(server.syncServer.push(ra.token, { schemaVersion: SCHEMA_VERSION + 1, pulledUntil: null, rows: {} })).rejects.toMatchObject({ code: 'NOT_SUPPORTED' })
    // A version of another tenant's document.
    const theirs = await server.observeDocument({ conversationId: 'c9', path: '/acme/a.ts', content: 'x', scope: { tenantId: 'acme' } })
    const version = { ...sent.doc_versions?.[0], document_id: theirs.documentId }
    await expect(server.syncServer.push(ra.token, { schemaVersion: SCHEMA_VERSION, pulledUntil: null, rows: { doc_versions: [version] } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    expect((await server.diffSince(EPOCH)).events).toEqual([])
    expect((await server.diffSince(EPOCH)).versions.map((v) => v.documentId)).toEqual([theirs.documentId])
    // A secret in a pushed row is replaced, as a write replaces it.
    const key = `AKIA${'Q7WZ3MXR5TLPN2VK'}`
    await push(ra.token, { ...event, content: { text: `my key is ${key}` } })
    expect(JSON.stringify((await server.diffSince(EPOCH)).events)).not.toContain(key)
  })

  it('syncs over HTTP on 127.0.0.1', async () => {
    const server = await openTestMemory({ indexing: 'manual' })
    await using _s = server
    const a = await openTestMemory({ indexing: 'manual' })
    await using _a = a
    const http = await serveSync(server)
    try {
      const { token } = await server.devices.add({ name: 'laptop' })
      await turn(a, 'c1', 'over the wire')
      const report = await a.sync({ url: http.url, token })
      expect(report.pushed).toMatchObject({ events: 2 })
      expect(await textsOf(server, 'c1')).toEqual(['over the wire?'])
      const refused = await fetch(`${http.url}/pull`, { method: 'POST', body: '{}' })
      expect(refused.status).toBe(401)
      expect(await refused.json()).toMatchObject({ error: { code: 'UNAUTHORIZED' } })
    } finally {
      await http.close()
    }
  })
})

/** A device's events as a sync sends them (rows, not API records). */
async function rawRows(memory: NodeMemory): Promise<Record<string, Record<string, unknown>[]>> {
  let sent: Record<string, Record<string, unknown>[]> = {}
  const spy = await openTestMemory({ indexing: 'manual' })
  await using _spy = spy
  const { token } = await spy.devices.add({ name: 'spy' })
  await memory.sync({
    url: 'http://spy.test/sync',
    token,
    fetch: async (input, init) => {
      const body = JSON.parse(init.body) as { rows?: Record<string, Record<string, unknown>[]> }
      if (body.rows) sent = body.rows
      return createSyncHandler(spy)(new Request(input, init))
    },
  })
  return sent
}
