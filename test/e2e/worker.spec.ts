import { expect, test } from '@playwright/test'
import { openHarness } from './support.ts'

test('the worker boots PGlite with pgvector and answers through comlink', async ({ page }) => {
  await openHarness(page)
  const ping = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', bootTimeoutMs: 30_000 })
    const result = await memory.ping()
    await memory.close()
    return result
  })
  expect(ping.schemaVersion).toBeGreaterThanOrEqual(1)
  expect(ping.postgres).toMatch(/^1[5-9]/)
  expect(ping.vector).toMatch(/^0\.\d+\.\d+$/)
})

test('a worker that never answers turns into BOOT_TIMEOUT', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const silent = new Worker(
      URL.createObjectURL(new Blob(['/* never answers */'], { type: 'text/javascript' })),
    )
    try {
      await window.engram.createMemory({ storage: 'memory', worker: silent, bootTimeoutMs: 500 })
      return { code: 'none' }
    } catch (error) {
      return {
        code: (error as { code?: string }).code,
        isMemoryError: error instanceof window.engram.MemoryError,
      }
    }
  })
  expect(outcome).toEqual({ code: 'BOOT_TIMEOUT', isMemoryError: true })
})

test('a MemoryError thrown in the worker keeps its class, code and message on the page', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory' })
    try {
      await (memory as unknown as { noSuchMethod(): Promise<void> }).noSuchMethod()
      return { code: 'none' }
    } catch (error) {
      return {
        isMemoryError: error instanceof window.engram.MemoryError,
        code: (error as { code?: string }).code,
        message: (error as Error).message,
      }
    } finally {
      await memory.close()
    }
  })
  expect(outcome).toMatchObject({ isMemoryError: true, code: 'INVALID_INPUT' })
  expect(outcome.message).toContain('noSuchMethod')
})

test('arguments that cannot cross to the worker are refused as INVALID_INPUT, and the memory goes on', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' } })
    const refusal = async (run: () => Promise<unknown>) => {
      try {
        await run()
        return 'none'
      } catch (error) {
        return `${error instanceof window.engram.MemoryError ? 'MemoryError' : (error as Error).name} ${(error as { code?: string }).code ?? ''}`
      }
    }
    const loose = memory as unknown as { remember(input: unknown): Promise<unknown>; search(q: unknown): Promise<unknown> }
    try {
      return {
        fn: await refusal(() => loose.remember({ content: 'x', category: 'fact', metadata: { f: () => 1 } })),
        symbol: await refusal(() => loose.search(Symbol('q'))),
        nul: await refusal(() => loose.search('a\u0000b')),
        after: (await memory.remember({ content: 'still here', category: 'fact' })).action,
        memories: (await memory.memories.list()).length,
      }
    } finally {
      await memory.close()
    }
  })
  expect(outcome).toEqual({
    fn: 'MemoryError INVALID_INPUT',
    symbol: 'MemoryError INVALID_INPUT',
    nul: 'MemoryError INVALID_INPUT',
    after: 'created',
    memories: 1,
  })
})

test('the demo page starts its memory', async ({ page }) => {
  await page.goto('/')
  await expect(page.getByRole('status')).toContainText('Memory ready in OPFS')
})

test('engine settings given to createMemory reach the engine in the worker; invalid ones fail the boot', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({
      storage: 'memory',
      embedder: { kind: 'none' },
      scoring: { recency: 0, familiarityScale: 3 },
      statistics: 'manual',
    })
    const bundle = await memory.buildContext({ query: 'anything', retrieval: false })
    await memory.close()
    const codes: string[] = []
    for (const settings of [{ scoring: { neighbour: 2 } }, { indexingPause: { quietMs: -5 } }]) {
      try {
        await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' }, ...settings })
        codes.push('none')
      } catch (error) {
        codes.push(String((error as { code?: string }).code))
      }
    }
    return { weights: bundle.provenance.weights, codes }
  })
  expect(outcome.weights).toMatchObject({ recency: 0, familiarityScale: 3 })
  expect(outcome.codes).toEqual(['INVALID_INPUT', 'INVALID_INPUT'])
})

test('cacheMB reaches the worker: a memory opens with it, and a size out of range fails the boot', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' }, cacheMB: 32 })
    await memory.record({
      kind: 'message',
      scope: { conversationId: 'c1' },
      actor: { type: 'human', id: 'ann' },
      content: { text: 'the cache holds decoded pages' },
    })
    const hits = await memory.search('cache pages')
    const { cacheMB } = await memory.stats()
    await memory.close()
    let code = 'none'
    try {
      await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' }, cacheMB: 4096 })
    } catch (error) {
      code = String((error as { code?: string }).code)
    }
    return { hits: hits.length, cacheMB, code }
  })
  expect(outcome).toEqual({ hits: 1, cacheMB: 32, code: 'INVALID_INPUT' })
})

test('the entity graph, memory contexts and keys, index sizes and the optional tools answer through the worker', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' } })
    try {
      const written = await memory.graph.putGraph({
        relations: [{ name: 'works_at' }],
        nodes: [
          { id: 'person:alice', type: 'person', scope: 'team' },
          { id: 'org:acme', type: 'organization', scope: 'team' },
        ],
        edges: [{ src: 'person:alice', rel: 'works_at', dst: 'org:acme' }],
      })
      const people = await memory.graph.nodes({ type: 'person', scope: 'team' })
      const first = await memory.remember({ content: 'Strings use single quotes', category: 'convention', userId: 'ann', context: 'Style', key: 'quotes' })
      const second = await memory.remember({ content: 'Strings use double quotes', category: 'convention', userId: 'ann', key: 'quotes' })
      const context = await memory.memories.defineContext({ name: 'Style', priority: 0.9, userId: 'ann' })
      await memory.record({ kind: 'decision', scope: { conversationId: 'c1', userId: 'ann' }, actor: { type: 'agent', id: 'coder' }, content: { text: 'Ship releases on Mondays' } })
      const decisions = (await memory.callTool('query_decisions', { query: 'releases' }, { userId: 'ann' })) as { decisions: { text: string }[] }
      const { indexBytes } = await memory.stats()
      return {
        nodes: written.nodes.map((n) => n.action),
        edges: written.edges.map((e) => e.action),
        people: people.map((n) => n.id),
        replaced: second.action === 'superseded' && second.supersededId === first.id,
        context: [context.name, context.priority, context.memories],
        decisions: decisions.decisions.map((d) => d.text),
        indexes: indexBytes.chunks_tsv !== undefined && indexBytes.events_pkey! > 0,
      }
    } finally {
      await memory.close()
    }
  })
  expect(outcome).toEqual({
    nodes: ['created', 'created'],
    edges: ['created'],
    people: ['person:alice'],
    replaced: true,
    // The first memory was filed under Style, and the one that replaced it stays there.
    context: ['Style', 0.9, 1],
    decisions: ['Ship releases on Mondays'],
    indexes: true,
  })
})

test('identical document contents are stored once through the worker, and a file of that memory restores them', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' } })
    const restored = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' } })
    try {
      const text = 'retries = 3\n'.repeat(100)
      await memory.observeDocument({ path: '/home/u/app/config.ini', content: text, conversationId: 'c1' })
      const copy = await memory.observeDocument({ path: '/home/u/app-copy/config.ini', content: text, conversationId: 'c2' })
      const result = await memory.documents.deduplicate()
      await restored.importFile(await memory.exportFile(), { mode: 'replace' })
      const read = await restored.documents.version(copy.versionId)
      return { result, length: read.content?.length, shared: typeof read.contentOf === 'string' }
    } finally {
      await memory.close()
      await restored.close()
    }
  })
  expect(outcome).toEqual({ result: { contents: 1, versions: 1, bytesFreed: 1200 }, length: 1200, shared: true })
})

test('a conversation is archived, listed and restored through the worker; forget reaches into an archive', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', embedder: { kind: 'none' } })
    try {
      await memory.recordTurn({ conversationId: 'c-old', user: 'Which port does the billing service use?', agent: 'Port 8443.' })
      await memory.recordTurn({ conversationId: 'c-new', user: 'Rename the payroll job', agent: 'Renamed.' })
      const [archive] = await memory.archives.create({ conversationIds: ['c-old'] })
      const hidden = (await memory.search('billing service port')).map((h) => h.conversationId)
      const listed = (await memory.archives.list()).map((a) => [a.conversationId, a.counts.events])
      const restored = await memory.archives.restore(archive!.id)
      const found = (await memory.search('billing service port')).map((h) => h.conversationId)
      await memory.archives.create({ conversationIds: ['c-old'] })
      const forgotten = await memory.forget({ conversationId: 'c-old' })
      const bad = await memory.archives.create({}).catch((e: { code?: string }) => e.code)
      return {
        hidden,
        listed,
        restored: restored.inserted.events,
        found: [...new Set(found)],
        forgotten: [forgotten.counts.archives, forgotten.counts.events],
        left: (await memory.archives.list()).length,
        bad,
      }
    } finally {
      await memory.close()
    }
  })
  expect(outcome).toEqual({
    hidden: [],
    listed: [['c-old', 2]],
    restored: 2,
    found: ['c-old'],
    forgotten: [1, 2],
    left: 0,
    bad: 'INVALID_INPUT',
  })
})

test('a streamed turn assembled in the page is recorded whole through the worker, by commit and after idleMs', async ({ page }) => {
  await openHarness(page)
  const out = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({ storage: 'memory', bootTimeoutMs: 30_000 })
    const turns = window.engram.turnRecorder(memory, { conversationId: 'stream', idleMs: 200 })
    await turns.user('summarise the release notes')
    for (const delta of ['The release ', 'adds snapshots ', 'and record_turn.']) turns.reply(delta)
    turns.procedure({ tool: 'fetch_page', args: { url: 'https://example.dev/notes' }, output: 'notes' })
    const first = await turns.commit()
    await turns.user('thanks')
    turns.reply('You are welcome.')
    // Recorded by the idle timer, with no call.
    const deadline = Date.now() + 5000
    let events = await memory.events.list({ conversationId: 'stream' })
    while (events.filter((e) => e.kind === 'message').length < 4 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50))
      events = await memory.events.list({ conversationId: 'stream' })
    }
    const refused = (() => {
      try {
        window.engram.turnRecorder(memory, { conversationId: 'x', idleMs: -1 })
        return 'none'
      } catch (error) {
        return (error as { code?: string }).code
      }
    })()
    await turns.close()
    await memory.close()
    return {
      turnIndex: first?.turnIndex,
      messages: events.filter((e) => e.kind === 'message').map((e) => e.content.text),
      tools: events.filter((e) => e.kind !== 'message').map((e) => e.kind),
      refused,
    }
  })
  expect(out).toEqual({
    turnIndex: 0,
    messages: ['summarise the release notes', 'The release adds snapshots and record_turn.', 'thanks', 'You are welcome.'],
    tools: ['tool_call', 'tool_result'],
    refused: 'INVALID_INPUT',
  })
})

test('createMemory options reach the worker: a local workspace (paths outside refused), no template (initdb), persist', async ({ page }) => {
  test.setTimeout(120_000)
  await openHarness(page)
  const out = await page.evaluate(async () => {
    const memory = await window.engram.createMemory({
      name: 'options',
      storage: 'idb',
      templateUrl: false,
      persist: true,
      workspace: { mode: 'local', root: '/home/ann/invoicer' },
      embedder: { kind: 'none' },
    })
    const info = await memory.ready
    const turn = await memory.recordTurn({
      conversationId: 'c1',
      user: 'read the readme',
      agent: 'It converts invoices.',
      procedures: [{ tool: 'read_file', document: { path: '/home/ann/invoicer/README.md', content: '# invoicer', effect: 'read' } }],
    })
    const outside = await memory
      .recordTurn({
        conversationId: 'c1',
        user: 'read passwd',
        agent: 'no',
        procedures: [{ tool: 'read_file', document: { path: '/etc/passwd', content: 'root', effect: 'read' } }],
      })
      .then(
        () => 'none',
        (error: unknown) => (error as { code?: string }).code,
      )
    const events = (await memory.stats()).counts.events
    await memory.close()
    return { fromTemplate: info.fromTemplate, created: info.created, key: turn.procedures[0]?.canonicalKey, outside, events }
  })
  expect(out).toEqual({ fromTemplate: false, created: true, key: 'README.md', outside: 'PATH_OUTSIDE_ROOT', events: 2 })
})
