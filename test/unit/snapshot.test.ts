import { describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { openSnapshot } from '../../src/core/portable/snapshot.ts'
import type { NodeMemory } from '../../src/node/index.ts'
import { editedExport } from '../support/export-file.ts'
import { openTestMemory } from '../support/memory.ts'

/** A repeatable stream of numbers below n (mulberry32). */
function numbers(seed: number) {
  let s = seed >>> 0
  return (n: number) => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = Math.imul(s ^ (s >>> 15), 1 | s)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return Math.floor((((x ^ (x >>> 14)) >>> 0) / 2 ** 32) * n)
  }
}

/** Settles a call, sync or async, into its value or its error's code. */
async function outcome(call: () => unknown): Promise<unknown> {
  try {
    return { value: await call() }
  } catch (error) {
    if (!MemoryError.is(error)) throw error
    return { error: error.code }
  }
}

const TYPES = ['file', 'function', 'person', 'module']
const RELS = ['defines', 'calls', 'owns', 'works_at']
const TENANTS = ['default', 'acme']
const KEYS = ['rule-0', 'rule-1', 'rule-\u{1F600}', 'rule-\uFF5E']

/**
 * A graph written the way agents write one: nodes revised and removed and put again, links
 * written in batches (one instant for the whole batch), revised with new ends, removed; policy
 * entries revised and deleted; events in several sensitivities. `times` collects instants
 * between writes to read at.
 */
async function writeHistory(memory: NodeMemory, random: (n: number) => number, times: Date[], clock: () => number) {
  const g = memory.graph
  await g.putGraph({ relations: RELS.map((name) => ({ name })) })
  // Names the database orders unlike JavaScript's sort: past U+FFFF, and beside U+FF5E.
  const names = ['src/a.ts', 'Ann', 'b#x', 'lib-c', 'd.e/f', '\u{1F600}', '\uFF5E']
  const ids = Array.from({ length: 28 }, (_, i) => `${TYPES[i % 4]}:${names[i % 7]}`)
  const typeOf = (id: string) => id.slice(0, id.indexOf(':'))
  for (let round = 0; round < 12; round++) {
    const tenantId = TENANTS[random(2)] as string
    const nodes = ids
      .filter(() => random(3) === 0)
      .map((id) => ({ id, type: typeOf(id), tenantId, payload: { v: random(3) }, ...(random(2) ? { scope: `s${random(2)}` } : {}) }))
    const live = new Set((await g.nodes({ tenantId, limit: 1000 })).map((n) => n.id))
    for (const n of nodes) live.add(n.id)
    const ends = [...live]
    const edges = Array.from({ length: ends.length > 1 ? 6 + random(10) : 0 }, () => {
      const validFrom = random(3) === 0 ? new Date(Date.UTC(2020, random(12), 1)) : undefined
      const validTo = validFrom && random(2) ? new Date(validFrom.getTime() + (1 + random(900)) * 86_400_000) : undefined
      return {
        src: ends[random(ends.length)] as string,
        rel: RELS[random(4)] as string,
        dst: ends[random(ends.length)] as string,
        payload: random(2) ? { w: random(5) } : {},
        tenantId,
        ...(validFrom ? { validFrom } : {}),
        ...(validTo ? { validTo } : {}),
        ...(random(4) === 0 ? { runId: `run-${random(3)}`, taskId: `task-${random(3)}` } : {}),
      }
    })
    await g.putGraph({ nodes, edges })
    times.push(new Date(clock()))
    const links = await g.neighbors(ends.slice(0, 5).length ? ends.slice(0, 5) : ['none'], { tenantId, direction: 'both' })
    for (const link of links.filter(() => random(5) === 0)) await g.removeEdge(link.src, link.rel, link.dst, { tenantId })
    for (const id of ends.filter(() => random(8) === 0)) await g.removeNode(id, { tenantId })
    times.push(new Date(clock()))
    for (let k = 0; k < 3; k++) {
      const key = KEYS[random(4)] as string
      if (random(4) === 0) await memory.kv.delete('repo:x', 'constraints', key, { tenantId })
      else await memory.kv.put('repo:x', 'constraints', key, { text: `rule ${random(100)}` }, { tenantId })
    }
  }
}

describe('snapshots', () => {
  it('answer every graph, policy and event read as the memory the file was written from does', async () => {
    let t = Date.parse('2025-06-01T09:00:00Z')
    const random = numbers(11)
    // Several writes share an instant (a step of 0), as a batch does.
    await using memory = await openTestMemory({ now: () => new Date((t += random(3) === 0 ? 0 : 1 + random(5000))) })
    const times: Date[] = []
    await writeHistory(memory, random, times, () => t)
    const events: string[] = []
    for (const [i, sensitivity] of (['none', 'low', 'high', 'low'] as const).entries()) {
      const r = await memory.record({
        kind: 'message',
        scope: { conversationId: 'c1', tenantId: i === 3 ? 'acme' : 'default' },
        actor: { type: 'human', id: 'u1' },
        sensitivity,
        content: { text: `note ${i}` },
      })
      events.push(r.eventId)
    }

    const snap = await openSnapshot(await memory.exportFile())
    expect(snap.manifest.tables.edges?.count).toBeGreaterThan(80)

    const g = memory.graph
    const asOfs = [undefined, ...times.filter((_, i) => i % 3 === 0)]
    const compared = { neighbors: 0, nonEmpty: 0, nodes: 0 }
    expect(snap.graph.relations()).toEqual(await g.relations())
    for (const tenantId of TENANTS) {
      const all = await g.nodes({ tenantId, limit: 1000 })
      const ids = [...new Set([...all.map((n) => n.id), 'person:nobody'])]
      for (const asOf of asOfs) {
        for (const [k, id] of ids.entries()) {
          const direction = (['out', 'in', 'both'] as const)[k % 3]
          const options = { tenantId, direction, ...(asOf ? { asOf } : {}) }
          const expected = await g.neighbors(id, options)
          expect(snap.graph.neighbors(id, options), `${tenantId} ${id} ${direction} ${asOf?.toISOString()}`).toEqual(expected)
          expect(snap.graph.getNode(id, { tenantId, ...(asOf ? { asOf } : {}) })).toEqual(await g.getNode(id, { tenantId, ...(asOf ? { asOf } : {}) }))
          compared.neighbors++
          if (expected.length > 0) compared.nonEmpty++
        }
        // Several nodes at once, by relation, held at a time in the world, cut by a limit.
        const many = { tenantId, direction: 'both' as const, rel: ['defines', 'owns'], validAt: '2020-06-15T00:00:00Z', limit: 7, ...(asOf ? { asOf } : {}) }
        expect(snap.graph.neighbors(ids.slice(0, 6), many)).toEqual(await g.neighbors(ids.slice(0, 6), many))
        for (const filter of [{}, { type: 'person' }, { scope: 's1' }, { ids: ids.slice(3, 12) }, { limit: 3 }]) {
          const options = { tenantId, ...filter, ...(asOf ? { asOf } : {}) }
          expect(snap.graph.nodes(options)).toEqual(await g.nodes(options))
          compared.nodes++
        }
      }
      for (const id of ids) {
        expect(snap.graph.nodeHistory(id, { tenantId })).toEqual(await g.nodeHistory(id, { tenantId }))
        expect(snap.graph.getNode(id, { tenantId, rev: 2 })).toEqual(await g.getNode(id, { tenantId, rev: 2 }))
      }
      for (const key of KEYS) {
        expect(snap.kv.history('repo:x', 'constraints', key, { tenantId })).toEqual(await memory.kv.history('repo:x', 'constraints', key, { tenantId }))
        for (const asOf of [undefined, 1, 2, ...times.filter((_, i) => i % 4 === 1)]) {
          const options = { tenantId, ...(asOf === undefined ? {} : { asOf }) }
          expect(snap.kv.get('repo:x', 'constraints', key, options)).toEqual(await memory.kv.get('repo:x', 'constraints', key, options))
        }
      }
      for (const asOf of [undefined, ...times.filter((_, i) => i % 4 === 1)]) {
        const options = { tenantId, ...(asOf ? { asOf } : {}) }
        expect(snap.kv.list('repo:x', 'constraints', options)).toEqual(await memory.kv.list('repo:x', 'constraints', options))
      }
    }
    // The comparison covered real links, not empty answers alone.
    expect(compared.nonEmpty).toBeGreaterThan(compared.neighbors / 4)
    for (const id of events) {
      for (const channel of ['private', 'agent', 'public'] as const) {
        for (const tenantId of TENANTS) {
          expect(await outcome(() => snap.events.get(id, { tenantId, channel }))).toEqual(
            await outcome(() => memory.events.get(id, { tenantId, channel })),
          )
        }
      }
    }
    // Refusals are the engine's too.
    for (const call of [
      (m: typeof snap.graph | typeof g) => m.neighbors('file:x', { rel: 'no_such_relation' }),
      (m: typeof snap.graph | typeof g) => m.neighbors('file:x', { direction: 'sideways' as 'in' }),
      (m: typeof snap.graph | typeof g) => m.neighbors([], {}),
      (m: typeof snap.graph | typeof g) => m.getNode('file:x', { asOf: new Date(), rev: 1 }),
      (m: typeof snap.graph | typeof g) => m.nodes({ limit: 0 }),
      (m: typeof snap.graph | typeof g) => m.getNode(42 as unknown as string),
    ]) {
      const mine = await outcome(() => call(snap.graph))
      expect(mine).toEqual(await outcome(() => call(g)))
      expect(mine).toHaveProperty('error')
    }
    expect(await outcome(() => snap.kv.get('repo:x', '', 'k'))).toEqual(await outcome(() => memory.kv.get('repo:x', '', 'k')))
    for (const tenantId of [' x', 'x'.repeat(300), 'x\uD800']) {
      const mine = await outcome(() => snap.kv.history('repo:x', 'constraints', 'k', { tenantId }))
      expect(mine).toEqual(await outcome(() => memory.kv.history('repo:x', 'constraints', 'k', { tenantId })))
      expect(mine).toHaveProperty('error')
    }
    expect(await outcome(() => snap.graph.getNode('x\uD800'))).toEqual(await outcome(() => g.getNode('x\uD800')))
  })

  it('read every table and the vectors, from bytes as well as a Blob, and an encrypted file with its passphrase', async () => {
    await using memory = await openTestMemory()
    await memory.record({
      kind: 'message',
      scope: { conversationId: 'c1' },
      actor: { type: 'human', id: 'u1' },
      content: { text: 'the build uses vite' },
    })
    await memory.kv.put('repo:x', 'decisions', 'bundler', 'vite')
    const file = await memory.exportFile()
    const bytes = new Uint8Array(await file.arrayBuffer())
    // A view into a larger buffer reads as its own bytes.
    const padded = new Uint8Array(bytes.length + 10)
    padded.set(bytes, 5)
    for (const input of [file, bytes, bytes.buffer, padded.subarray(5, 5 + bytes.length)]) {
      const snap = await openSnapshot(input)
      expect(snap.rows('events').map((r) => r.content)).toEqual([{ text: 'the build uses vite' }])
      expect(snap.kv.get('repo:x', 'decisions', 'bundler')?.payload).toBe('vite')
    }
    const snap = await openSnapshot(file)
    // Rows are copies: changing one changes nothing the snapshot reads.
    ;(snap.rows('kv')[0] as Record<string, unknown>).payload = 'webpack'
    expect(snap.kv.get('repo:x', 'decisions', 'bundler')?.payload).toBe('vite')
    expect(snap.rows('kv')[0]?.payload).toBe('vite')
    expect(Object.keys(snap.manifest.tables)).toContain('@vectors')
    for (const name of ['chunks', 'constructor', 'toString', '__proto__']) {
      expect((await outcome(() => snap.rows(name))) as object).toEqual({ error: 'INVALID_INPUT' })
    }

    const sealed = await memory.exportFile({ passphrase: 'correct horse' })
    expect(await outcome(() => openSnapshot(sealed))).toEqual({ error: 'WRONG_PASSPHRASE' })
    expect(await outcome(() => openSnapshot(sealed, { passphrase: 'wrong horse' }))).toEqual({ error: 'WRONG_PASSPHRASE' })
    const opened = await openSnapshot(sealed, { passphrase: 'correct horse' })
    expect(opened.rows('events')).toEqual(snap.rows('events'))
  })

  it('a row that passes the checks but cannot be read is a damaged file, not a raw error', async () => {
    await using memory = await openTestMemory()
    const { eventId } = await memory.record({ kind: 'message', scope: { conversationId: 'c' }, actor: { type: 'human', id: 'u' }, content: { text: 'hi' } })
    const file = await editedExport(await memory.exportFile(), 'events', (row) => {
      row.created_at = 'not a time'
    })
    const snapshot = await openSnapshot(file)
    expect(() => snapshot.events.get(eventId)).toThrow(expect.objectContaining({ code: 'IMPORT_CORRUPT' }))
  })

  it('refuse a damaged file, a foreign one and what is not a file, with a typed error', async () => {
    await using memory = await openTestMemory()
    await memory.graph.putGraph({
      relations: [{ name: 'owns' }],
      nodes: [
        { id: 'team:core', type: 'team' },
        { id: 'module:search', type: 'module' },
      ],
      edges: [{ src: 'team:core', rel: 'owns', dst: 'module:search' }],
    })
    const bytes = new Uint8Array(await (await memory.exportFile()).arrayBuffer())
    const truncated = bytes.subarray(0, bytes.length - 20)
    const flipped = bytes.slice()
    flipped[bytes.length - 30] = (flipped[bytes.length - 30] as number) ^ 0xff
    for (const damaged of [truncated, flipped, new TextEncoder().encode('{"format":"something else"}')]) {
      expect(await outcome(() => openSnapshot(damaged))).toEqual({ error: 'IMPORT_CORRUPT' })
    }
    for (const wrong of [undefined, 'a path', { size: 3 }, [1, 2, 3]]) {
      expect(await outcome(() => openSnapshot(wrong as unknown as Blob))).toEqual({ error: 'INVALID_INPUT' })
    }
    expect(await outcome(() => openSnapshot(bytes, { passphrase: '' }))).toEqual({ error: 'INVALID_INPUT' })
    expect(await outcome(() => openSnapshot(bytes, { key: 'x' } as never))).toEqual({ error: 'INVALID_INPUT' })
    // A file is read whole and checked before anything is answered.
    const snap = await openSnapshot(bytes)
    expect(snap.graph.neighbors('team:core').map((n) => [n.rel, n.neighbor, n.neighborType])).toEqual([['owns', 'module:search', 'module']])
  })
})
