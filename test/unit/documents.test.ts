import { describe, expect, it } from 'vitest'
import { DAY, testClock } from '../support/clock.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestMemory } from '../support/memory.ts'

describe('observeDocument', () => {
  it('adds a version only when the content changes, with the right provenance', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })

    const first = await memory.observeDocument({ path: 'src/auth.ts', content: 'v1', conversationId: 'c1' })
    expect(first).toMatchObject({ version: 1, created: true, documentCreated: true, provenance: 'initial' })
    expect(first.canonicalKey).toBe('src/auth.ts')
    expect(first.documentId).toMatch(/^doc_/)
    expect(first.versionId).toMatch(/^ver_/)

    clock.advance(1000)
    const same = await memory.observeDocument({ path: '/repo/src/../src/auth.ts', content: 'v1', conversationId: 'c2' })
    expect(same).toMatchObject({ versionId: first.versionId, version: 1, created: false, provenance: 'initial' })

    clock.advance(1000)
    const written = await memory.observeDocument({
      path: 'src/auth.ts',
      content: 'v2',
      conversationId: 'c2',
      cause: 'agent_write',
    })
    expect(written).toMatchObject({ version: 2, created: true, documentCreated: false, provenance: 'agent' })

    clock.advance(1000)
    const external = await memory.observeDocument({ path: 'src/auth.ts', content: 'v3', conversationId: 'c3' })
    expect(external).toMatchObject({ version: 3, created: true, provenance: 'external' })

    const { document, versions } = await memory.documents.history('src/auth.ts')
    expect(document).toMatchObject({ id: first.documentId, canonicalKey: 'src/auth.ts', keyKind: 'path', mode: 'local' })
    expect(versions.map((v) => [v.version, v.provenance, v.conversationId])).toEqual([
      [1, 'initial', 'c1'],
      [2, 'agent', 'c2'],
      [3, 'external', 'c3'],
    ])
    expect(versions.map((v) => v.createdAt)).toEqual([
      '2025-02-09T10:00:00.000Z',
      '2025-02-09T10:00:02.000Z',
      '2025-02-09T10:00:03.000Z',
    ])
    // VERSION_OF ties each version to its document.
    const versionOf = await memory.graph.in(first.documentId, 'VERSION_OF')
    expect(versionOf.map((e) => e.src)).toEqual(versions.map((v) => v.id))
    expect((await memory.documents.version(written.versionId)).content).toBe('v2')
    expect((await memory.stats()).counts).toMatchObject({ documents: 1, doc_versions: 3 })
  })

  it('a new version dated before the latest is refused, nothing written: versions are numbered in time', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
    await memory.observeDocument({ path: 'src/app.ts', content: 'v1', conversationId: 'c1' })
    clock.advance(1000)
    const v2 = await memory.observeDocument({ path: 'src/app.ts', content: 'v2', conversationId: 'c2' })
    const early = new Date(clock.now().getTime() - 1500)
    await expect(memory.observeDocument({ path: 'src/app.ts', content: 'v3', conversationId: 'c3', createdAt: early })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      details: { field: 'createdAt' },
    })
    // A turn that brings such a version is refused whole.
    const turn = memory.recordTurn({
      conversationId: 'c3',
      user: 'edit it',
      agent: 'Done.',
      createdAt: early,
      procedures: [{ tool: 'edit_file', args: {}, document: { path: 'src/app.ts', content: 'v3', effect: 'write' } }],
    })
    await expect(turn).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    expect((await memory.stats()).counts).toMatchObject({ events: 0, doc_versions: 2 })
    // The same content as the latest is no new version, whenever it was seen; a later time is one.
    expect(await memory.observeDocument({ path: 'src/app.ts', content: 'v2', conversationId: 'c3', createdAt: early })).toMatchObject({
      versionId: v2.versionId,
      created: false,
    })
    expect(await memory.observeDocument({ path: 'src/app.ts', content: 'v3', conversationId: 'c3', createdAt: clock.now() })).toMatchObject({
      version: 3,
    })
    // Nor after now: a version to come would hold back every version until its time.
    const later = new Date(clock.now().getTime() + 60_000)
    await expect(memory.observeDocument({ path: 'src/app.ts', content: 'v4', conversationId: 'c3', createdAt: later })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      details: { field: 'createdAt' },
    })
    expect((await memory.observeDocument({ path: 'src/app.ts', content: 'v4', conversationId: 'c3' })).version).toBe(4)
  })

  it('a URL is found again by any form of it: escapes, a trailing dot, a scheme without //, a file: URL as its path', async () => {
    await using memory = await openTestMemory({ workspace: { mode: 'local', root: '/repo' } })
    const a = await memory.observeDocument({ url: 'https://a.com/%7efoo?', content: 'x', conversationId: 'c1' })
    expect((await memory.observeDocument({ url: 'https://A.com./~foo', content: 'x', conversationId: 'c1' })).documentId).toBe(a.documentId)
    const mail = await memory.observeDocument({ url: 'mailto:x@y.com', content: 'hi', conversationId: 'c1' })
    expect((await memory.documents.get('mailto:x@y.com')).id).toBe(mail.documentId)
    const file = await memory.observeDocument({ url: 'file:///repo/src/a.ts', content: 'x', conversationId: 'c1' })
    expect((await memory.observeDocument({ path: 'src/a.ts', content: 'x', conversationId: 'c1' })).documentId).toBe(file.documentId)
    await expect(memory.observeDocument({ path: 'file:///repo/src/a.ts', content: 'x', conversationId: 'c1' })).rejects.toMatchObject({ code: 'INVALID_INPUT' })

    // A key past what its index holds is refused by name, however compressible.
    for (const ref of [{ path: `src/${'é'.repeat(1000)}.ts` }, { url: `https://a.com/${'x'.repeat(3000)}` }, { url: `https://a.com/${'é'.repeat(700)}` }]) {
      const refused = memory.observeDocument({ ...ref, content: 'x', conversationId: 'c1' })
      await expect(refused).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('MAX_DOCUMENT_KEY_BYTES') })
    }
    expect((await memory.observeDocument({ path: `src/${'a'.repeat(1990)}`, content: 'x', conversationId: 'c1' })).created).toBe(true)
  })

  it('matches by hash: content and contentHash observations are the same version', async () => {
    await using memory = await openTestMemory()
    const a = await memory.observeDocument({ path: '/etc/hosts', content: 'hello', conversationId: 'c1' })
    const b = await memory.observeDocument({
      path: '/etc/hosts',
      contentHash: '2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824',
      conversationId: 'c2',
    })
    expect(b).toMatchObject({ versionId: a.versionId, created: false, contentHash: a.contentHash })
    const c = await memory.observeDocument({ path: '/etc/hosts', contentHash: 'f'.repeat(64), conversationId: 'c2' })
    expect(c).toMatchObject({ version: 2, provenance: 'external' })
    expect((await memory.documents.version(c.versionId)).content).toBeNull()
    await expect(
      memory.observeDocument({ path: '/etc/hosts', content: 'x', contentHash: 'f'.repeat(64), conversationId: 'c' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('staleness counts the versions between a past one and the latest; volatility and familiarity follow the history', async () => {
    const clock = testClock('2025-03-01T00:00:00.000Z')
    await using memory = await openTestMemory({ now: clock.now })
    const path = '/home/u/project/notes.md'
    const seen: string[] = []
    for (let n = 1; n <= 5; n++) {
      const r = await memory.observeDocument({ path, content: `rev ${n}`, conversationId: `c${(n % 3) + 1}` })
      seen.push(r.versionId)
      clock.advance(DAY)
    }
    // Conversation c9 touches v2 through a turn (an edge), without creating a version.
    await memory.recordTurn({
      conversationId: 'c9',
      user: 'what did the notes say?',
      agent: 'rev 5',
      procedures: [{ tool: 'read', args: {}, document: { path, content: 'rev 5', effect: 'read' } }],
    })

    const s = await memory.documents.signals(path)
    expect(s.versionCount).toBe(5)
    expect(s.latest).toMatchObject({ versionId: seen[4], version: 5, createdAt: '2025-03-05T00:00:00.000Z' })
    expect(s.staleness).toEqual({
      [seen[0] as string]: 4,
      [seen[1] as string]: 3,
      [seen[2] as string]: 2,
      [seen[3] as string]: 1,
      [seen[4] as string]: 0,
    })
    expect(s.volatility).toBe(1) // 4 changes over 4 days
    expect(s.familiarity).toBe(4) // c1, c2, c3 created versions; c9 read one
    expect(s.externalChanges).toBe(4)
    expect(s.agentChanges).toBe(0)

    expect(await memory.documents.stalenessOf(seen[1] as string)).toEqual({
      versionId: seen[1],
      documentId: s.documentId,
      version: 2,
      latestVersionId: seen[4],
      latestVersion: 5,
      staleness: 3,
    })

    // As of the third day, v3 was the latest.
    const then = await memory.documents.signals(path, { asOf: '2025-03-03T12:00:00Z' })
    expect(then.versionCount).toBe(3)
    expect(then.staleness).toEqual({ [seen[0] as string]: 2, [seen[1] as string]: 1, [seen[2] as string]: 0 })
    expect(then.familiarity).toBe(3)
    expect((await memory.documents.stalenessOf(seen[1] as string, { asOf: '2025-03-03T12:00:00Z' })).staleness).toBe(1)
    await expect(memory.documents.stalenessOf(seen[4] as string, { asOf: '2025-03-03T12:00:00Z' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    })
    expect((await memory.documents.history(path, { asOf: '2025-03-02T00:00:00Z' })).versions).toHaveLength(2)
  })

  it('an observation made by an event links that event to the version: interactions and buildContext find the conversation', async () => {
    const clock = testClock('2025-03-01T00:00:00.000Z')
    await using memory = await openTestMemory({ now: clock.now })
    const path = '/repo/src/billing.ts'
    const human = { type: 'human' as const, id: 'ann' }
    const agent = { type: 'agent' as const, id: 'coder' }
    await memory.record({ kind: 'message', scope: { conversationId: 'c1' }, actor: human, content: { text: 'why do invoices round down?' } })
    const reply = await memory.record({
      kind: 'message',
      scope: { conversationId: 'c1' },
      actor: agent,
      content: { text: 'billing.ts truncates cents before summing.' },
    })
    clock.advance(1000)
    const seen = await memory.observeDocument({ path, content: 'export const total = 1\n', conversationId: 'c1', eventId: reply.eventId })
    const touches = await memory.documents.interactions(path)
    expect(touches.map((t) => [t.rel, t.eventId, t.conversationId, t.versionId])).toEqual([['OBSERVED', reply.eventId, 'c1', seen.versionId]])
    expect((await memory.graph.out(reply.eventId, 'OBSERVED'))[0]?.props).toEqual({ cause: 'read' })
    // Another conversation whose event reads the file is shown that earlier answer.
    clock.advance(1000)
    const ask = await memory.record({ kind: 'message', scope: { conversationId: 'c2' }, actor: human, content: { text: 'open billing.ts' } })
    await memory.observeDocument({ path, content: 'export const total = 1\n', conversationId: 'c2', eventId: ask.eventId })
    const bundle = await memory.buildContext({ query: 'payment totals', conversationId: 'c2' })
    const linked = bundle.sections.find((x) => x.name === 'retrieved_evidence')?.items.filter((i) => i.source.via === `document:${path}`)
    expect(linked?.map((i) => i.id)).toEqual([reply.eventId])
    // Without an event nothing is linked; an unknown event, or one of another conversation, is refused and nothing is written.
    await memory.observeDocument({ path, content: 'export const total = 1\n', conversationId: 'c3' })
    expect(await memory.documents.interactions(path)).toHaveLength(2)
    await expect(memory.observeDocument({ path, content: 'v2', conversationId: 'c1', eventId: 'evt_nothing' })).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(memory.observeDocument({ path, content: 'v2', conversationId: 'c2', eventId: reply.eventId })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    })
    expect((await memory.documents.history(path)).versions).toHaveLength(1)
    // A conversation that wrote a new version without an event touched the file as well: the
    // messages of other conversations that touched it are linked into its context, newest first.
    clock.advance(1000)
    await memory.observeDocument({ path, content: 'export const total = 2\n', conversationId: 'c4' })
    const fresh = await memory.buildContext({ query: 'payment totals', conversationId: 'c4' })
    const found = fresh.sections.find((x) => x.name === 'retrieved_evidence')?.items.filter((i) => i.source.via === `document:${path}`)
    expect(found?.map((i) => i.id)).toEqual([ask.eventId, reply.eventId])
  })

  it('local mode: the same relative path from a project opened at two roots is one document', async () => {
    await using t = await openTestEngine({ workspace: { mode: 'local', root: '/home/ann/invoicer' } })
    const { createEngine } = await import('../../src/core/engine.ts')
    const moved = await createEngine({ db: t.db, workspace: { mode: 'local', root: '/mnt/backup/invoicer/' } })

    const a = await t.engine.observeDocument({ path: '/home/ann/invoicer/src/main.ts', content: 'one', conversationId: 'c1' })
    const b = await moved.observeDocument({ path: 'src/main.ts', content: 'one', conversationId: 'c2' })
    const c = await moved.observeDocument({ path: '/mnt/backup/invoicer/src/main.ts', content: 'two', conversationId: 'c2' })
    expect(b).toMatchObject({ documentId: a.documentId, versionId: a.versionId, created: false })
    expect(c).toMatchObject({ documentId: a.documentId, version: 2, canonicalKey: 'src/main.ts' })
    expect((await moved.documents.get('src/main.ts')).id).toBe(a.documentId)
    expect((await t.engine.documents.get('/home/ann/invoicer/src/main.ts')).id).toBe(a.documentId)

    await expect(
      moved.observeDocument({ path: '/home/ann/invoicer/src/main.ts', content: 'x', conversationId: 'c3' }),
    ).rejects.toMatchObject({ code: 'PATH_OUTSIDE_ROOT' })
    await expect(moved.observeDocument({ path: '../../etc/passwd', content: 'x', conversationId: 'c3' })).rejects.toMatchObject({
      code: 'PATH_OUTSIDE_ROOT',
    })
  })

  it('global mode: the same absolute path across conversations is one document; URLs are normalised', async () => {
    await using memory = await openTestMemory()
    const a = await memory.observeDocument({ path: '/home/u/a/src/auth.py', content: 'x', conversationId: 'c1' })
    const b = await memory.observeDocument({ path: '/home/u/a/./src//auth.py', content: 'x', conversationId: 'c2' })
    const other = await memory.observeDocument({ path: '/home/u/b/src/auth.py', content: 'x', conversationId: 'c2' })
    expect(b.documentId).toBe(a.documentId)
    expect(other.documentId).not.toBe(a.documentId)
    await expect(memory.observeDocument({ path: 'src/auth.py', content: 'x', conversationId: 'c1' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    })

    const u1 = await memory.observeDocument({ url: 'HTTPS://Docs.Example.com:443/guide#intro', content: 'g', conversationId: 'c1' })
    const u2 = await memory.observeDocument({ url: 'https://docs.example.com/guide', content: 'g', conversationId: 'c2' })
    expect(u1).toMatchObject({ canonicalKey: 'https://docs.example.com/guide', keyKind: 'url' })
    expect(u2.documentId).toBe(u1.documentId)
    expect((await memory.documents.get('https://docs.example.com/guide#other')).id).toBe(u1.documentId)
    expect((await memory.documents.get({ documentId: a.documentId })).canonicalKey).toBe('/home/u/a/src/auth.py')
    expect((await memory.stats()).counts.documents).toBe(3)
  })
})

describe('documents.deduplicate', () => {
  async function copies() {
    const clock = testClock('2025-06-01T09:00:00.000Z')
    const t = await openTestEngine({ now: clock.now, workspace: { mode: 'global' } })
    const m = t.engine
    const text = 'export const retries = 3\n'.repeat(40)
    const see = async (path: string, content: string, conversationId: string, tenantId = 'default') => {
      clock.advance(1000)
      return m.observeDocument({ path, content, conversationId, scope: { tenantId } })
    }
    const a1 = await see('/home/u/app/config.ts', text, 'c1')
    const b1 = await see('/home/u/app-copy/config.ts', text, 'c2')
    const a2 = await see('/home/u/app/config.ts', 'export const retries = 5\n', 'c1')
    // A revert: the first text again, a third version of the first document.
    const a3 = await see('/home/u/app/config.ts', text, 'c3')
    // The same text, known only by hash; and in another tenant.
    clock.advance(1000)
    const hashOnly = await m.observeDocument({ path: '/srv/config.ts', contentHash: a1.contentHash, conversationId: 'c4' })
    const other = await see('/home/u/app/config.ts', text, 'c5', 't2')
    return { t, m, text, a1, b1, a2, a3, hashOnly, other, clock }
  }

  it('stores an identical content once: the earliest version keeps it, the others read it through contentOf', async () => {
    const { t, m, text, a1, b1, a2, a3, hashOnly, other } = await copies()
    await using _ = t
    const stored = async () =>
      (await t.db.query<{ n: number }>(`SELECT coalesce(sum(octet_length(content)), 0)::int AS n FROM doc_versions`)).rows[0]?.n
    const before = await stored()

    expect(await m.documents.deduplicate({ tenantId: 'default' })).toEqual({
      contents: 1,
      versions: 2,
      bytesFreed: 2 * text.length,
    })
    expect(await stored()).toBe((before ?? 0) - 2 * text.length)
    for (const v of [a1, b1, a3]) expect((await m.documents.version(v.versionId)).content).toBe(text)
    expect(await m.documents.version(other.versionId, { tenantId: 't2' })).toMatchObject({ content: text, contentOf: null })
    expect((await m.documents.version(a2.versionId)).content).toBe('export const retries = 5\n')
    expect((await m.documents.version(hashOnly.versionId)).content).toBeNull()
    const { versions } = await m.documents.history('/home/u/app/config.ts')
    expect(versions.map((v) => v.contentOf)).toEqual([null, null, a1.versionId])
    expect((await m.documents.history('/home/u/app-copy/config.ts')).versions[0]?.contentOf).toBe(a1.versionId)
    // Nothing else about a version changes.
    expect(versions.map((v) => [v.version, v.contentHash, v.bytes, v.conversationId])).toEqual([
      [1, a1.contentHash, text.length, 'c1'],
      [2, a2.contentHash, 25, 'c1'],
      [3, a1.contentHash, text.length, 'c3'],
    ])

    // Running again finds nothing; the other tenant is deduplicated when no tenant is named.
    expect(await m.documents.deduplicate({ tenantId: 'default' })).toEqual({ contents: 0, versions: 0, bytesFreed: 0 })
    expect(await m.documents.deduplicate()).toEqual({ contents: 0, versions: 0, bytesFreed: 0 })
    const again = await m.observeDocument({ path: '/home/u/b/config.ts', content: text, conversationId: 'c6', scope: { tenantId: 't2' } })
    expect(await m.documents.deduplicate()).toEqual({ contents: 1, versions: 1, bytesFreed: text.length })
    expect((await m.documents.version(again.versionId, { tenantId: 't2' })).contentOf).toBe(other.versionId)

    // The same file seen again is still the same version; a new document with it is a new copy.
    expect((await m.observeDocument({ path: '/home/u/app-copy/config.ts', content: text, conversationId: 'c7' })).created).toBe(false)
    await expect(m.documents.deduplicate({ tenantId: '' })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(m.documents.deduplicate({ tenant: 'x' } as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('versions stay append-only: only the move to a version with the same content is allowed, and only inside deduplicate', async () => {
    const { t, a1, a2, b1 } = await copies()
    await using _ = t
    await expect(
      t.db.query(`UPDATE doc_versions SET content = NULL, content_of = $1 WHERE id = $2`, [a1.versionId, b1.versionId]),
    ).rejects.toMatchObject({ code: 'EG001' })
    await t.db.transaction(async (tx) => {
      await tx.query(`SET LOCAL engram.deduplicating = 'on'`)
      // Changing anything else, or pointing a version at itself, is still refused.
      await tx.query('SAVEPOINT s')
      await expect(
        tx.query(`UPDATE doc_versions SET content = NULL, content_of = $1, version = 9 WHERE id = $2`, [a1.versionId, b1.versionId]),
      ).rejects.toMatchObject({ code: 'EG001' })
      await tx.query('ROLLBACK TO SAVEPOINT s')
      await expect(
        tx.query(`UPDATE doc_versions SET content = NULL, content_of = id WHERE id = $1`, [a2.versionId]),
      ).rejects.toMatchObject({ code: 'EG001' })
      await tx.query('ROLLBACK TO SAVEPOINT s')
      await expect(tx.query(`DELETE FROM doc_versions WHERE id = $1`, [a2.versionId])).rejects.toMatchObject({ code: 'EG001' })
      await tx.query('ROLLBACK TO SAVEPOINT s')
    })
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM doc_versions WHERE content_of IS NOT NULL`)
    expect(rows[0]?.n).toBe(0)
  })

  it('forgetting the version that stores a shared content hands it to the earliest one left', async () => {
    const { t, m, text, a1, b1, a3 } = await copies()
    await using _ = t
    await m.documents.deduplicate()
    const result = await m.forget({ conversationId: 'c1' })
    expect(result.counts.versionsCleared).toBe(2)
    const [first, copy, revert] = await Promise.all([a1, b1, a3].map((v) => m.documents.version(v.versionId)))
    expect(first).toMatchObject({ content: null, contentOf: null, conversationId: null })
    expect(copy).toMatchObject({ content: text, contentOf: null })
    expect(revert).toMatchObject({ content: text, contentOf: b1.versionId })
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM doc_versions WHERE content IS NOT NULL AND content_hash = $1`,
      [a1.contentHash],
    )
    // One copy for the default tenant, one for t2.
    expect(rows[0]?.n).toBe(2)
    // Forgetting the one that holds it now leaves the revert with the content; forgetting the last empties it.
    await m.forget({ conversationId: 'c2' })
    expect(await m.documents.version(a3.versionId)).toMatchObject({ content: text, contentOf: null })
    await m.forget({ conversationId: 'c3' })
    expect(await m.documents.version(a3.versionId)).toMatchObject({ content: null, contentOf: null })
  })
})
