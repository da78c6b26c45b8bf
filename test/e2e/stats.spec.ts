import { expect, test } from '@playwright/test'
import { openHarness } from './support.ts'

test('stats() in the browser says where the memory lives and how much of the quota it uses', async ({ page }) => {
  await openHarness(page)
  const storage = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'quota', storage: 'idb' })
    await memory.recordTurn({ conversationId: 'c', user: 'small question', agent: 'small answer' })
    const { storage, counts } = await memory.stats()
    await memory.close()
    return { ...storage, events: counts.events }
  })
  expect(storage).toMatchObject({ kind: 'idb', dataDir: 'idb://engram-quota', role: 'leader', events: 2 })
  expect(storage.usageBytes).toBeGreaterThan(0)
  expect(storage.quotaBytes).toBeGreaterThan(storage.usageBytes ?? 0)
  expect(typeof storage.persisted).toBe('boolean')
})
