import { expect, test } from '@playwright/test'
import { openHarness } from './support.ts'

test('cypher runs in its own worker: a query answers, and one past its time limit is stopped', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' } })
    try {
      const turn = await memory.recordTurn({
        conversationId: 'c1',
        user: 'what does the parser do?',
        agent: 'It reads dates.',
        procedures: [{ tool: 'read_file', args: { path: 'parse.ts' }, document: { path: '/app/parse.ts', content: 'export {}', effect: 'read' } }],
      })
      const touched = await memory.cypher(
        'MATCH (:Message {id: $id})-[r]->(:Version)-[:VERSION_OF]->(d:Document) RETURN type(r) AS tool, d.key AS document',
        { id: turn.agentEventId },
      )
      let stopped = ''
      try {
        await memory.cypher('UNWIND range(1, 100000000) AS i WITH i WHERE i = -1 RETURN i', {}, { timeoutMs: 300 })
      } catch (error) {
        stopped = (error as { code?: string }).code ?? String(error)
      }
      const after = await memory.cypher('MATCH (m:Message) RETURN count(m) AS n')
      return { touched: touched.rows, stopped, after: after.rows }
    } finally {
      await memory.close()
    }
  })
  expect(outcome.touched).toEqual([{ tool: 'read_file', document: '/app/parse.ts' }])
  expect(outcome.stopped).toBe('TIMEOUT')
  expect(outcome.after).toEqual([{ n: 2 }])
})
