import { expect, type Page, test } from '@playwright/test'
import { SCHEMA_VERSION } from '../../src/core/db/schema/migrations.ts'
import { openHarness, openHarnessTabs } from './support.ts'

for (const storage of ['opfs', 'idb'] as const) {
  test(`${storage}: a new memory starts from the template and is found again after a reload`, async ({ page }) => {
    await openHarness(page)
    const first = await page.evaluate(async (storage) => {
      const memory = await window.engram.createMemory({ name: 'reload', storage })
      const info = await memory.ready
      await memory.close()
      return info
    }, storage)
    expect(first).toMatchObject({ storage, role: 'leader', created: true, fromTemplate: true })
    if (storage === 'opfs') {
      // The template holds one database (the memory's): initdb's two template databases are
      // dropped when it is built, so an open reads less than half as many files.
      const databases = await page.evaluate(async () => {
        const root = await navigator.storage.getDirectory()
        const base = await (await root.getDirectoryHandle('engram-reload')).getDirectoryHandle('base')
        const names: string[] = []
        for await (const name of (base as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(name)
        return names
      })
      expect(databases).toEqual(['5'])
      // Its write-ahead log comes in 1 MiB segments (INITDB_PARAMS), not Postgres' 16 MiB.
      const segments = await page.evaluate(async () => {
        const root = await navigator.storage.getDirectory()
        const wal = await (await root.getDirectoryHandle('engram-reload')).getDirectoryHandle('pg_wal')
        const sizes: number[] = []
        for await (const [name, handle] of (wal as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
          if (/^[0-9A-F]{24}$/.test(name)) sizes.push((await (handle as FileSystemFileHandle).getFile()).size)
        }
        return sizes
      })
      expect(segments.length).toBeGreaterThan(0)
      expect(new Set(segments)).toEqual(new Set([2 ** 20]))
    } else {
      // A page per record in the database named after the memory, not PGlite's file-per-record store.
      const kept = await page.evaluate(async () => {
        const names = (await indexedDB.databases()).map((d) => d.name)
        const db = await new Promise<IDBDatabase>((resolve, reject) => {
          const req = indexedDB.open('engram-reload')
          req.onsuccess = () => resolve(req.result)
          req.onerror = () => reject(req.error ?? new Error('open failed'))
        })
        const count = (store: string) =>
          new Promise<number>((resolve, reject) => {
            const req = db.transaction(store).objectStore(store).count()
            req.onsuccess = () => resolve(req.result)
            req.onerror = () => reject(req.error ?? new Error('count failed'))
          })
        const pages = await count('pages')
        const files = await count('files')
        const control = await new Promise<unknown>((resolve) => {
          const req = db.transaction('files').objectStore('files').get('/global/pg_control')
          req.onsuccess = () => resolve(req.result)
        })
        db.close()
        return { names, pages, files, control }
      })
      expect(kept.names).toContain('engram-reload')
      expect(kept.names).not.toContain('/pglite/engram-reload')
      expect(kept.files).toBeGreaterThan(400)
      // About 10 MB of directory in 8 KiB pages.
      expect(kept.pages).toBeGreaterThan(1000)
      expect(kept.control).toEqual({ dir: false, size: 8192 })
    }

    await page.reload()
    await page.waitForFunction(() => window.engramHarnessReady === true)
    const second = await page.evaluate(async (storage) => {
      const memory = await window.engram.createMemory({ name: 'reload', storage })
      const info = await memory.ready
      const ping = await memory.ping()
      await memory.close()
      const listed = (await window.engram.listMemories()).map((m) => `${m.storage}:${m.name}`)
      return { info, ping, listed }
    }, storage)
    expect(second.info).toMatchObject({ storage, created: false, fromTemplate: false })
    expect(second.ping.schemaVersion).toBe(SCHEMA_VERSION)
    expect(second.listed).toContain(`${storage}:reload`)
  })
}

test("idb: a memory kept in PGlite's own IndexedDB file system (before the page store) moves into the page store when opened", async ({
  page,
}) => {
  // Four opens of the memory, one of them the move (two more PGlite starts): 42 s on the development machine.
  test.setTimeout(150_000)
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    type Api = {
      ready: Promise<{ created: boolean }>
      recordTurn(input: { conversationId: string; user: string; agent: string }): Promise<{ userEventId: string }>
      events: { get(id: string): Promise<unknown> }
      stats(): Promise<{ counts: Record<string, number> }>
      close(): Promise<void>
    }
    const names = async () => (await indexedDB.databases()).map((d) => d.name)
    const open = (name: string) =>
      new Promise<IDBDatabase>((resolve, reject) => {
        const request = indexedDB.open(name, 1)
        request.onupgradeneeded = () => {
          request.result.createObjectStore('files')
          request.result.createObjectStore('pages')
        }
        request.onsuccess = () => resolve(request.result)
        request.onerror = () => reject(request.error ?? new Error('open failed'))
      })
    const fileKeys = async (name: string) => {
      const db = await open(name)
      const keys = await new Promise<IDBValidKey[]>((resolve, reject) => {
        const request = db.transaction('files').objectStore('files').getAllKeys()
        request.onsuccess = () => resolve(request.result)
        request.onerror = () => reject(request.error ?? new Error('getAllKeys failed'))
      })
      db.close()
      return keys
    }
    const { userEventId: before } = await window.engramLegacyIdb('legacy')
    // A copy into the page store that was cut short: one stray file, which must not survive.
    const stray = await open('engram-legacy')
    await new Promise<void>((resolve, reject) => {
      const tx = stray.transaction('files', 'readwrite')
      tx.objectStore('files').put({ dir: false, size: 0 }, 'stray-file')
      tx.oncomplete = () => resolve()
      tx.onerror = () => reject(tx.error ?? new Error('put failed'))
    })
    const options = { name: 'legacy', storage: 'idb', embedder: { kind: 'none' } } as const

    // While that copy is held open elsewhere, the memory cannot be moved: it opens in its old
    // database, whole.
    const first = (await window.engram.createMemory(options)) as unknown as Api
    const createdFirst = (await first.ready).created
    const foundFirst = Boolean(await first.events.get(before))
    const during = await first.recordTurn({ conversationId: 'c', user: 'written before the move', agent: 'ok' })
    await first.close()
    const whileHeld = await names()
    stray.close()

    // Then it moves: the old database goes, and every turn is in the page store.
    const second = (await window.engram.createMemory(options)) as unknown as Api
    const createdSecond = (await second.ready).created
    const after = await second.recordTurn({ conversationId: 'c', user: 'written after the move', agent: 'ok' })
    await second.close()
    const afterMove = await names()
    const keys = await fileKeys('engram-legacy')
    const third = (await window.engram.createMemory(options)) as unknown as Api
    const found = await Promise.all([before, during.userEventId, after.userEventId].map(async (id) => Boolean(await third.events.get(id))))
    const events = (await third.stats()).counts.events
    await third.close()
    await window.engram.deleteMemory('legacy')
    return {
      createdFirst,
      foundFirst,
      whileHeld,
      createdSecond,
      afterMove,
      pageStoreFiles: keys.length,
      strayKept: keys.includes('stray-file'),
      found,
      events,
      afterDelete: await names(),
    }
  })
  expect(outcome).toMatchObject({
    createdFirst: false,
    foundFirst: true,
    createdSecond: false,
    strayKept: false,
    found: [true, true, true],
    events: 6,
  })
  expect(outcome.whileHeld).toContain('/pglite/engram-legacy')
  expect(outcome.afterMove).not.toContain('/pglite/engram-legacy')
  expect(outcome.afterMove).toContain('engram-legacy')
  expect(outcome.pageStoreFiles).toBeGreaterThan(100)
  expect(outcome.afterDelete).not.toContain('/pglite/engram-legacy')
  expect(outcome.afterDelete).not.toContain('engram-legacy')
})

test('auto storage picks OPFS in a worker on a secure origin', async ({ page }) => {
  await openHarness(page)
  const info = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'auto' })
    const info = await memory.ready
    await memory.close()
    return info
  })
  expect(info.storage).toBe('opfs')
  expect(info.dataDir).toBe('memfs2opfs://engram-auto')
})

test('deleteMemory refuses while a tab has the memory open, then deletes it', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const { createMemory, deleteMemory, listMemories } = window.engram
    const memory = await createMemory({ name: 'doomed', storage: 'idb' })
    let whileOpen = 'none'
    try {
      await deleteMemory('doomed')
    } catch (error) {
      whileOpen = (error as { code: string }).code
    }
    await memory.close()
    await deleteMemory('doomed')
    const listed = (await listMemories()).some((m) => m.name === 'doomed')
    const again = await createMemory({ name: 'doomed', storage: 'idb' })
    const info = await again.ready
    await again.close()
    return { whileOpen, listed, createdAgain: info.created }
  })
  expect(outcome).toEqual({ whileOpen: 'LOCKED_BY_OTHER_TAB', listed: false, createdAgain: true })
})

test('an invalid memory name is refused before any worker starts', async ({ page }) => {
  await openHarness(page)
  const code = await page.evaluate(async () => {
    try {
      await window.engram.createMemory({ name: '../etc' })
      return 'none'
    } catch (error) {
      return (error as { code: string }).code
    }
  })
  expect(code).toBe('INVALID_INPUT')
})

test('a second tab follows the owner, and takes over when the owner closes', async ({ context }) => {
  const [owner, other] = (await openHarnessTabs(context, 2)) as [Page, Page]
  const ownerInfo = await owner.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'shared', storage: 'opfs' })
    ;(window as unknown as { memory: typeof memory }).memory = memory
    return memory.ready
  })
  expect(ownerInfo.role).toBe('leader')
  const otherInfo = await other.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'shared', storage: 'opfs' })
    ;(window as unknown as { memory: typeof memory }).memory = memory
    const info = await memory.ready
    return { ...info, ping: await memory.ping() }
  })
  expect(otherInfo.role).toBe('follower')
  expect(otherInfo.ping.schemaVersion).toBeGreaterThan(0)

  await owner.close()
  // Calls keep coming while this tab takes over: sent to the closed owner, or arriving while
  // this worker opens the database, each waits and is answered.
  const afterTakeover = await other.evaluate(async () => {
    const memory = (window as unknown as { memory: { ping(): Promise<{ schemaVersion: number }> } }).memory
    const calls: Promise<{ schemaVersion: number } | string>[] = []
    for (let i = 0; i < 60; i++) {
      calls.push(memory.ping().catch((error: unknown) => String(error)))
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    const answers = await Promise.all(calls)
    return { failed: answers.filter((a) => typeof a === 'string'), last: answers.at(-1) as { schemaVersion: number } }
  })
  expect(afterTakeover.failed).toEqual([])
  expect(afterTakeover.last.schemaVersion).toBe(otherInfo.ping.schemaVersion)
})

test('one name in OPFS and in IndexedDB is two memories, each its own owner, in tabs side by side', async ({ context }) => {
  const [a, b] = (await openHarnessTabs(context, 2)) as [Page, Page]
  const open = (page: Page, storage: 'opfs' | 'idb') =>
    page.evaluate(async (kind) => {
      const memory = await window.engram.createMemory({ name: 'twin', storage: kind })
      ;(window as unknown as { memory: typeof memory }).memory = memory
      await memory.recordTurn({ conversationId: kind, user: `kept in ${kind}`, agent: 'noted' })
      const info = await memory.ready
      return { role: info.role, storage: info.storage, events: (await memory.stats()).counts.events }
    }, storage)
  expect(await open(a, 'opfs')).toEqual({ role: 'leader', storage: 'opfs', events: 2 })
  // Before, this tab followed the OPFS owner, wrote there, and said it used IndexedDB.
  expect(await open(b, 'idb')).toEqual({ role: 'leader', storage: 'idb', events: 2 })
  const conversations = await b.evaluate(async () => {
    const memory = (window as unknown as { memory: { events: { list(i: { conversationId: string }): Promise<unknown[]> } } }).memory
    return { idb: (await memory.events.list({ conversationId: 'idb' })).length, opfs: (await memory.events.list({ conversationId: 'opfs' })).length }
  })
  expect(conversations).toEqual({ idb: 2, opfs: 0 })
})

test("a following tab knows the owner's model and hears its indexing progress for its own writes", async ({ context }) => {
  const [owner, other] = (await openHarnessTabs(context, 2)) as [Page, Page]
  const ownerModel = await owner.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'relay', storage: 'opfs' })
    ;(window as unknown as { memory: typeof memory }).memory = memory
    await memory.ready
    for (let i = 0; i < 600 && (await memory.embedderInfo()).state === 'loading'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    return memory.embedderInfo()
  })
  expect(ownerModel).toMatchObject({ state: 'ready' })
  const outcome = await other.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'relay', storage: 'opfs', embedder: { kind: 'none' } })
    const info = await memory.ready
    // Joined after the owner loaded its model: the owner's state, not this page's own option.
    const model = await memory.embedderInfo()
    const seen: { pending: number; done: number; running: boolean }[] = []
    const finished = new Promise<void>((resolve) => {
      memory.onIndexProgress((s) => {
        seen.push({ pending: s.pending, done: s.done, running: s.running })
        if (!s.running && s.pending === 0 && s.done > 0) resolve()
      })
    })
    await memory.record({
      kind: 'message',
      scope: { conversationId: 'c1' },
      actor: { type: 'human', id: 'u1' },
      content: { text: 'the follower wrote this; the owner embeds it' },
    })
    const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 60_000))
    const result = await Promise.race([finished.then(() => 'done' as const), timeout])
    await memory.close()
    return { role: info.role, result, last: seen.at(-1), model }
  })
  await owner.evaluate(async () => {
    await (window as unknown as { memory: { close(): Promise<void> } }).memory.close()
  })
  expect(outcome.role).toBe('follower')
  expect(outcome.model).toEqual(ownerModel)
  expect(outcome.result).toBe('done')
  expect(outcome.last).toMatchObject({ pending: 0, running: false })
})

test('opfs: retrieval hits written at close, and an archive, survive reopening the memory', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const options = { name: 'archived', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 } as const
    let memory = await window.engram.createMemory(options)
    await memory.recordTurn({ conversationId: 'c-found', user: 'Where do refunds post?', agent: 'To the suspense ledger.' })
    await memory.recordTurn({ conversationId: 'c-idle', user: 'Rename the payroll job', agent: 'Renamed to payroll-nightly.' })
    await memory.search('refunds suspense ledger')
    // Closing writes the hits the search noted.
    await memory.close()
    memory = await window.engram.createMemory(options)
    const candidates = await memory.archives.candidates({ idleForMs: 0 })
    const [archive] = await memory.archives.create({ conversationIds: ['c-idle'] })
    await memory.close()
    memory = await window.engram.createMemory(options)
    try {
      const listed = (await memory.archives.list()).map((a) => a.id)
      const before = (await memory.search('payroll')).length
      await memory.archives.restore(archive!.id)
      const after = (await memory.search('payroll')).map((h) => h.conversationId)
      return {
        hit: candidates.map((c) => [c.conversationId, c.lastHitAt !== null]),
        kept: listed.length === 1 && listed[0] === archive!.id,
        before,
        after: [...new Set(after)],
      }
    } finally {
      await memory.close()
      await window.engram.deleteMemory('archived')
    }
  })
  expect(outcome).toEqual({
    hit: [
      ['c-found', true],
      ['c-idle', false],
    ],
    kept: true,
    before: 0,
    after: ['c-idle'],
  })
})

test('opfs: with a vault, high content never reaches the memory files in plain text', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    // A key the app keeps; non-extractable, so no script can read it back.
    const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])
    const base = { name: 'vaulted', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 } as const
    const codeOf = async (run: () => Promise<unknown>) => {
      try {
        await run()
        return 'none'
      } catch (error) {
        return (error as { code?: string }).code ?? String(error)
      }
    }
    let memory = await window.engram.createMemory({ ...base, vault: { key } })
    await memory.recordTurn({
      conversationId: 'c1',
      sensitivity: 'high',
      user: 'My quokkaverse account number is 4411',
      agent: 'Noted the quokkaverse account.',
      procedures: [{ tool: 'lookup', args: { account: 'quokkaverse-4411' }, output: 'quokkaverse: active' }],
    })
    await memory.remember({ content: 'The quokkaverse PIN hint is the harbour', category: 'fact', sensitivity: 'high' })
    await memory.recordTurn({ conversationId: 'c1', user: 'Is the wallabyform open?', agent: 'The wallabyform is open.' })
    await memory.close()

    // Every byte of the memory's folder (data files and write-ahead log).
    const text = async (dir: FileSystemDirectoryHandle): Promise<string> => {
      let all = ''
      for await (const [, handle] of (dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
        all +=
          handle.kind === 'directory'
            ? await text(handle as FileSystemDirectoryHandle)
            : new TextDecoder('latin1').decode(await (await (handle as FileSystemFileHandle).getFile()).arrayBuffer())
      }
      return all
    }
    const files = await text(await (await navigator.storage.getDirectory()).getDirectoryHandle('engram-vaulted'))

    memory = await window.engram.createMemory({ ...base, vault: { key } })
    const reopened = {
      status: await memory.vault.status(),
      texts: (await memory.events.list({ conversationId: 'c1' })).map((e) => e.content.text ?? e.content.tool),
      memory: (await memory.memories.list()).map((m) => m.content),
    }
    await memory.close()
    memory = await window.engram.createMemory(base)
    const locked = {
      status: await memory.vault.status(),
      write: await codeOf(() => memory.recordTurn({ conversationId: 'c2', sensitivity: 'high', user: 'a', agent: 'b' })),
    }
    await memory.close()
    const wrong = await codeOf(async () => {
      const m = await window.engram.createMemory({ ...base, vault: { passphrase: 'not the key at all' } })
      await m.ready
    })
    await window.engram.deleteMemory('vaulted')
    return {
      sealedFound: files.includes('quokkaverse'),
      plainFound: files.includes('wallabyform'),
      reopened,
      locked,
      wrong,
    }
  })
  expect(outcome).toEqual({
    sealedFound: false,
    plainFound: true,
    reopened: {
      status: 'open',
      texts: [
        'My quokkaverse account number is 4411',
        'Noted the quokkaverse account.',
        'lookup',
        'lookup',
        'Is the wallabyform open?',
        'The wallabyform is open.',
      ],
      memory: ['The quokkaverse PIN hint is the harbour'],
    },
    locked: { status: 'locked', write: 'VAULT_LOCKED' },
    wrong: 'WRONG_PASSPHRASE',
  })
})
