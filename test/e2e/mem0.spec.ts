import { expect, test } from '@playwright/test'
import { openHarness } from './support.ts'

/**
 * A scripted OpenAI-compatible model, answered by the page's own routing: facts out of what
 * the user said, and an UPDATE when a new place of living meets an old one.
 */
function modelAnswer(body: { messages: { role: string; content: string }[] }): unknown {
  const [system, user] = body.messages.map((m) => m.content)
  if (system?.startsWith('You extract durable')) {
    const facts = user?.includes('San Francisco')
      ? ['User lives in San Francisco']
      : user?.includes('NYC')
        ? ['User lives in NYC']
        : []
    return { facts }
  }
  const fact = /New fact: (.*)/.exec(user ?? '')?.[1] ?? ''
  const old = /- ID: (\d+), Text: User lives in NYC/.exec(user ?? '')
  return { operations: old && fact.includes('San Francisco') ? [{ event: 'UPDATE', id: old[1], data: fact }] : [{ event: 'ADD', data: fact }] }
}

test('the mem0 API runs in the page over the worker: search by meaning, a model over fetch, history, and a reset of its own tenant', async ({ page }) => {
  const calls: string[] = []
  await page.route('http://llm.test/v1/chat/completions', async (route) => {
    const body = route.request().postDataJSON() as { model: string; messages: { role: string; content: string }[] }
    calls.push(body.model)
    await route.fulfill({ json: { choices: [{ message: { role: 'assistant', content: JSON.stringify(modelAnswer(body)) } }] } })
  })
  await openHarness(page)
  const out = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'bundled', device: 'wasm' } })
    try {
      await memory.embed(['the model is loaded once this answers'])
      const { Memory, openAICompatibleLLM } = window.engramMem0
      // Without a model: what the user says is stored, and found by meaning.
      const plain = new Memory(memory)
      await plain.add('I prefer dark mode in every editor', { userId: 'alice' })
      await plain.add('My dog is called Rex', { userId: 'alice' })
      const found = await plain.search('display settings', { userId: 'alice', limit: 2 })

      // With a model reached over fetch, in a tenant of its own.
      const smart = new Memory(memory, { llm: openAICompatibleLLM({ baseUrl: 'http://llm.test/v1', model: 'scripted' }), tenantId: 'smart' })
      const added = await smart.add('I live in NYC', { userId: 'bob' })
      const moved = await smart.add([{ role: 'user', content: 'I moved to San Francisco last month' }], { userId: 'bob' })
      const id = added.results[0]?.id as string
      const history = (await smart.history(id)).map((h) => [h.event, h.new_value])
      const current = (await smart.get(id))?.memory
      await smart.reset()
      return {
        found: found.results.map((r) => [r.memory, typeof r.score]),
        added: added.results.map((r) => [r.event, r.memory]),
        moved: moved.results.map((r) => [r.event, r.id === id, r.memory]),
        history,
        current,
        smartAfterReset: (await smart.getAll({ userId: 'bob' })).results.length,
        plainAfterReset: (await plain.getAll({ userId: 'alice' })).results.map((r) => r.memory).sort(),
        unscoped: await plain.search('x', {}).then(
          () => 'accepted',
          (e: unknown) => (e instanceof window.engram.MemoryError ? e.code : String(e)),
        ),
      }
    } finally {
      await memory.close()
    }
  })
  // Nothing in common with the query but its meaning; the unrelated memory is not a hit.
  expect(out.found).toEqual([['I prefer dark mode in every editor', 'number']])
  expect(out.added).toEqual([['ADD', 'User lives in NYC']])
  expect(out.moved).toEqual([['UPDATE', true, 'User lives in San Francisco']])
  expect(out.history).toEqual([
    ['ADD', 'User lives in NYC'],
    ['UPDATE', 'User lives in San Francisco'],
  ])
  expect(out.current).toBe('User lives in San Francisco')
  expect(out.smartAfterReset).toBe(0)
  expect(out.plainAfterReset).toEqual(['I prefer dark mode in every editor', 'My dog is called Rex'])
  expect(out.unscoped).toBe('SCOPE_REQUIRED')
  // Two facts, each extracted and then decided on.
  expect(calls).toEqual(['scripted', 'scripted', 'scripted', 'scripted'])
})
