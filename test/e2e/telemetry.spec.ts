import { expect, type Page, test } from '@playwright/test'
import { openHarness, openHarnessTabs } from './support.ts'

type Seen = { method?: unknown; op: string; entityType: string; ms?: unknown; at: string }

/** In the page: the telemetry its listener has seen so far, and the memory on `window.memory`. */
async function open(page: Page, name: string, storage: 'memory' | 'opfs', listen: boolean) {
  return page.evaluate(
    async ({ name, storage, listen }) => {
      const memory = await window.engram.createMemory({ name, storage, embedder: { kind: 'none' }, warmUp: 0 })
      const w = window as unknown as { memory: typeof memory; seen: unknown[]; stop?: () => void }
      w.memory = memory
      w.seen = []
      if (listen) {
        w.stop = memory.telemetry.subscribe((e) =>
          w.seen.push({ method: e.detail?.method, op: e.op, entityType: e.entityType, ms: e.detail?.ms, at: e.at.toISOString() }),
        )
      }
      return (await memory.ready).role
    },
    { name, storage, listen },
  )
}

const seen = (page: Page) => page.evaluate(() => (window as unknown as { seen: Seen[] }).seen)

test("telemetry reaches the page: its own calls timed, and from another tab the owner's, only while it listens, across a takeover", async ({ browser }) => {
  const context = await browser.newContext()
  const [owner, next, other] = (await openHarnessTabs(context, 3)) as [Page, Page, Page]
  expect(await open(owner, 'telemetry', 'opfs', false)).toBe('leader')
  expect(await open(next, 'telemetry', 'opfs', false)).toBe('follower')
  expect(await open(other, 'telemetry', 'opfs', true)).toBe('follower')
  const run = (page: Page, call: 'record' | 'search' | 'remember', text: string) =>
    page.evaluate(
      async ({ call, text }) => {
        const { memory } = window as unknown as { memory: Awaited<ReturnType<typeof window.engram.createMemory>> }
        if (call === 'record') await memory.record({ kind: 'message', scope: { conversationId: 'c1' }, actor: { type: 'human', id: 'ann' }, content: { text } })
        else if (call === 'search') await memory.search(text)
        else await memory.remember({ content: text, category: 'preference' })
      },
      { call, text },
    )

  // A call from the listening tab, run by the owner, and calls from the owner's own page.
  await run(other, 'record', 'from the other tab')
  await run(owner, 'search', 'other tab')
  await run(owner, 'remember', 'Ann likes short answers')
  await expect.poll(async () => (await seen(other)).map((e) => e.method ?? e.entityType)).toEqual(['record', 'search', 'memory'])
  const events = await seen(other)
  expect(typeof events[0]?.ms).toBe('number')
  expect(Number.isNaN(Date.parse(events[0]?.at as string))).toBe(false)
  // The pages that never asked get none.
  expect(await seen(owner)).toEqual([])
  expect(await seen(next)).toEqual([])

  // Unsubscribed: nothing more arrives (the other tab's own call answers after any event of the owner's).
  await other.evaluate(() => (window as unknown as { stop: () => void }).stop())
  await run(owner, 'search', 'after the stop')
  await run(other, 'search', 'after the stop, from here')
  expect(await seen(other)).toHaveLength(3)

  // Listening again, then the owner closes: the next tab takes over and is told this one listens.
  await other.evaluate(() => {
    const w = window as unknown as { memory: Awaited<ReturnType<typeof window.engram.createMemory>>; seen: unknown[]; stop: () => void }
    w.stop = w.memory.telemetry.subscribe((e) => w.seen.push({ method: e.detail?.method, op: e.op, entityType: e.entityType }))
  })
  await owner.close()
  await run(next, 'record', 'from the new owner')
  await run(other, 'search', 'new owner')
  await expect.poll(async () => (await seen(other)).slice(3).map((e) => e.method)).toEqual(['record', 'search'])
  expect(await seen(next)).toEqual([])
  await context.close()
})

test('telemetry of a memory of its own tab, and a listener that is no function is refused', async ({ page }) => {
  await openHarness(page)
  await open(page, 'solo', 'memory', true)
  const refused = await page.evaluate(async () => {
    const { memory } = window as unknown as { memory: Awaited<ReturnType<typeof window.engram.createMemory>> }
    await memory.recordTurn({ conversationId: 'c1', user: 'hello', agent: 'hi' })
    await memory.buildContext({ query: 'hello', conversationId: 'c1' })
    try {
      memory.telemetry.subscribe(42 as never)
      return 'accepted'
    } catch (error) {
      return (error as { code?: string }).code
    }
  })
  expect(refused).toBe('INVALID_INPUT')
  await expect.poll(async () => (await seen(page)).map((e) => e.method)).toEqual(['recordTurn', 'buildContext'])
})
