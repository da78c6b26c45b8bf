import { expect, it } from 'vitest'
import { createTransformersEmbedder } from '../../src/node/index.ts'
import { openTestMemory } from '../support/memory.ts'

// The README's first example, step for step: keep the two in step.
it('the README example: a turn that read a file, then a question in other words in a new conversation', async () => {
  await using memory = await openTestMemory({ embedder: createTransformersEmbedder() })

  await memory.recordTurn({
    conversationId: 'monday',
    scope: { userId: 'ann' },
    user: 'Where do we parse invoice dates?',
    agent: 'In src/parse.ts: parseDate() reads them as day/month/year.',
    procedures: [
      {
        tool: 'read_file',
        args: { path: '/repo/src/parse.ts' },
        document: { path: '/repo/src/parse.ts', content: 'export function parseDate(s) { /* dd/mm/yyyy */ }', effect: 'read' },
      },
    ],
  })
  await memory.waitForIndex()

  const context = await memory.buildContext({
    conversationId: 'thursday',
    scope: { userId: 'ann' },
    query: 'Which file handles the date format of bills?',
  })
  expect(context.text).toContain('src/parse.ts')
  expect(context.text).toContain('parseDate()')
})
