import { describe, expect, it } from 'vitest'
import { rebuildMissingChunks } from '../../src/core/log/chunks.ts'
import type { JsonObject } from '../../src/core/kernel/json.ts'
import { MAX_TOOL_EXCERPT_BYTES } from '../../src/core/kernel/limits.ts'
import { testClock } from '../support/clock.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestMemory } from '../support/memory.ts'
import { testBackend } from '../support/backend.ts'

const scope = { tenantId: 't1', userId: 'u1', agentId: 'a1', conversationId: 'c1' }

describe('record', () => {
  it('stores an event with its chunks carrying the scope, embeddings left for the indexer', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now })
    const r = await memory.record({
      kind: 'message',
      scope,
      channel: 'team',
      actor: { type: 'human', id: 'u1' },
      sensitivity: 'low',
      tags: ['topic:onboarding'],
      content: { text: 'what is this project for?' },
    })
    expect(r.eventId).toMatch(/^evt_[0-9a-z]{26}$/)
    expect(r.chunkIds).toHaveLength(1)
    expect(r.createdAt).toBe('2025-02-09T10:00:00.000Z')

    const event = await memory.events.get(r.eventId, { tenantId: 't1' })
    expect(event).toMatchObject({
      kind: 'message',
      scope,
      channel: 'team',
      actor: { type: 'human', id: 'u1' },
      sensitivity: 'low',
      tags: ['topic:onboarding'],
      content: { text: 'what is this project for?' },
      refs: [],
      turnIndex: null,
      createdAt: '2025-02-09T10:00:00.000Z',
    })
    const stats = await memory.stats()
    expect(stats.counts).toMatchObject({ events: 1, chunks: 1, artifacts: 0, edges: 0 })
    expect(stats.unembeddedChunks).toBe(1)
    // Test PGlites open with cacheMB: 4; a server has its own buffer pool.
    if (testBackend() === 'pglite') expect(stats.cacheMB).toBe(4)
  })

  it("cuts the same chunk text whatever order the content's fields come in, as rebuilding from the stored content does", async () => {
    await using t = await openTestEngine({ now: testClock().now })
    const decision = (content: JsonObject) =>
      t.engine.record({ kind: 'decision', scope, actor: { type: 'agent', id: 'a1' }, content })
    const a = await decision({ decision: 'Use PGlite', why: 'it runs in the browser', alternatives: ['sqlite', { name: 'idb', note: 'no SQL' }] })
    const b = await decision({ alternatives: ['sqlite', { note: 'no SQL', name: 'idb' }], why: 'it runs in the browser', decision: 'Use PGlite' })
    const call = (args: JsonObject) =>
      t.engine.record({ kind: 'tool_call', scope, actor: { type: 'agent', id: 'a1' }, content: { tool: 'grep', args } })
    const c = await call({ pattern: 'todo', path: 'src', flags: { i: true, n: 2 } })
    const d = await call({ flags: { n: 2, i: true }, path: 'src', pattern: 'todo' })
    const texts = async () => {
      const { rows } = await t.db.query<{ source_id: string; text: string }>('SELECT source_id, text FROM chunks ORDER BY source_id, ord')
      return new Map(rows.map((r) => [r.source_id, r.text]))
    }
    const written = await texts()
    expect(written.get(a.eventId)).toBe(written.get(b.eventId))
    expect(written.get(c.eventId)).toBe(written.get(d.eventId))
    expect(written.get(a.eventId)).toContain('Use PGlite')
    // Rebuilt from the events as stored: the same texts.
    await t.db.exec('DELETE FROM chunks')
    await t.db.transaction((tx) => rebuildMissingChunks(tx))
    expect(await texts()).toEqual(written)
  })

  it('accepts a back-dated createdAt for imports', async () => {
    await using memory = await openTestMemory()
    const r = await memory.record({
      kind: 'message',
      scope: { conversationId: 'old' },
      actor: { type: 'human', id: 'u' },
      content: { text: 'from 2023' },
      createdAt: '2023-05-08T13:56:00+02:00',
    })
    expect(r.createdAt).toBe('2023-05-08T11:56:00.000Z')
    expect((await memory.events.get(r.eventId)).scope).toEqual({ tenantId: 'default', conversationId: 'old' })
  })

  it('keeps a 64 KB excerpt of long tool output and the whole output as an artifact', async () => {
    await using memory = await openTestMemory()
    const lines = Array.from({ length: 5000 }, (_, i) => `${String(i + 1).padStart(5, '0')} ${'x'.repeat(40)}`)
    const output = `${lines.join('\n')}\n`
    const r = await memory.record({
      kind: 'tool_result',
      scope,
      actor: { type: 'tool', id: 'fs.read_file' },
      content: { tool: 'fs.read_file', path: 'src/big.ts', output, lineRange: [101, 5100] },
    })
    expect(r.artifactId).toMatch(/^art_/)
    const event = await memory.events.get(r.eventId, { tenantId: 't1' })
    const c = event.content
    expect(c.truncated).toBe(true)
    expect(c.artifactId).toBe(r.artifactId)
    expect(c.bytes).toBe(output.length)
    expect(c.output).toBeUndefined()
    const excerpt = c.excerptText as string
    expect(new TextEncoder().encode(excerpt).length).toBeLessThanOrEqual(MAX_TOOL_EXCERPT_BYTES)
    expect(excerpt.endsWith('\n')).toBe(true)
    const excerptLines = excerpt.split('\n').length - 1
    expect(excerptLines).toBe(Math.floor(MAX_TOOL_EXCERPT_BYTES / 47))
    expect(c.lineRange).toEqual([101, 100 + excerptLines])
    expect(c.totalLines).toBe(5000)

    const artifact = await memory.artifacts.get(r.artifactId as string, { tenantId: 't1' })
    expect(artifact.content).toBe(output)
    expect(artifact.bytes).toBe(output.length)
    expect(artifact.eventId).toBe(r.eventId)
    expect(artifact.sha256).toMatch(/^[0-9a-f]{64}$/)
  })

  it('keeps short tool output whole with a line range for file reads', async () => {
    await using memory = await openTestMemory()
    const r = await memory.record({
      kind: 'tool_result',
      scope,
      actor: { type: 'tool', id: 'read_file' },
      content: { tool: 'read_file', path: 'README.md', output: '# App\n\nConverts invoices.\n' },
    })
    expect(r.artifactId).toBeUndefined()
    const { content } = await memory.events.get(r.eventId, { tenantId: 't1' })
    expect(content).toEqual({
      tool: 'read_file',
      path: 'README.md',
      excerptText: '# App\n\nConverts invoices.\n',
      bytes: 26,
      truncated: false,
      lineRange: [1, 3],
      totalLines: 3,
    })
    expect((await memory.stats()).counts.artifacts).toBe(0)
  })

  it('cuts a long message into chunks of at most 1000 estimated tokens', async () => {
    await using memory = await openTestMemory()
    const paragraph = 'The invoice parser reads CSV files and normalises currencies. '.repeat(40)
    const text = Array.from({ length: 10 }, () => paragraph.trim()).join('\n\n')
    const r = await memory.record({
      kind: 'message',
      scope,
      actor: { type: 'agent', id: 'a1' },
      content: { text },
    })
    expect(r.chunkIds.length).toBeGreaterThan(3)
    const db = await memory.graph.conversation('c1', { tenantId: 't1' })
    expect(db.events).toHaveLength(1)
  })
})
