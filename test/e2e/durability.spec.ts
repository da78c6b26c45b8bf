import { expect, test } from '@playwright/test'
import { openHarness, openHarnessTabs } from './support.ts'

type Api = {
  recordTurn(input: { conversationId: string; user: string; agent: string }): Promise<{ userEventId: string }>
  events: { get(id: string): Promise<unknown> }
  stats(): Promise<{ counts: Record<string, number> }>
  close(): Promise<void>
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

test('three tabs write concurrently; the owner closes mid-way; every acknowledged write survives', async ({
  context,
}) => {
  test.setTimeout(120_000)
  const pages = await openHarnessTabs(context, 3)
  // The first tab to open becomes the owner.
  for (const [i, page] of pages.entries()) {
    await page.evaluate(async (i) => {
      const memory = await window.engram.createMemory({ name: 'tabs', storage: 'opfs' })
      const w = window as unknown as { memory: unknown; acked: string[]; done: Promise<void>; role: string }
      w.memory = memory
      w.role = (await memory.ready).role
      w.acked = []
      w.done = (async () => {
        for (let n = 0; n < 12; n++) {
          try {
            const turn = await (memory as unknown as Api).recordTurn({
              conversationId: `tab${i}`,
              user: `tab ${i} question ${n}`,
              agent: `tab ${i} answer ${n}`,
            })
            w.acked.push(turn.userEventId)
          } catch {
            return // this tab is closing
          }
        }
      })()
    }, i)
  }
  const roles = await Promise.all(pages.map((p) => p.evaluate(() => (window as unknown as { role: string }).role)))
  expect(roles).toEqual(['leader', 'follower', 'follower'])

  const owner = pages[0]!
  await owner.waitForFunction(() => (window as unknown as { acked: string[] }).acked.length >= 3)
  const ownerAcked = await owner.evaluate(() => [...(window as unknown as { acked: string[] }).acked])
  await owner.close()

  const survivors = pages.slice(1)
  const acked = [...ownerAcked]
  for (const page of survivors) {
    acked.push(
      ...(await page.evaluate(async () => {
        const w = window as unknown as { acked: string[]; done: Promise<void> }
        await w.done
        return w.acked
      })),
    )
  }
  expect(acked.length).toBeGreaterThanOrEqual(3 + 24)
  const missing = await survivors[0]!.evaluate(async (ids) => {
    const memory = (window as unknown as { memory: Api }).memory
    const found = await Promise.all(ids.map((id) => memory.events.get(id).then(Boolean, () => false)))
    return ids.filter((_, i) => !found[i])
  }, acked)
  expect(missing).toEqual([])
})
