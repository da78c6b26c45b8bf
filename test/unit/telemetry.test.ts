import { describe, expect, it } from 'vitest'
import type { TelemetryEvent } from '../../src/core/kernel/telemetry.ts'
import { openTestMemory } from '../support/memory.ts'

describe('telemetry of the main calls', () => {
  it('reports each event written, document observed, search and context built with its duration, failures with their code', async () => {
    await using memory = await openTestMemory()
    const seen: TelemetryEvent[] = []
    // Nothing is reported before anyone listens.
    await memory.recordTurn({ conversationId: 'c0', user: 'unheard', agent: 'yes' })
    const stop = memory.telemetry.subscribe((e) => seen.push(e))
    const turn = await memory.recordTurn({
      conversationId: 'c1',
      user: 'what does the parser do?',
      agent: 'It reads invoices.',
      procedures: [{ tool: 'read_file', args: { path: 'src/parser.ts' }, document: { path: '/repo/src/parser.ts', content: 'export {}\n', effect: 'read' } }],
    })
    const event = await memory.record({ kind: 'message', scope: { conversationId: 'c1' }, actor: { type: 'human', id: 'ann' }, content: { text: 'and the ledger?' } })
    const doc = await memory.observeDocument({ path: '/repo/README.md', content: '# invoicer\n', conversationId: 'c1' })
    const hits = await memory.search('parser invoices')
    const bundle = await memory.buildContext({ query: 'parser', conversationId: 'c1' })
    await expect(memory.search('')).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    stop()
    await memory.search('after the listener left')

    const timed = seen.filter((e) => typeof e.detail?.method === 'string')
    expect(timed.map((e) => [e.detail?.method, e.op, e.entityType, e.memoryId])).toEqual([
      ['recordTurn', 'write', 'event', turn.userEventId],
      ['record', 'write', 'event', event.eventId],
      ['observeDocument', 'write', 'document', doc.documentId],
      ['search', 'query', 'event', null],
      ['buildContext', 'query', 'context', null],
      ['search', 'query', 'event', null],
    ])
    for (const e of timed) {
      expect(typeof e.detail?.ms).toBe('number')
      expect(e.detail?.ms as number).toBeGreaterThanOrEqual(0)
      expect(e.at).toBeInstanceOf(Date)
    }
    expect(timed[0]?.detail).toMatchObject({ procedures: 1, chunks: turn.chunkIds.length })
    expect(timed[2]?.detail).toMatchObject({ created: true })
    expect(timed[3]?.detail).toMatchObject({ hits: hits.length })
    expect(timed[4]?.detail).toMatchObject({ tokens: bundle.tokenUsedEst })
    expect(timed[5]?.detail).toMatchObject({ error: 'INVALID_INPUT' })
  })
})
