import { expect, test } from '@playwright/test'
import { openHarness } from './support.ts'

test('stats() in the browser says where the memory lives and how much of the quota it uses', async ({ page }) => {
  await openHarness(page)
  const storage = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'quota', storage: 'idb' })
    await memory.recordTurn({ conversationId: 'c', user: 'small question', agent: 'small answer' })
    const { storage, counts, cacheMB } = await memory.stats()
    await memory.close()
    return { ...storage, events: counts.events, cacheMB }
  })
  // A new memory's page cache is the default its template names (64 MiB), not Postgres' 128.
  expect(storage).toMatchObject({ kind: 'idb', dataDir: 'idb://engram-quota', role: 'leader', events: 2, cacheMB: 64 })
  expect(storage.usageBytes).toBeGreaterThan(0)
  expect(storage.quotaBytes).toBeGreaterThan(storage.usageBytes ?? 0)
  expect(typeof storage.persisted).toBe('boolean')
})

test('the worker rehearses turns once the memory is quiet, keeps none of them, and says so in stats()', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'warm', storage: 'opfs', embedder: { kind: 'none' } })
    const states: string[] = []
    let warmUp = (await memory.stats()).storage.warmUp
    // It waits for the database to be quiet, and stats() reads it: ask seldom.
    for (let i = 0; i < 60 && warmUp.state !== 'done' && warmUp.state !== 'failed'; i++) {
      states.push(warmUp.state)
      await new Promise((resolve) => setTimeout(resolve, 600))
      warmUp = (await memory.stats()).storage.warmUp
    }
    const events = (await memory.stats()).counts.events
    const turn = await memory.recordTurn({ conversationId: 'c', user: 'the first real question', agent: 'the first real answer' })
    const after = (await memory.stats()).counts.events
    await memory.close()

    const off = await window.engram.createMemory({ name: 'cold', storage: 'opfs', embedder: { kind: 'none' }, warmUp: 0 })
    await new Promise((resolve) => setTimeout(resolve, 600))
    const offState = (await off.stats()).storage.warmUp
    await off.close()
    return { states, warmUp, events, turnIndex: turn.turnIndex, after, offState }
  })
  expect(outcome.states[0]).toBe('waiting')
  expect(outcome.warmUp).toMatchObject({ state: 'done', turns: 20 })
  expect(outcome.events).toBe(0)
  expect(outcome.turnIndex).toBe(0)
  expect(outcome.after).toBe(2)
  expect(outcome.offState).toEqual({ state: 'off' })
})

test('createMemory refuses a warm-up out of range with INVALID_INPUT', async ({ page }) => {
  await openHarness(page)
  const code = await page.evaluate(async () => {
    try {
      await window.engram.createMemory({ name: 'bad-warm', storage: 'memory', warmUp: 500 })
      return 'none'
    } catch (error) {
      return (error as { code: string }).code
    }
  })
  expect(code).toBe('INVALID_INPUT')
})
