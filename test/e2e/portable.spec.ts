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

test('a page reads an export as a snapshot without a database: the answers of the worker, and no engine loaded', async ({ browser }) => {
  test.setTimeout(120_000)
  const source = await browser.newPage()
  await openHarness(source)
  const written = await source.evaluate(async () => {
    const memory = await window.engram.createMemory({ name: 'snap', storage: 'opfs' })
    await memory.graph.putGraph({
      relations: [{ name: 'defines' }, { name: 'calls' }],
      nodes: [
        { id: 'file:src/app.ts', type: 'file' },
        { id: 'sym:app.ts#main', type: 'function' },
        { id: 'sym:app.ts#helper', type: 'function' },
      ],
      edges: [
        { src: 'file:src/app.ts', rel: 'defines', dst: 'sym:app.ts#main' },
        { src: 'file:src/app.ts', rel: 'defines', dst: 'sym:app.ts#helper', payload: { line: 40 } },
        { src: 'sym:app.ts#main', rel: 'calls', dst: 'sym:app.ts#helper' },
      ],
    })
    await memory.graph.removeEdge('sym:app.ts#main', 'calls', 'sym:app.ts#helper')
    await memory.kv.put('repo:app', 'decisions', 'bundler', { choice: 'vite' })
    const expected = {
      out: await memory.graph.neighbors('file:src/app.ts'),
      both: await memory.graph.neighbors('sym:app.ts#helper', { direction: 'both' }),
      node: await memory.graph.getNode('sym:app.ts#main'),
      kv: await memory.kv.get('repo:app', 'decisions', 'bundler'),
    }
    const bytes = new Uint8Array(await (await memory.exportFile({ passphrase: 'pass phrase' })).arrayBuffer())
    await memory.close()
    return { expected: JSON.stringify(expected), file: btoa(Array.from(bytes, (c) => String.fromCharCode(c)).join('')) }
  })

  // A fresh page: only the harness is loaded, and opening the snapshot fetches nothing more.
  const reader = await browser.newPage()
  await openHarness(reader)
  const requests: string[] = []
  reader.on('request', (r) => requests.push(r.url()))
  const read = await reader.evaluate(async (file) => {
    const bytes = Uint8Array.from(atob(file), (c) => c.charCodeAt(0))
    const codeOf = async (p: Promise<unknown>) => p.then(() => 'none', (e: { code?: string }) => e.code ?? 'no code')
    const refused = {
      noPassphrase: await codeOf(window.engram.openSnapshot(bytes)),
      truncated: await codeOf(window.engram.openSnapshot(bytes.slice(0, 30), { passphrase: 'pass phrase' })),
      notAFile: await codeOf(window.engram.openSnapshot('file.engram' as unknown as Blob)),
    }
    const snap = await window.engram.openSnapshot(new Blob([bytes]), { passphrase: 'pass phrase' })
    const got = {
      out: snap.graph.neighbors('file:src/app.ts'),
      both: snap.graph.neighbors('sym:app.ts#helper', { direction: 'both' }),
      node: snap.graph.getNode('sym:app.ts#main'),
      kv: snap.kv.get('repo:app', 'decisions', 'bundler'),
    }
    return { got: JSON.stringify(got), refused, removedStillThere: snap.graph.neighbors('sym:app.ts#main').length }
  }, written.file)
  expect(read.got).toBe(written.expected)
  expect((JSON.parse(read.got) as { out: { neighbor: string }[] }).out.map((n) => n.neighbor)).toEqual(['sym:app.ts#main', 'sym:app.ts#helper'])
  expect(read.removedStillThere).toBe(0)
  expect(read.refused).toEqual({ noPassphrase: 'WRONG_PASSPHRASE', truncated: 'IMPORT_CORRUPT', notAFile: 'INVALID_INPUT' })
  expect(requests).toEqual([])
  // The listener does see what the page fetches.
  await reader.evaluate(() => fetch('/harness.html').then((r) => r.text()))
  expect(requests.map((u) => new URL(u).pathname)).toEqual(['/harness.html'])
})
