import { expect, test } from '@playwright/test'
import { openMemory } from '../../src/node/index.ts'
import { apiMethods, garbageArguments } from '../support/api-methods.ts'
import { openHarness } from './support.ts'

/** Methods that take a listener: they subscribe in the page and are not data calls. */
const LISTENERS = new Set(['onProgress', 'onIndexProgress', 'onError', 'telemetry.subscribe'])

test('every method, called through the worker with bad arguments, answers with a MemoryError', async ({ page }) => {
  const node = await openMemory()
  // The page's proxy lists no methods: they are read from a Node memory.
  const paths = apiMethods(node).filter((p) => !LISTENERS.has(p.join('.')))
  await node.close()
  expect(paths.length).toBeGreaterThan(70)
  await openHarness(page)
  // The unit sweep's argument sets, built in the page (functions and symbols cannot be sent there).
  const shared = await page.evaluateHandle(garbageArguments)
  const wrong = await page.evaluate(async ({ paths, shared }) => {
    const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' } })
    await memory.recordTurn({ conversationId: 'c0', user: 'hi', agent: 'hello' })
    // And what only a page has.
    const garbage = [...shared, [new Blob(['x'])], [new Uint8Array(4)]]
    const out: string[] = []
    for (const path of paths) {
      let fn: unknown = memory
      for (const key of path) fn = (fn as Record<string, unknown>)[key]
      for (const args of garbage) {
        try {
          await (fn as (...a: unknown[]) => Promise<unknown>)(...args)
        } catch (error) {
          const call = `${path.join('.')}(${args.map((a) => typeof a).join(', ')})`
          if (!(error instanceof window.engram.MemoryError)) out.push(`${call}: ${String(error)}`)
          else if (['INTERNAL', 'WORKER_TERMINATED', 'CLOSED'].includes(error.code)) out.push(`${call}: ${error.code} ${error.message}`)
        }
      }
    }
    // And the memory still answers.
    if ((await memory.ping()).schemaVersion < 1) out.push('ping failed after the sweep')
    await memory.close()
    return { out, sets: garbage.length }
  }, { paths, shared })
  expect(wrong.sets).toBe(garbageArguments().length + 2)
  expect(wrong.out).toEqual([])
})
