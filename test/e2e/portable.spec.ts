import { expect, test } from '@playwright/test'
import { openMemory } from '../../src/node/index.ts'
import { openHarness } from './support.ts'

type Api = {
  recordTurn(input: { conversationId: string; user: string; agent: string }): Promise<unknown>
  remember(input: { content: string; category: string; userId: string }): Promise<unknown>
  stats(): Promise<{ counts: Record<string, number> }>
  exportFile(options?: { passphrase?: string }): Promise<Blob>
  importFile(file: Blob, options?: { mode?: 'replace' | 'merge'; passphrase?: string }): Promise<unknown>
  close(): Promise<void>
}


test('export in one browser context, import into a fresh one (replace, merge, passphrase), and into Node', async ({
  browser,
}) => {
  test.setTimeout(120_000)
  const source = await browser.newPage()
  await openHarness(source)
  const exported = await source.evaluate(async () => {
    const memory = (await window.engram.createMemory({ name: 'src', storage: 'opfs' })) as unknown as Api
    for (let i = 0; i < 5; i++) {
      await memory.recordTurn({ conversationId: `c${i % 2}`, user: `question ${i}`, agent: `answer ${i}` })
    }
    await memory.remember({ content: 'The user prefers dark mode', category: 'preference', userId: 'u' })
    const counts = (await memory.stats()).counts
    const plain = new Uint8Array(await (await memory.exportFile()).arrayBuffer())
    const sealed = new Uint8Array(await (await memory.exportFile({ passphrase: 'pass phrase' })).arrayBuffer())
    await memory.close()
    const b64 = (u: Uint8Array) => btoa(Array.from(u, (c) => String.fromCharCode(c)).join(''))
    return { counts, plain: b64(plain), sealed: b64(sealed) }
  })
  expect(exported.counts.events).toBe(10)

  // A fresh context has fresh storage: nothing of "src" is there.
  const context = await browser.newContext()
  const target = await context.newPage()
  await openHarness(target)
  const imported = await target.evaluate(async (files) => {
    const bytes = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
    const memory = (await window.engram.createMemory({ name: 'dst', storage: 'idb' })) as unknown as Api
    await memory.recordTurn({ conversationId: 'local', user: 'mine', agent: 'kept' })
    const codeOf = async (p: Promise<unknown>) => p.then(() => 'none', (e: { code?: string }) => e.code ?? 'no code')
    const before = (await memory.stats()).counts
    const flipped = bytes(files.plain)
    flipped[flipped.length >> 1] = (flipped[flipped.length >> 1] as number) ^ 0xff
    const bad = {
      truncated: await codeOf(memory.importFile(new Blob([bytes(files.plain).slice(0, 200)]))),
      flipped: await codeOf(memory.importFile(new Blob([flipped]))),
      random: await codeOf(memory.importFile(new Blob([crypto.getRandomValues(new Uint8Array(2048))]))),
      wrongPassphrase: await codeOf(memory.importFile(new Blob([bytes(files.sealed)]), { passphrase: 'nope' })),
    }
    const unchanged = JSON.stringify((await memory.stats()).counts) === JSON.stringify(before)
    await memory.importFile(new Blob([bytes(files.plain)]), { mode: 'merge' })
    const merged = (await memory.stats()).counts
    await memory.importFile(new Blob([bytes(files.plain)]), { mode: 'merge' })
    const mergedTwice = (await memory.stats()).counts
    await memory.importFile(new Blob([bytes(files.sealed)]), { mode: 'replace', passphrase: 'pass phrase' })
    const replaced = (await memory.stats()).counts
    await memory.close()
    return { bad, unchanged, merged, mergedTwice, replaced }
  }, exported)
  expect(imported.bad).toEqual({
    truncated: 'IMPORT_CORRUPT',
    flipped: 'IMPORT_CORRUPT',
    random: 'IMPORT_CORRUPT',
    wrongPassphrase: 'WRONG_PASSPHRASE',
  })
  expect(imported.unchanged).toBe(true)
  expect(imported.merged.events).toBe(12)
  expect(imported.mergedTwice).toEqual(imported.merged)
  expect(imported.replaced).toEqual(exported.counts)
  await context.close()

  // The same file opens in Node.
  const node = await openMemory()
  await node.importFile(new Blob([Buffer.from(exported.plain, 'base64')]), { mode: 'replace' })
  expect((await node.stats()).counts).toEqual(exported.counts)
  await node.close()
})
