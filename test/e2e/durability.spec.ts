import { expect, test } from '@playwright/test'
import { openHarness, openHarnessTabs } from './support.ts'

type Api = {
  recordTurn(input: { conversationId: string; user: string; agent: string }): Promise<{ userEventId: string }>
  events: { get(id: string): Promise<unknown> }
  stats(): Promise<{ counts: Record<string, number> }>
  close(): Promise<void>
  ready: Promise<{ created: boolean }>
}

for (const storage of ['opfs', 'idb'] as const) {
  test(`${storage}: a write acknowledged just before the worker is killed is there after reopening`, async ({ page }) => {
    await openHarness(page)
    const outcome = await page.evaluate(async (storage) => {
      const { createMemory } = window.engram
      const worker = new Worker(window.engramWorkerUrl, { type: 'module' })
      const memory = (await createMemory({ name: 'durable', storage, worker })) as unknown as Api
      const acked: string[] = []
      for (let i = 0; i < 3; i++) {
        const turn = await memory.recordTurn({ conversationId: 'c', user: `question ${i}`, agent: `answer ${i}` })
        acked.push(turn.userEventId)
      }
      worker.terminate() // no close(): the worker dies right after the acknowledgement
      const reopened = (await createMemory({ name: 'durable', storage })) as unknown as Api
      const found = await Promise.all(acked.map((id) => reopened.events.get(id).then(Boolean, () => false)))
      const { counts } = await reopened.stats()
      await reopened.close()
      return { found, events: counts.events }
    }, storage)
    expect(outcome.found).toEqual([true, true, true])
    expect(outcome.events).toBe(6)
  })
}

test('opfs: a worker killed while data-file writes are held back reopens with every acknowledged turn, by id and by keyword', async ({
  page,
}) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    type Searchable = Api & { search(q: string, o: { mode: 'keyword' }): Promise<{ eventId: string }[]> }
    const options = { name: 'held-back', storage: 'opfs', embedder: { kind: 'none' } } as const
    // An existing memory, closed cleanly: every file written.
    const first = (await window.engram.createMemory(options)) as unknown as Api
    await first.recordTurn({ conversationId: 'c', user: 'before', agent: 'closed cleanly' })
    await first.close()
    // Reopened, written to turn after turn, and killed at once: each commit's log is on disk,
    // the data files' bytes are largely held back (written after a pause or at a checkpoint).
    const worker = new Worker(window.engramWorkerUrl, { type: 'module' })
    const memory = (await window.engram.createMemory({ ...options, worker })) as unknown as Api
    const acked: string[] = []
    for (let n = 0; n < 40; n++) {
      const turn = await memory.recordTurn({ conversationId: 'c', user: `question zebra${n}`, agent: `answer ${n}` })
      acked.push(turn.userEventId)
    }
    worker.terminate()
    const reopened = (await window.engram.createMemory(options)) as unknown as Searchable
    const found = await Promise.all(acked.map((id) => reopened.events.get(id).then(Boolean, () => false)))
    const hits = await Promise.all([0, 20, 39].map(async (n) => (await reopened.search(`zebra${n}`, { mode: 'keyword' }))[0]?.eventId))
    const { counts } = await reopened.stats()
    // Writable after recovery.
    const after = await reopened.recordTurn({ conversationId: 'c', user: 'after recovery', agent: 'ok' })
    const afterFound = Boolean(await reopened.events.get(after.userEventId))
    await reopened.close()
    return { found: found.every(Boolean), hits, expected: [acked[0], acked[20], acked[39]], events: counts.events, afterFound }
  })
  expect(outcome.found).toBe(true)
  expect(outcome.hits).toEqual(outcome.expected)
  expect(outcome.events).toBe(2 + 80)
  expect(outcome.afterFound).toBe(true)
})

for (const storage of ['opfs', 'idb'] as const) {
  test(`${storage}: turns that fill several write-ahead log segments survive a kill; a new segment's zeros are not written`, async ({
    page,
  }) => {
    await openHarness(page)
    const outcome = await page.evaluate(async (storage) => {
      // No statistics refresh: its checkpoint would rename old segments to the next names (for
      // reuse, old records and all), and the segment in use at the kill would be one of those.
      const options = { name: 'segments', storage, embedder: { kind: 'none' }, warmUp: 0, statistics: 'manual' } as const
      const first = (await window.engram.createMemory(options)) as unknown as Api
      await first.recordTurn({ conversationId: 'c', user: 'before', agent: 'closed cleanly' })
      await first.close()
      // What the storage holds of the log: OPFS files by size, or IndexedDB pages per file.
      const segments = async (): Promise<Record<string, number>> => {
        const out: Record<string, number> = {}
        if (storage === 'opfs') {
          const root = await navigator.storage.getDirectory()
          const wal = await (await root.getDirectoryHandle('engram-segments')).getDirectoryHandle('pg_wal')
          for await (const [name, handle] of (wal as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
            if (handle.kind === 'file' && /^[0-9A-F]{24}$/.test(name)) out[name] = (await (handle as FileSystemFileHandle).getFile()).size
          }
          return out
        }
        const db = await new Promise<IDBDatabase>((resolve, reject) => {
          const open = indexedDB.open('engram-segments')
          open.onsuccess = () => resolve(open.result)
          open.onerror = () => reject(open.error ?? new Error('open failed'))
        })
        const keys = await new Promise<IDBValidKey[]>((resolve, reject) => {
          const all = db.transaction('pages').objectStore('pages').getAllKeys()
          all.onsuccess = () => resolve(all.result)
          all.onerror = () => reject(all.error ?? new Error('listing failed'))
        })
        db.close()
        for (const key of keys as [string, number][]) {
          const name = key[0].split('/').pop() ?? ''
          if (key[0].includes('/pg_wal/') && /^[0-9A-F]{24}$/.test(name)) out[name] = (out[name] ?? 0) + 1
        }
        return out
      }
      const before = Object.keys(await segments())
      // About 20 KiB of text a turn: 80 turns fill several segments of log (checked below).
      const worker = new Worker(window.engramWorkerUrl, { type: 'module' })
      const memory = (await window.engram.createMemory({ ...options, worker })) as unknown as Api
      const acked: string[] = []
      for (let n = 0; n < 80; n++) {
        const words = Array.from({ length: 2500 }, (_, i) => `w${(n * 7919 + i * 104729) % 1000003}`).join(' ')
        const turn = await memory.recordTurn({ conversationId: 'c', user: `question ${n} ${words}`, agent: `answer ${n}` })
        acked.push(turn.userEventId)
      }
      worker.terminate()
      const after = await segments()
      const added = Object.entries(after).filter(([name]) => !before.includes(name))
      const reopened = (await window.engram.createMemory(options)) as unknown as Api
      const found = await Promise.all(acked.map((id) => reopened.events.get(id).then(Boolean, () => false)))
      const { counts } = await reopened.stats()
      await reopened.close()
      return { found: found.every(Boolean), events: counts.events, added }
    }, storage)
    expect(outcome.found).toBe(true)
    expect(outcome.events).toBe(2 + 160)
    // New segments were made on the way. OPFS keeps each at its full length (1 MiB), zeros
    // left unwritten reading as zeros — but for the last, opened ahead of use, which the kill
    // may have cut short while it was made (an empty file, left out at the open); IndexedDB
    // stores only the pages records were written to, so the segment in use at the kill has
    // fewer than its 128.
    expect(outcome.added.length).toBeGreaterThanOrEqual(2)
    const added = outcome.added.sort(([a], [b]) => a.localeCompare(b))
    if (storage === 'opfs') {
      for (const [, bytes] of added.slice(0, -1)) expect(bytes).toBe(2 ** 20)
      expect([0, 2 ** 20]).toContain(added.at(-1)?.[1])
    } else expect(added.at(-1)?.[1]).toBeLessThan(128)
  })
}

test('opfs: past the bound on held-back data-file writes they are written; a memory closed cleanly, or killed, reopens with every turn', async ({
  page,
}) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    type Searchable = Api & { search(q: string, o: { mode: 'keyword' }): Promise<{ eventId: string }[]> }
    // The smallest page cache: pages leave it for the files between checkpoints.
    const options = { name: 'bounded', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0, statistics: 'manual', cacheMB: 16 } as const
    // About 20 KiB of text a turn, back to back (no pause for the idle write): the held-back
    // data-file writes pass their 8 MiB bound every dozen turns or so, and each time the flush
    // writes them all.
    const turns = async (memory: Api, from: number, to: number) => {
      const acked: string[] = []
      for (let n = from; n < to; n++) {
        const words = Array.from({ length: 2500 }, (_, i) => `w${(n * 7919 + i * 104729) % 1000003}`).join(' ')
        acked.push((await memory.recordTurn({ conversationId: 'c', user: `question zebra${n} ${words}`, agent: `answer ${n}` })).userEventId)
      }
      return acked
    }
    const check = async (acked: string[], probes: number[]) => {
      const reopened = (await window.engram.createMemory(options)) as unknown as Searchable
      const found = await Promise.all(acked.map((id) => reopened.events.get(id).then(Boolean, () => false)))
      const hits = await Promise.all(probes.map(async (n) => (await reopened.search(`zebra${n}`, { mode: 'keyword' }))[0]?.eventId))
      const { counts } = await reopened.stats()
      await reopened.close()
      return { found: found.every(Boolean), hits, expected: probes.map((n) => acked[n]), events: counts.events }
    }
    // Closed cleanly: pages that left the cache between checkpoints reached the files only
    // through those writes; the shutdown checkpoint counts on them.
    const first = (await window.engram.createMemory(options)) as unknown as Api
    const acked = await turns(first, 0, 40)
    await first.close()
    const closed = await check(acked, [0, 20, 39])
    // Killed at once after the last acknowledgement.
    const worker = new Worker(window.engramWorkerUrl, { type: 'module' })
    const second = (await window.engram.createMemory({ ...options, worker })) as unknown as Api
    acked.push(...(await turns(second, 40, 80)))
    worker.terminate()
    const killed = await check(acked, [0, 39, 60, 79])
    return { closed, killed }
  })
  expect(outcome.closed.found).toBe(true)
  expect(outcome.closed.hits).toEqual(outcome.closed.expected)
  expect(outcome.closed.events).toBe(80)
  expect(outcome.killed.found).toBe(true)
  expect(outcome.killed.hits).toEqual(outcome.killed.expected)
  expect(outcome.killed.events).toBe(160)
})

test('opfs: the next log segment is opened ahead, made as zeros; a memory killed with it unused, or cut short while it was made, opens and writes on into it', async ({
  page,
}) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const options = { name: 'ahead', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0, statistics: 'manual' } as const
    const root = await navigator.storage.getDirectory()
    const walFolder = async () => (await root.getDirectoryHandle('engram-ahead')).getDirectoryHandle('pg_wal')
    /** Each segment: its length and whether it holds anything but zeros. */
    const segments = async () => {
      const out: Record<string, { bytes: number; records: boolean }> = {}
      for await (const [name, handle] of ((await walFolder()) as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
        if (handle.kind !== 'file' || !/^[0-9A-F]{24}$/.test(name)) continue
        const data = new Uint8Array(await (await (handle as FileSystemFileHandle).getFile()).arrayBuffer())
        out[name] = { bytes: data.length, records: data.some((b) => b !== 0) }
      }
      return Object.entries(out).sort(([a], [b]) => a.localeCompare(b))
    }
    const bigTurn = (n: number) => ({
      conversationId: 'c',
      user: `question ${n} ${Array.from({ length: 2500 }, (_, i) => `w${(n * 7919 + i * 104729) % 1000003}`).join(' ')}`,
      agent: `answer ${n}`,
    })
    const killedAfter = async (from: number, to: number) => {
      const worker = new Worker(window.engramWorkerUrl, { type: 'module' })
      const memory = (await window.engram.createMemory({ ...options, worker })) as unknown as Api
      const acked: string[] = []
      for (let n = from; n < to; n++) acked.push((await memory.recordTurn(bigTurn(n))).userEventId)
      // A few small turns and a moment, so that a segment begun by the last big turns is followed.
      for (let n = 0; n < 3; n++) acked.push((await memory.recordTurn({ conversationId: 'c', user: `small ${from} ${n}`, agent: 'ok' })).userEventId)
      await new Promise((resolve) => setTimeout(resolve, 300))
      worker.terminate()
      return acked
    }
    const first = (await window.engram.createMemory(options)) as unknown as Api
    await first.recordTurn({ conversationId: 'c', user: 'before', agent: 'closed cleanly' })
    await first.close()

    // 1. Killed with the segment after the one in use made and unused.
    const acked = await killedAfter(0, 80)
    const afterFirst = await segments()
    // 2. That segment as a worker killed while making it leaves it: an empty file.
    const [blankName] = afterFirst.at(-1) ?? ['']
    await (await walFolder()).removeEntry(blankName)
    await (await walFolder()).getFileHandle(blankName, { create: true })
    // Reopened, written on through it and beyond, killed again.
    acked.push(...(await killedAfter(80, 120)))
    const afterSecond = await segments()

    const reopened = (await window.engram.createMemory(options)) as unknown as Api
    const found = await Promise.all(acked.map((id) => reopened.events.get(id).then(Boolean, () => false)))
    const { counts } = await reopened.stats()
    await reopened.close()
    return {
      found: found.every(Boolean),
      events: counts.events,
      acked: acked.length,
      afterFirst,
      blankName,
      blankAfterSecond: afterSecond.find(([name]) => name === blankName)?.[1],
      lastAfterSecond: afterSecond.at(-1)?.[1],
    }
  })
  expect(outcome.found).toBe(true)
  expect(outcome.events).toBe(2 + 2 * outcome.acked)
  // After the kill the last segment is the one made ahead: 1 MiB of zeros, no records; the one
  // before it holds the last turns' records.
  expect(outcome.afterFirst.at(-1)?.[1]).toEqual({ bytes: 2 ** 20, records: false })
  expect(outcome.afterFirst.at(-2)?.[1]).toEqual({ bytes: 2 ** 20, records: true })
  // The segment cut short was written into once reached, and the next made ahead in turn.
  expect(outcome.blankAfterSecond).toEqual({ bytes: 2 ** 20, records: true })
  expect(outcome.lastAfterSecond).toEqual({ bytes: 2 ** 20, records: false })
})

test('opfs: a memory whose creation was cut short (its marker still beside it) is created again, not opened half-written', async ({
  page,
}) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory()
    // What a worker killed while it wrote a new memory's files leaves: part of a data directory.
    const folder = await root.getDirectoryHandle('engram-halfmade', { create: true })
    const file = await (await folder.getFileHandle('PG_VERSION', { create: true })).createWritable()
    await file.write('garbage')
    await file.close()
    await root.getFileHandle('engram-halfmade.incomplete', { create: true })

    const memory = (await window.engram.createMemory({ name: 'halfmade', storage: 'opfs', embedder: { kind: 'none' } })) as unknown as Api
    const first = await memory.ready
    const turn = await memory.recordTurn({ conversationId: 'c', user: 'made again', agent: 'yes' })
    await memory.close()
    const names: string[] = []
    for await (const name of (root as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(name)
    const reopened = (await window.engram.createMemory({ name: 'halfmade', storage: 'opfs', embedder: { kind: 'none' } })) as unknown as Api
    const second = await reopened.ready
    const found = Boolean(await reopened.events.get(turn.userEventId))
    await reopened.close()
    return { first: first.created, second: second.created, found, names: names.filter((n) => n.includes('halfmade')) }
  })
  expect(outcome).toEqual({ first: true, second: false, found: true, names: ['engram-halfmade'] })
})

test('opfs: a write acknowledged while a new memory\'s files are still written survives the worker\'s death', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory()
    const options = { name: 'killed-new', storage: 'opfs', embedder: { kind: 'none' } } as const
    const marker = () =>
      root.getFileHandle('engram-killed-new.incomplete').then(
        async (handle) => (await handle.getFile()).text(),
        () => null,
      )
    const worker = new Worker(window.engramWorkerUrl, { type: 'module' })
    const memory = (await window.engram.createMemory({ ...options, worker })) as unknown as Api
    const created = (await memory.ready).created
    const turn = await memory.recordTurn({ conversationId: 'c', user: 'written while the files were copied', agent: 'kept' })
    // Acknowledged with the new memory's files still being written: the marker says so.
    const during = await marker()
    worker.terminate()
    const reopened = (await window.engram.createMemory(options)) as unknown as Api
    const info = await reopened.ready
    const found = Boolean(await reopened.events.get(turn.userEventId))
    const later = await reopened.recordTurn({ conversationId: 'c', user: 'after the kill', agent: 'fine' })
    await reopened.close()
    const again = (await window.engram.createMemory(options)) as unknown as Api
    const both = await Promise.all([turn, later].map((t) => again.events.get(t.userEventId).then(Boolean)))
    await again.close()
    return { created, during: during === null ? null : JSON.parse(during), reopenedCreated: info.created, found, both, after: await marker() }
  })
  expect(outcome.created).toBe(true)
  expect(outcome.during).toMatchObject({ log: true, template: expect.stringMatching(/^[0-9a-f]{64}$/) })
  expect(outcome).toMatchObject({ reopenedCreated: false, found: true, both: [true, true], after: null })
})

test('opfs: a new memory cut short before its log was stored is created again; one whose template is gone is refused', async ({
  page,
}) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory()
    const mark = async (name: string, text: string) => {
      await root.getDirectoryHandle(`engram-${name}`, { create: true })
      const writable = await (await root.getFileHandle(`engram-${name}.incomplete`, { create: true })).createWritable()
      await writable.write(text)
      await writable.close()
    }
    // Its log not stored: nothing was acknowledged, so it is made again.
    await mark('no-log', JSON.stringify({ template: 'a'.repeat(64), log: false }))
    const fresh = (await window.engram.createMemory({ name: 'no-log', storage: 'opfs', embedder: { kind: 'none' } })) as unknown as Api
    const created = (await fresh.ready).created
    await fresh.close()
    // Its log stored, from a template not served now: refused, and left as it is.
    await mark('other-template', JSON.stringify({ template: 'b'.repeat(64), log: true }))
    const refused = await Promise.resolve(window.engram.createMemory({ name: 'other-template', storage: 'opfs', embedder: { kind: 'none' } }))
      .then((m) => (m as unknown as Api).ready)
      .then(
        () => 'opened',
        (error: { code?: string }) => error.code ?? 'no code',
      )
    const kept = await root.getFileHandle('engram-other-template.incomplete').then(
      () => true,
      () => false,
    )
    return { created, refused, kept }
  })
  expect(outcome).toEqual({ created: true, refused: 'STORAGE_UNAVAILABLE', kept: true })
})

for (const storage of ['opfs', 'idb'] as const) {
test(`${storage}: three tabs write concurrently; the owner closes mid-way; every acknowledged write survives`, async ({
  context,
}) => {
  test.setTimeout(120_000)
  const pages = await openHarnessTabs(context, 3)
  // The first tab to open becomes the owner.
  for (const [i, page] of pages.entries()) {
    await page.evaluate(async ({ i, kind }) => {
      const memory = await window.engram.createMemory({ name: 'tabs', storage: kind })
      const w = window as unknown as { memory: unknown; acked: string[]; unknown: number; done: Promise<void>; role: string }
      w.memory = memory
      w.role = (await memory.ready).role
      w.acked = []
      w.unknown = 0
      w.done = (async () => {
        for (let n = 0; n < 12; n++) {
          try {
            const turn = await (memory as unknown as Api).recordTurn({
              conversationId: `tab${i}`,
              user: `tab ${i} question ${n}`,
              agent: `tab ${i} answer ${n}`,
            })
            w.acked.push(turn.userEventId)
          } catch (error) {
            // In flight on the owner whose tab closed, and never answered: not acknowledged.
            const e = error as { code?: string; details?: { applied?: unknown } }
            if (e.code === 'WORKER_TERMINATED' && e.details?.applied === 'unknown') {
              w.unknown++
              continue
            }
            return // this tab is closing
          }
        }
      })()
    }, { i, kind: storage })
  }
  const roles = await Promise.all(pages.map((p) => p.evaluate(() => (window as unknown as { role: string }).role)))
  expect(roles).toEqual(['leader', 'follower', 'follower'])

  // A follower's export, import and refusal cross the owner whole: a Blob, and a MemoryError.
  const follower = await pages[1]!.evaluate(async () => {
    const memory = (window as unknown as { memory: Api & { exportFile(): Promise<Blob>; importFile(f: Blob, o: { mode: 'merge' }): Promise<{ mode: string }> } }).memory
    const file = await memory.exportFile()
    const imported = await memory.importFile(file, { mode: 'merge' })
    const refused = await memory.events.get('evt_nothing').then(
      () => null,
      (error: unknown) => ({ code: (error as { code?: string }).code, typed: error instanceof window.engram.MemoryError }),
    )
    return { isBlob: file instanceof Blob, bytes: file.size, mode: imported.mode, refused }
  })
  expect(follower).toMatchObject({ isBlob: true, mode: 'merge', refused: { code: 'NOT_FOUND', typed: true } })
  expect(follower.bytes).toBeGreaterThan(100)

  const owner = pages[0]!
  await owner.waitForFunction(() => (window as unknown as { acked: string[] }).acked.length >= 3)
  const ownerAcked = await owner.evaluate(() => [...(window as unknown as { acked: string[] }).acked])
  await owner.close()

  const survivors = pages.slice(1)
  const acked = [...ownerAcked]
  let unknown = 0
  for (const page of survivors) {
    const done = await page.evaluate(async () => {
      const w = window as unknown as { acked: string[]; unknown: number; done: Promise<void> }
      await w.done
      return { acked: w.acked, unknown: w.unknown }
    })
    acked.push(...done.acked)
    unknown += done.unknown
  }
  // Every follower's write was answered, bar at most the one in flight on the closing owner.
  expect(unknown).toBeLessThanOrEqual(2)
  expect(acked.length + unknown).toBeGreaterThanOrEqual(3 + 24)
  const missing = await survivors[0]!.evaluate(async (ids) => {
    const memory = (window as unknown as { memory: Api }).memory
    const found = await Promise.all(ids.map((id) => memory.events.get(id).then(Boolean, () => false)))
    return ids.filter((_, i) => !found[i])
  }, acked)
  expect(missing).toEqual([])
})
}

// Chromium's quota override (DevTools' Storage.overrideQuotaForOrigin) stops OPFS writes; its
// IndexedDB in this build writes past it, so the IndexedDB path is covered in Node
// (test/unit/storage-errors.test.ts), where a flush fails the same way.
test('opfs: when the quota runs out, the change that could not be saved is reported applied, reads answer, writes are refused, and all is saved once space is freed', async ({
  page,
  context,
}) => {
  await openHarness(page)
  const cdp = await context.newCDPSession(page)
  const origin = new URL(page.url()).origin
  await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'quota', storage: 'opfs', embedder: { kind: 'none' } })
    await memory.recordTurn({ conversationId: 'c', user: 'first question', agent: 'first answer' })
    Object.assign(window, { quotaMemory: memory })
  })
  const usage = await page.evaluate(async () => (await navigator.storage.estimate()).usage ?? 0)
  // No room to grow: the turn's log outgrows the segments the memory has.
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage })
  const full = await page.evaluate(async () => {
    type M = Awaited<ReturnType<typeof window.engram.createMemory>>
    const memory = (window as unknown as { quotaMemory: M }).quotaMemory
    const error = (e: { code?: string; details?: unknown }) => ({ code: e.code, details: e.details })
    // Random words, which the database cannot compress below the quota left.
    const words = () => Array.from({ length: 300_000 }, () => Math.random().toString(36).slice(2, 9)).join(' ')
    const failed = await memory.recordTurn({ conversationId: 'c', user: 'zebra question', agent: words() }).then(() => 'saved', error)
    return {
      failed,
      events: (await memory.stats()).counts.events,
      found: (await memory.search('zebra question', { mode: 'keyword' })).some((hit) => hit.text.startsWith('zebra')),
      refused: await memory.recordTurn({ conversationId: 'c', user: 'refused question', agent: 'x' }).then(() => 'saved', error),
      kv: await memory.kv.put('policy', 'k', 'v', { text: 'a rule' }).then(() => 'saved', error),
      eventsAfter: (await memory.stats()).counts.events,
    }
  })
  expect(full).toEqual({
    failed: { code: 'QUOTA_EXCEEDED', details: { applied: true, saved: false } },
    events: 4,
    found: true,
    refused: { code: 'QUOTA_EXCEEDED', details: { applied: false, saved: false } },
    kv: { code: 'QUOTA_EXCEEDED', details: { applied: false, saved: false } },
    eventsAfter: 4,
  })
  await cdp.send('Storage.overrideQuotaForOrigin', { origin })
  const freed = await page.evaluate(async () => {
    type M = Awaited<ReturnType<typeof window.engram.createMemory>>
    const memory = (window as unknown as { quotaMemory: M }).quotaMemory
    await memory.recordTurn({ conversationId: 'c', user: 'after question', agent: 'ok' })
    await memory.close()
    const reopened = await window.engram.createMemory({ name: 'quota', storage: 'opfs', embedder: { kind: 'none' } })
    const users = (await reopened.events.list({ conversationId: 'c' })).filter((e) => e.kind === 'message' && e.actor.type === 'human')
    await reopened.close()
    return users.map((e) => [e.turnIndex, (e.content as { text: string }).text])
  })
  expect(freed).toEqual([
    [0, 'first question'],
    [1, 'zebra question'],
    [2, 'after question'],
  ])
})

// A file held by another handle (writable streams here; after a failed flush, the writes
// PGlite's writer left running) fails a write on it. The flush waits for it to be let go:
// without that, this turn failed as STORAGE_UNAVAILABLE.
test('opfs: a flush that finds its files held by another handle waits until they are let go', async ({ page }) => {
  await openHarness(page)
  const result = await page.evaluate(async () => {
    const options = { name: 'held', storage: 'opfs', embedder: { kind: 'none' } } as const
    const first = await window.engram.createMemory(options)
    await first.recordTurn({ conversationId: 'c', user: 'before', agent: 'ok' })
    await first.close()
    const memory = await window.engram.createMemory(options)
    // Past the bound on held-back writes (MAX_KEPT_BYTES), so the turn's flush writes the data files.
    const words = Array.from({ length: 300_000 }, () => Math.random().toString(36).slice(2, 9)).join(' ')
    // Every data file of the database is held by a writable stream.
    const root = await navigator.storage.getDirectory()
    const base = await root.getDirectoryHandle('engram-held').then((dir) => dir.getDirectoryHandle('base'))
    const streams: { abort(): Promise<void> }[] = []
    for await (const [, db] of (base as unknown as { entries(): AsyncIterable<[string, FileSystemDirectoryHandle]> }).entries()) {
      for await (const [, file] of (db as unknown as { entries(): AsyncIterable<[string, FileSystemFileHandle]> }).entries()) {
        streams.push(await (file as unknown as { createWritable(o: object): Promise<{ abort(): Promise<void> }> }).createWritable({ keepExistingData: false }))
      }
    }
    // Let go after the turn's flush has started (about 2 s of work before it) and within the
    // 3 s that a flush goes on trying (HELD_WAIT_MS).
    setTimeout(() => void Promise.all(streams.map((s) => s.abort())), 3000)
    const saved = await memory.recordTurn({ conversationId: 'c', user: 'held', agent: words }).then(() => 'saved', (e: { code?: string }) => e.code)
    await memory.close()
    const reopened = await window.engram.createMemory(options)
    const events = await reopened.events.list({ conversationId: 'c' })
    await reopened.close()
    return { held: streams.length, saved, users: events.filter((e) => e.kind === 'message' && e.actor.type === 'human').map((e) => (e.content as { text: string }).text) }
  })
  expect(result.held).toBeGreaterThan(100)
  expect(result).toMatchObject({ saved: 'saved', users: ['before', 'held'] })
})
