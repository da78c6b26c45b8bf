import { expect, type Page, test } from '@playwright/test'
import { openHarness, openHarnessTabs } from './support.ts'

type Memory = Awaited<ReturnType<typeof window.engram.createMemory>>
const held = (page: Page) => page.evaluate(() => Boolean((window as unknown as { memory?: Memory }).memory))

test('writes from two following tabs while the owner tab closes: each acknowledged write stored once, none run twice', async ({
  context,
}) => {
  const [owner, ...followers] = (await openHarnessTabs(context, 3)) as [Page, Page, Page]
  const options = { name: 'takeover-writes', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 } as const
  for (const page of [owner, ...followers]) {
    await page.evaluate(async (options) => {
      Object.assign(window, { memory: await window.engram.createMemory(options) })
    }, options)
  }
  expect(await Promise.all([owner, ...followers].map(held))).toEqual([true, true, true])
  // Each follower writes without pause, with its own texts, and keeps what was acknowledged.
  // It stops once it has had AFTER_CLOSE writes acknowledged by the new owner: the test asserts
  // what must hold across the takeover, not how many writes fit in a window of time.
  const writing = followers.map((page, tab) =>
    page.evaluate(async (tab) => {
      const AFTER_CLOSE = 5
      const state = window as unknown as { memory: Memory; ownerClosed?: boolean }
      const acked: string[] = []
      const unknown: string[] = []
      const failed: string[] = []
      let ackedAfterClose = 0
      // A bound only so that a broken takeover fails the test instead of hanging it.
      const giveUp = Date.now() + 40_000
      for (let i = 0; ackedAfterClose < AFTER_CLOSE && Date.now() < giveUp; i++) {
        const text = `tab ${tab} write ${i}`
        const closedBefore = state.ownerClosed === true
        await state.memory
          .record({ kind: 'message', scope: { conversationId: `c${tab}` }, actor: { type: 'human', id: 'u' }, content: { text } })
          .then(
            () => {
              acked.push(text)
              if (closedBefore) ackedAfterClose++
            },
            (error: { code?: string; details?: { applied?: unknown } }) => {
              // Started by the owner whose tab closed, and never answered: it may have been applied.
              if (error.code === 'WORKER_TERMINATED' && error.details?.applied === 'unknown') unknown.push(text)
              else failed.push(`${error.code}`)
            },
          )
      }
      return { acked, unknown, failed, ackedAfterClose }
    }, tab),
  )
  // Let the followers write through the owner for a while first.
  await new Promise((resolve) => setTimeout(resolve, 1_500))
  // The owner's worker ends with its tab, in the middle of a write.
  await owner.close()
  await Promise.all(followers.map((page) => page.evaluate(() => {
        ;(window as unknown as { ownerClosed?: boolean }).ownerClosed = true
      })))
  const outcomes = await Promise.all(writing)
  const stored = await followers[0].evaluate(async () => {
    const memory = (window as unknown as { memory: Memory }).memory
    const texts: string[] = []
    for (const conversationId of ['c0', 'c1']) {
      for (const event of await memory.events.list({ conversationId, limit: 10_000 })) texts.push((event.content as { text: string }).text)
    }
    return texts
  })
  for (const { failed, ackedAfterClose } of outcomes) {
    expect(failed).toEqual([])
    // The new owner answers: each follower went on writing after the takeover.
    expect(ackedAfterClose).toBe(5)
  }
  // The follower that took over says so in `ready`; the other still follows.
  const roles = await Promise.all(followers.map((page) => page.evaluate(async () => (await (window as unknown as { memory: Memory }).memory.ready).role)))
  expect(roles.sort()).toEqual(['follower', 'leader'])
  const acked = outcomes.flatMap((o) => o.acked)
  const unknown = outcomes.flatMap((o) => o.unknown)
  // At most the one call in flight on the owner per tab.
  expect(unknown.length).toBeLessThanOrEqual(2)
  expect(stored.filter((text, i) => stored.indexOf(text) !== i)).toEqual([])
  for (const text of acked) expect(stored).toContain(text)
  for (const text of stored) expect([...acked, ...unknown]).toContain(text)
})

test('a wrong passphrase ends the worker it started, and the right one opens the memory after it', async ({ page }) => {
  await openHarness(page)
  const options = { name: 'unlock', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 } as const
  await page.evaluate(async (options) => {
    const memory = await window.engram.createMemory({ ...options, vault: { passphrase: 'orchard lantern 42' } })
    await memory.remember({ content: 'The safe code is 4512', category: 'fact', sensitivity: 'high' })
    await memory.close()
  }, options)
  const workers = page.workers().length
  const wrong = await page.evaluate(async (options) => {
    const memory = window.engram.connectMemory({ ...options, vault: { passphrase: 'not the passphrase' } })
    const refused = await memory.ready.then(
      () => 'opened',
      (error: { code?: string }) => error.code,
    )
    // The memory it would have been answers nothing more, with the boot's own error.
    const after = await memory.ping().then(
      () => 'answered',
      (error: { code?: string }) => error.code,
    )
    return { refused, after }
  }, options)
  expect(wrong).toEqual({ refused: 'WRONG_PASSPHRASE', after: 'WRONG_PASSPHRASE' })
  await expect.poll(() => page.workers().length).toBe(workers)
  const opened = await page.evaluate(async (options) => {
    const memory = await window.engram.createMemory({ ...options, vault: { passphrase: 'orchard lantern 42' } })
    await memory.remember({ content: 'The spare key is under the mat', category: 'fact' })
    const texts = (await memory.memories.list({})).map((m) => m.content).sort()
    await memory.close()
    return texts
  }, options)
  expect(opened).toEqual(['The safe code is 4512', 'The spare key is under the mat'])
})

test("a following tab must bring the owner's workspace and vault key, so that whichever tab takes over opens the vault as it was", async ({
  context,
}) => {
  const [owner, other] = (await openHarnessTabs(context, 2)) as [Page, Page]
  const base = { name: 'fits', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 } as const
  await owner.evaluate(async (base) => {
    const memory = await window.engram.createMemory({
      ...base,
      workspace: { mode: 'local', root: '/work/app' },
      vault: { passphrase: 'orchard lantern 42' },
    })
    Object.assign(window, { memory })
  }, base)
  const outcomes = await other.evaluate(async (base) => {
    const attempt = (extra: Record<string, unknown>) =>
      window.engram.createMemory({ ...base, ...extra }).then(
        async (memory) => {
          const role = (await memory.ready).role
          await memory.close()
          return role
        },
        (error: { code?: string }) => error.code,
      )
    const local = { workspace: { mode: 'local', root: '/work/app' } }
    return {
      wrongKey: await attempt({ ...local, vault: { passphrase: 'not the passphrase' } }),
      otherRoot: await attempt({ workspace: { mode: 'local', root: '/work/other' }, vault: { passphrase: 'orchard lantern 42' } }),
      global: await attempt({}),
      rightKey: await attempt({ ...local, vault: { passphrase: 'orchard lantern 42' } }),
      noKey: await attempt(local),
    }
  }, base)
  expect(outcomes).toEqual({ wrongKey: 'WRONG_PASSPHRASE', otherRoot: 'CONFLICT', global: 'CONFLICT', rightKey: 'follower', noKey: 'CONFLICT' })
  // Opened there without a vault, a key here is refused: the owner does not seal.
  await owner.evaluate(async () => {
    await (window as unknown as { memory: Memory }).memory.close()
  })
  await owner.evaluate(async (base) => {
    Object.assign(window, { memory: await window.engram.createMemory({ ...base, workspace: { mode: 'local', root: '/work/app' } }) })
  }, base)
  const locked = await other.evaluate(
    (base) =>
      window.engram
        .createMemory({ ...base, workspace: { mode: 'local', root: '/work/app' }, vault: { passphrase: 'orchard lantern 42' } })
        .then(
          () => 'opened',
          (error: { code?: string; message: string }) => [error.code, /without its vault key/.test(error.message)],
        ),
    base,
  )
  expect(locked).toEqual(['CONFLICT', true])
})

test('two closes at once: both wait for the memory to close, and what closing writes is kept', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const options = { name: 'twice', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 } as const
    let memory = await window.engram.createMemory(options)
    await memory.recordTurn({ conversationId: 'c-found', user: 'Where do refunds post?', agent: 'To the suspense ledger.' })
    await memory.search('refunds suspense ledger')
    // The hits the search noted are written at close.
    await Promise.all([memory.close(), memory[Symbol.asyncDispose](), memory.close()])
    memory = await window.engram.createMemory(options)
    const candidates = await memory.archives.candidates({ idleForMs: 0 })
    await memory.close()
    return candidates.map((c) => [c.conversationId, c.lastHitAt !== null])
  })
  expect(outcome).toEqual([['c-found', true]])
})

test('options the worker cannot act on are refused before it starts', async ({ page }) => {
  await openHarness(page)
  const workers = page.workers().length
  const codes = await page.evaluate(async () => {
    const code = (options: Record<string, unknown>) =>
      window.engram.createMemory({ name: 'refused', ...options }).then(
        async (memory) => {
          await memory.close()
          return 'opened'
        },
        (error: { code?: string }) => error.code,
      )
    const listener = await window.engram.createMemory({ name: 'refused', storage: 'memory', bootTimeoutMs: Infinity, embedder: { kind: 'none' } })
    let onError: string | undefined
    try {
      listener.onError('not a function' as never)
    } catch (error) {
      onError = (error as { code?: string }).code
    }
    await listener.close()
    return {
      storage: await code({ storage: 'indexeddb' }),
      timeout: await code({ bootTimeoutMs: 0 }),
      hugeTimeout: await code({ bootTimeoutMs: 2 ** 40 }),
      kind: await code({ storage: 'memory', embedder: { kind: 'None' } }),
      uncloneable: await code({ storage: 'memory', workspace: { mode: 'local', root: '/work/app', resolve: () => '/' } }),
      onError,
    }
  })
  expect(codes).toEqual({
    storage: 'INVALID_INPUT',
    timeout: 'INVALID_INPUT',
    hugeTimeout: 'INVALID_INPUT',
    kind: 'INVALID_INPUT',
    uncloneable: 'INVALID_INPUT',
    onError: 'INVALID_INPUT',
  })
  await expect.poll(() => page.workers().length).toBe(workers)
})
