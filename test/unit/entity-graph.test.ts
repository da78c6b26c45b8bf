import { describe, expect, it } from 'vitest'
import { createEngine } from '../../src/core/engine.ts'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { openSnapshot } from '../../src/core/portable/snapshot.ts'
import type { TelemetryEvent } from '../../src/core/kernel/telemetry.ts'
import { steppingClock } from '../support/clock.ts'
import { openTestDb, openTestMemory } from '../support/memory.ts'

async function errorOf(p: Promise<unknown>): Promise<MemoryError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!MemoryError.is(err)) throw new Error(`expected a MemoryError, got ${String(err)}`)
  return err
}

async function issuesOf(p: Promise<unknown>): Promise<{ kind: string; id: string }[]> {
  const err = await errorOf(p)
  expect(err.code).toBe('CORRUPT')
  return (err.details?.issues ?? []) as { kind: string; id: string }[]
}

describe('entity graph', () => {
  it('adjacency: edges are found outgoing, incoming and by relation, and removal hides them', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    await g.putNodes([
      { id: 'file:a.ts', type: 'file' },
      { id: 'sym:a.ts#main', type: 'function' },
      { id: 'sym:a.ts#helper', type: 'function' },
      { id: 'test:a.test.ts', type: 'test' },
    ])
    await g.putEdge('file:a.ts', 'defines', 'sym:a.ts#main')
    await g.putEdge('file:a.ts', 'defines', 'sym:a.ts#helper', { line: 40 })
    await g.putEdge('sym:a.ts#main', 'calls', 'sym:a.ts#helper')
    await g.putEdge('test:a.test.ts', 'tests', 'sym:a.ts#main')

    const out = await g.neighbors('file:a.ts')
    expect(out.map((n) => [n.rel, n.neighbor, n.neighborType])).toEqual([
      ['defines', 'sym:a.ts#main', 'function'],
      ['defines', 'sym:a.ts#helper', 'function'],
    ])
    expect(out[1]?.payload).toEqual({ line: 40 })
    expect((await g.neighbors('sym:a.ts#main', { direction: 'in' })).map((n) => [n.src, n.rel])).toEqual([
      ['file:a.ts', 'defines'],
      ['test:a.test.ts', 'tests'],
    ])
    expect(
      (await g.neighbors('sym:a.ts#main', { direction: 'both' })).map((n) => [n.direction, n.neighbor]),
    ).toEqual([
      ['in', 'file:a.ts'],
      ['out', 'sym:a.ts#helper'],
      ['in', 'test:a.test.ts'],
    ])
    expect((await g.neighbors('sym:a.ts#main', { direction: 'in', rel: 'tests' })).map((n) => n.src)).toEqual(
      ['test:a.test.ts'],
    )
    // Several nodes in one read: a link between two of them comes once from each end, the
    // limit counts them all, and a repeated id is read once.
    const many = await g.neighbors(['sym:a.ts#helper', 'test:a.test.ts', 'sym:a.ts#helper'], { direction: 'both' })
    expect(many.map((n) => [n.direction, n.src, n.rel, n.dst])).toEqual([
      ['in', 'file:a.ts', 'defines', 'sym:a.ts#helper'],
      ['in', 'sym:a.ts#main', 'calls', 'sym:a.ts#helper'],
      ['out', 'test:a.test.ts', 'tests', 'sym:a.ts#main'],
    ])
    const pair = await g.neighbors(['sym:a.ts#main', 'sym:a.ts#helper'], { direction: 'both', rel: 'calls' })
    expect(pair.map((n) => [n.direction, n.neighbor])).toEqual([
      ['in', 'sym:a.ts#main'],
      ['out', 'sym:a.ts#helper'],
    ])
    expect(new Set(pair.map((n) => n.edgeId)).size).toBe(1)
    expect((await g.neighbors(['file:a.ts', 'sym:a.ts#main'], { limit: 2 })).map((n) => n.neighbor)).toEqual([
      'sym:a.ts#main',
      'sym:a.ts#helper',
    ])
    expect((await errorOf(g.neighbors([]))).code).toBe('INVALID_INPUT')
    expect((await errorOf(g.neighbors(['file:a.ts', '']))).code).toBe('INVALID_INPUT')
    expect(await g.removeEdge('file:a.ts', 'defines', 'sym:a.ts#helper')).toEqual({ removed: true })
    expect(await g.removeEdge('file:a.ts', 'defines', 'sym:a.ts#helper')).toEqual({ removed: false })
    expect((await g.neighbors('file:a.ts')).map((n) => n.neighbor)).toEqual(['sym:a.ts#main'])
  })

  it('re-putting an edge with a new payload supersedes it; the same payload changes nothing', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    const first = await g.putEdge('mod:a', 'imports', 'mod:b', { names: ['x'] })
    const same = await g.putEdge('mod:a', 'imports', 'mod:b', { names: ['x'] })
    const next = await g.putEdge('mod:a', 'imports', 'mod:b', { names: ['x', 'y'] })
    expect(first.action).toBe('created')
    expect(same).toEqual({ id: first.id, action: 'unchanged' })
    expect(next.action).toBe('overwritten')
    const now = await g.neighbors('mod:a')
    expect(now.map((n) => [n.edgeId, n.payload])).toEqual([[next.id, { names: ['x', 'y'] }]])
    const then = await g.neighbors('mod:a', {
      asOf: now[0]?.createdAt ? new Date(now[0].createdAt.getTime() - 1) : undefined,
    })
    expect(then.map((n) => [n.edgeId, n.payload])).toEqual([[first.id, { names: ['x'] }]])
  })

  it('a new memory item supersedes an old one through the supersedes relation', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    await g.putNodes([
      { id: 'decision:v1', type: 'decision', payload: { text: 'use REST' } },
      { id: 'decision:v2', type: 'decision', payload: { text: 'use GraphQL' } },
    ])
    await g.putEdge('decision:v2', 'supersedes', 'decision:v1')
    expect(
      (await g.neighbors('decision:v1', { direction: 'in', rel: 'supersedes' })).map((n) => n.src),
    ).toEqual(['decision:v2'])
    expect(await g.removeNode('decision:v1')).toEqual({ removed: true, edges: 1 })
    expect(await g.getNode('decision:v1')).toBeNull()
    expect(await g.neighbors('decision:v2')).toEqual([])
    expect(await g.removeNode('decision:v1')).toEqual({ removed: false, edges: 0 })
  })

  it('point-in-time reads see nodes and edges as they were', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    await g.putNode({ id: 'file:x', type: 'file', payload: { size: 1 } })
    await g.putNode({ id: 'sym:y', type: 'function' })
    const t1 = (await g.getNode('file:x'))?.updatedAt as Date
    await g.putEdge('file:x', 'defines', 'sym:y')
    const t2 = (await g.neighbors('file:x'))[0]?.createdAt as Date
    const rev2 = await g.putNode({ id: 'file:x', type: 'file', payload: { size: 2 } })
    expect(rev2).toEqual({ id: 'file:x', rev: 2, action: 'updated' })
    expect(await g.putNode({ id: 'file:x', type: 'file', payload: { size: 2 } })).toEqual({
      id: 'file:x',
      rev: 2,
      action: 'unchanged',
    })
    await g.removeEdge('file:x', 'defines', 'sym:y')
    await g.removeNode('file:x')

    expect(await g.getNode('file:x')).toBeNull()
    expect((await g.getNode('file:x', { asOf: t1 }))?.payload).toEqual({ size: 1 })
    expect((await g.getNode('file:x', { asOf: t2 }))?.rev).toBe(1)
    expect(await g.getNode('file:x', { asOf: new Date(t1.getTime() - 1) })).toBeNull()
    expect(await g.neighbors('file:x', { asOf: t1 })).toEqual([])
    expect((await g.neighbors('file:x', { asOf: t2 })).map((n) => n.neighbor)).toEqual(['sym:y'])
    expect(await g.neighbors('file:x')).toEqual([])

    // By revision, and the whole history with its removal.
    expect((await g.getNode('file:x', { rev: 1 }))?.payload).toEqual({ size: 1 })
    expect((await g.getNode('file:x', { rev: 2 }))?.payload).toEqual({ size: 2 })
    expect(await g.getNode('file:x', { rev: 3 })).toBeNull()
    expect(await g.getNode('file:x', { rev: 4 })).toBeNull()
    const history = await g.nodeHistory('file:x')
    expect(history.map((n) => [n.rev, n.payload, n.tombstone])).toEqual([
      [1, { size: 1 }, false],
      [2, { size: 2 }, false],
      [3, { size: 2 }, true],
    ])
    expect(history[0]?.updatedAt).toEqual(t1)
    expect(await g.nodeHistory('file:x', { tenantId: 'other' })).toEqual([])
    await expect(g.getNode('file:x', { rev: 1, asOf: t1 })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(g.getNode('file:x', { rev: 0 })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('validity: links that held at a time in the world, apart from when the memory learned them', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    await g.defineRelation('works_at')
    await g.putNodes([
      { id: 'person:ann', type: 'person' },
      { id: 'org:acme', type: 'org' },
      { id: 'org:globex', type: 'org' },
    ])
    // Acme 2015–2018, Globex 2018–2021, Acme again from 2021: another start is another fact.
    const period = (validFrom: string, validTo?: string) => ({ validFrom, ...(validTo ? { validTo } : {}) })
    expect((await g.putEdge('person:ann', 'works_at', 'org:acme', {}, period('2015-01-01T00:00:00Z', '2018-06-01T00:00:00Z'))).action).toBe('created')
    await g.putEdge('person:ann', 'works_at', 'org:globex', {}, period('2018-06-01T00:00:00Z', '2021-03-01T00:00:00Z'))
    expect((await g.putEdge('person:ann', 'works_at', 'org:acme', { role: 'lead' }, period('2021-03-01T00:00:00Z'))).action).toBe('created')
    const heldAt = async (validAt: string, asOf?: Date) =>
      (await g.neighbors('person:ann', { validAt, ...(asOf ? { asOf } : {}) })).map((n) => n.neighbor)
    expect(await heldAt('2016-01-01T00:00:00Z')).toEqual(['org:acme'])
    expect(await heldAt('2018-06-01T00:00:00Z')).toEqual(['org:globex']) // an end is not part of its period
    expect(await heldAt('2024-01-01T00:00:00Z')).toEqual(['org:acme'])
    expect(await heldAt('2010-01-01T00:00:00Z')).toEqual([])
    const all = await g.neighbors('person:ann')
    expect(all.map((n) => [n.neighbor, n.validFrom?.toISOString() ?? null, n.validTo?.toISOString() ?? null])).toEqual([
      ['org:acme', '2015-01-01T00:00:00.000Z', '2018-06-01T00:00:00.000Z'],
      ['org:globex', '2018-06-01T00:00:00.000Z', '2021-03-01T00:00:00.000Z'],
      ['org:acme', '2021-03-01T00:00:00.000Z', null],
    ])

    // The generic reads over edges filter the same way and say each edge's period.
    const outAt = async (validAt: string) => (await g.out('person:ann', { rel: 'works_at', validAt })).map((e) => e.dst)
    expect(await outAt('2019-01-01T00:00:00Z')).toEqual(['org:globex'])
    expect((await g.in('org:acme', { validAt: '2016-01-01T00:00:00Z' })).map((e) => [e.src, e.validFrom, e.validTo])).toEqual([
      ['person:ann', '2015-01-01T00:00:00.000Z', '2018-06-01T00:00:00.000Z'],
    ])
    const walked = await g.walk('org:globex', { depth: 2, validAt: '2024-01-01T00:00:00Z' })
    expect(walked.nodes.map((n) => n.id)).toEqual(['org:globex'])
    expect((await g.walk('org:globex', { depth: 2 })).nodes.map((n) => n.id)).toEqual(['org:globex', 'person:ann', 'org:acme'])
    await expect(g.out('person:ann', { validAt: 'never' })).rejects.toMatchObject({ code: 'INVALID_INPUT' })

    // The same start with an end revises that link; what the memory knew before still reads.
    const open = all[2]?.createdAt as Date
    const ended = period('2021-03-01T00:00:00Z', '2023-01-01T00:00:00Z')
    expect((await g.putEdge('person:ann', 'works_at', 'org:acme', { role: 'lead' }, ended)).action).toBe('overwritten')
    expect((await g.putEdge('person:ann', 'works_at', 'org:acme', { role: 'lead' }, ended)).action).toBe('unchanged')
    expect(await heldAt('2024-01-01T00:00:00Z')).toEqual([])
    expect(await heldAt('2024-01-01T00:00:00Z', open)).toEqual(['org:acme'])
    expect((await g.neighbors('person:ann')).length).toBe(3)

    expect((await errorOf(g.putEdge('person:ann', 'works_at', 'org:acme', {}, period('2020-01-01T00:00:00Z', '2019-01-01T00:00:00Z')))).code).toBe('INVALID_INPUT')
    expect((await errorOf(g.putEdge('person:ann', 'works_at', 'org:acme', {}, { validFrom: 'not a date' }))).code).toBe('INVALID_INPUT')
    expect((await errorOf(g.neighbors('person:ann', { validAt: 'never' }))).code).toBe('INVALID_INPUT')
  })

  it('an unknown relation is a hard error until it is defined', async () => {
    await using memory = await openTestMemory()
    const g = memory.graph
    expect((await errorOf(g.putEdge('a', 'owns', 'b'))).code).toBe('UNKNOWN_RELATION')
    expect((await errorOf(g.neighbors('a', { rel: 'owns' }))).code).toBe('UNKNOWN_RELATION')
    expect(await g.defineRelation('owns', 'team → module')).toMatchObject({
      name: 'owns',
      created: true,
      builtin: false,
    })
    expect((await g.defineRelation('owns')).created).toBe(false)
    expect((await g.putEdge('a', 'owns', 'b')).action).toBe('created')
    expect((await errorOf(g.defineRelation("bad'; name"))).code).toBe('INVALID_INPUT')
    const names = (await g.relations()).map((r) => r.name)
    for (const r of [
      'defines',
      'references',
      'calls',
      'imports',
      'tests',
      'implements',
      'constrains',
      'decided_for',
      'derived_from',
      'supersedes',
      'owns',
    ]) {
      expect(names).toContain(r)
    }
  })

  it('an id that already names another type of entity is a CONFLICT and writes nothing', async () => {
    await using memory = await openTestMemory()
    const g = memory.graph
    await g.putNode({ id: 'x', type: 'file' })
    expect(
      (
        await errorOf(
          g.putNodes([
            { id: 'y', type: 'file' },
            { id: 'x', type: 'symbol' },
          ]),
        )
      ).code,
    ).toBe('CONFLICT')
    expect(await g.getNode('y')).toBeNull()
    expect(
      (
        await errorOf(
          g.putNodes([
            { id: 'z', type: 'a' },
            { id: 'z', type: 'b' },
          ]),
        )
      ).code,
    ).toBe('CONFLICT')
    await g.removeNode('x')
    expect((await g.putNode({ id: 'x', type: 'symbol' })).rev).toBe(3)
  })

  it('putGraph writes relations, nodes and edges in one transaction: all of them, or nothing when one is refused', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    const written = await g.putGraph({
      relations: [{ name: 'works_at', description: 'person → organization' }],
      nodes: [
        { id: 'person:alice', type: 'person', payload: { name: 'Alice' } },
        { id: 'org:acme', type: 'organization' },
      ],
      edges: [{ src: 'person:alice', rel: 'works_at', dst: 'org:acme', payload: { since: 2020 } }],
    })
    expect(written.nodes.map((n) => n.action)).toEqual(['created', 'created'])
    expect(written.edges.map((e) => e.action)).toEqual(['created'])
    expect((await g.relations()).find((r) => r.name === 'works_at')?.description).toBe('person → organization')
    expect((await g.neighbors('person:alice')).map((n) => [n.rel, n.neighbor, n.payload])).toEqual([['works_at', 'org:acme', { since: 2020 }]])
    // The same again changes nothing.
    const again = await g.putGraph({ relations: [{ name: 'works_at' }], nodes: [{ id: 'org:acme', type: 'organization' }], edges: [] })
    expect(again.nodes.map((n) => n.action)).toEqual(['unchanged'])

    // A node that clashes with an existing one's type refuses the whole write: no new
    // relation, node or edge.
    const before = await memory.stats()
    const refused = await errorOf(
      g.putGraph({
        relations: [{ name: 'founded' }],
        nodes: [{ id: 'person:bob', type: 'person' }, { id: 'org:acme', type: 'person' }],
        edges: [{ src: 'person:bob', rel: 'founded', dst: 'org:acme' }],
      }),
    )
    expect(refused.code).toBe('CONFLICT')
    expect((await g.relations()).some((r) => r.name === 'founded')).toBe(false)
    expect(await g.getNode('person:bob')).toBeNull()
    expect((await memory.stats()).counts).toEqual(before.counts)
    expect((await errorOf(g.putGraph({ relations: [{ name: 'not a name' }] }))).code).toBe('INVALID_INPUT')
  })

  it('removeNodes removes many nodes and tombstones their live edges in one go', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    await g.putGraph({
      relations: [{ name: 'knows' }],
      nodes: ['a', 'b', 'c', 'd'].map((x) => ({ id: `person:${x}`, type: 'person' })),
      edges: [
        { src: 'person:a', rel: 'knows', dst: 'person:b' },
        { src: 'person:c', rel: 'knows', dst: 'person:a' },
        { src: 'person:c', rel: 'knows', dst: 'person:d' },
      ],
    })
    const out = await g.removeNodes(['person:b', 'person:a', 'person:a', 'person:none'])
    expect(out).toEqual({ removed: ['person:a', 'person:b'], edges: 2 })
    expect((await g.nodes()).map((n) => n.id)).toEqual(['person:c', 'person:d'])
    expect((await g.neighbors('person:c')).map((n) => n.neighbor)).toEqual(['person:d'])
    // Again: nothing is live any more.
    expect(await g.removeNodes(['person:a'])).toEqual({ removed: [], edges: 0 })
    expect(await g.removeNode('person:c')).toEqual({ removed: true, edges: 1 })
  })

  it("nodes lists a tenant's live nodes by type and scope, as they are now or were", async () => {
    const clock = steppingClock()
    await using memory = await openTestMemory({ now: clock })
    const g = memory.graph
    await g.putNodes([
      { id: 'person:ann', type: 'person', scope: 'team:a' },
      { id: 'person:bo', type: 'person', scope: 'team:b' },
      { id: 'org:acme', type: 'organization', scope: 'team:a' },
      { id: 'person:cy', type: 'person', scope: 'team:a', tenantId: 'other' },
    ])
    // The time of that first write, by the memory's clock.
    const cut = (await g.getNode('person:ann'))!.updatedAt
    await g.putNode({ id: 'person:bo', type: 'person', scope: 'team:a' })
    await g.removeNode('person:ann')
    const ids = (list: { id: string }[]) => list.map((n) => n.id)
    expect(ids(await g.nodes())).toEqual(['org:acme', 'person:bo'])
    expect(ids(await g.nodes({ type: 'person' }))).toEqual(['person:bo'])
    expect(ids(await g.nodes({ scope: 'team:a' }))).toEqual(['org:acme', 'person:bo'])
    expect(ids(await g.nodes({ scope: 'team:b' }))).toEqual([])
    expect(ids(await g.nodes({ type: 'person', asOf: cut }))).toEqual(['person:ann', 'person:bo'])
    expect(ids(await g.nodes({ type: 'person', scope: 'team:b', asOf: cut }))).toEqual(['person:bo'])
    expect(ids(await g.nodes({ tenantId: 'other' }))).toEqual(['person:cy'])
    expect(ids(await g.nodes({ limit: 1 }))).toEqual(['org:acme'])
    expect(ids(await g.nodes({ ids: ['person:bo', 'org:acme', 'person:ann', 'nope'] }))).toEqual(['org:acme', 'person:bo'])
    expect(ids(await g.nodes({ ids: [] }))).toEqual([])
    expect((await errorOf(g.nodes({ limit: 0 }))).code).toBe('INVALID_INPUT')
  })

  it("a node's type is judged by its latest revision, also when a merged file gave it another", async () => {
    await using mine = await openTestMemory()
    await using theirs = await openTestMemory()
    await mine.graph.putNode({ id: 'x', type: 'file', payload: { v: 'mine' } })
    await theirs.graph.putNode({ id: 'x', type: 'symbol', payload: { v: 1 } })
    await theirs.graph.putNode({ id: 'x', type: 'symbol', payload: { v: 2 } })
    await mine.importFile(await theirs.exportFile(), { mode: 'merge' })
    expect((await mine.graph.nodeHistory('x')).map((n) => [n.rev, n.type])).toEqual([
      [1, 'file'],
      [2, 'symbol'],
    ])
    expect((await mine.graph.nodes({ type: 'file' })).map((n) => n.id)).toEqual([])
    expect((await mine.graph.nodes({ type: 'symbol' })).map((n) => [n.id, n.rev])).toEqual([['x', 2]])
    const snapshot = await openSnapshot(await mine.exportFile())
    expect(snapshot.graph.nodes({ type: 'file' })).toEqual([])
  })

  it('ids, types, scopes and policy names Postgres would store altered are refused, so that two never become one', async () => {
    await using memory = await openTestMemory()
    const g = memory.graph
    await g.putNode({ id: 'x', type: 'a' })
    for (const bad of ['x\uD800', 'x\uDC00', 'x\u0000']) {
      const calls: Promise<unknown>[] = [
        g.putNode({ id: bad, type: 'a' }),
        g.putNode({ id: 'y', type: bad }),
        g.putNode({ id: 'y', type: 'a', scope: bad }),
        g.putEdge(bad, 'defines', 'x'),
        g.getNode(bad),
        g.nodes({ type: bad }),
        g.neighbors(bad),
        memory.kv.put('s', 'n', bad, 1),
        memory.kv.get(bad, 'n', 'k'),
      ]
      // Each settled at once: a write waiting for its turn must not leave a read's refusal unhandled.
      for (const error of await Promise.all(calls.map((call) => errorOf(call)))) expect(error.code, JSON.stringify(bad)).toBe('INVALID_INPUT')
    }
    expect((await memory.stats()).counts).toMatchObject({ nodes: 1, kv: 0 })
    // An id within 1,000 characters but past what its index holds in bytes: refused as input, nothing written.
    let seed = 7
    const cjk = Array.from({ length: 1000 }, () => String.fromCharCode(0x4e00 + ((seed = (seed * 48271) % 2147483647) % 20000))).join('')
    expect((await errorOf(g.putNode({ id: cjk, type: 'a' }))).code).toBe('INVALID_INPUT')
    expect((await memory.stats()).counts).toMatchObject({ nodes: 1 })
    // Whole pairs are text like any other.
    await g.putNode({ id: 'x\uD83D\uDE00', type: 'a' })
    expect((await g.getNode('x\uD83D\uDE00'))?.id).toBe('x\uD83D\uDE00')
    // A payload key named __proto__ is a key like any other.
    const payload = JSON.parse('{"__proto__":{"x":1},"a":1}') as Record<string, unknown>
    await g.putNode({ id: 'p', type: 'a', payload })
    await memory.kv.put('s', 'n', 'p', payload)
    expect(Object.keys((await g.getNode('p'))?.payload ?? {})).toEqual(['a', '__proto__'])
    expect((await memory.kv.get('s', 'n', 'p'))?.payload).toEqual(payload)
  })

  it('times are Dates or ISO strings with an offset, in the years 1 to 9999: anything else is INVALID_INPUT', async () => {
    await using memory = await openTestMemory()
    await memory.graph.putNode({ id: 'a', type: 'thing' })
    await memory.kv.put('s', 'ns', 'k', 'v')
    const bad = [null, 1, true, '1', '2025-03-01T10:00:00', 'March 1 2025', new Date('+010000-01-01T00:00:00Z'), new Date(Date.UTC(-1, 0, 1)), '0000-06-01T00:00:00Z']
    for (const asOf of bad) {
      const calls: Promise<unknown>[] = [
        memory.graph.getNode('a', { asOf } as never),
        memory.graph.nodes({ asOf } as never),
        memory.graph.neighbors('a', { validAt: asOf } as never),
        memory.kv.list('s', 'ns', { asOf } as never),
        memory.memories.list({ asOf } as never),
        memory.search('thing', { asOf } as never),
        memory.diffSince(asOf as never),
      ]
      // In kv.get a whole number is a revision number.
      if (asOf !== 1) calls.push(memory.kv.get('s', 'ns', 'k', { asOf } as never))
      for (const error of await Promise.all(calls.map((call) => errorOf(call)))) expect(error.code, String(asOf)).toBe('INVALID_INPUT')
    }
    expect((await memory.graph.getNode('a', { asOf: new Date('9999-12-31T00:00:00Z') }))?.id).toBe('a')
    // Read back as written, the years 1 to 99 too.
    for (const year of ['0001', '0049', '0099', '0100', '9999']) {
      const validFrom = `${year}-01-01T00:00:00.000Z`
      await memory.graph.putEdge('a', 'defines', `b${year}`, {}, { validFrom })
      expect((await memory.graph.neighbors('a', { rel: 'defines' })).find((l) => l.dst === `b${year}`)?.validFrom?.toISOString()).toBe(validFrom)
    }
    expect((await memory.kv.get('s', 'ns', 'k', { asOf: '9999-12-31T00:00:00+02:00' }))?.payload).toBe('v')
  })

  it('links to ids that point at nothing are kept but reported through telemetry', async () => {
    await using memory = await openTestMemory()
    const events: TelemetryEvent[] = []
    memory.telemetry.subscribe((e) => events.push(e))
    await memory.graph.putNode({ id: 'file:a', type: 'file' })
    await memory.graph.putEdge('file:a', 'imports', 'file:ghost', {}, { runId: 'r', taskId: 't' })
    expect((await memory.graph.neighbors('file:a')).map((n) => n.neighbor)).toEqual(['file:ghost'])
    expect(events.map((e) => [e.op, e.entityType])).toEqual([
      ['write', 'node'],
      ['write', 'edge'],
      ['warning', 'edge'],
      ['query', 'edge'],
    ])
    expect(events[2]?.detail).toEqual({ warning: 'missing_reference', count: 1, ids: ['file:ghost'] })
    expect(events[1]).toMatchObject({ runId: 'r', taskId: 't' })
  })

  it('compaction drops only tombstones older than the cut-off', async () => {
    const now = steppingClock()
    await using memory = await openTestMemory({ now })
    const g = memory.graph
    await g.putNodes([
      { id: 'a', type: 'file' },
      { id: 'b', type: 'file' },
      { id: 'c', type: 'file' },
    ])
    await g.putEdge('a', 'imports', 'b')
    await g.putEdge('a', 'imports', 'c')
    await g.removeEdge('a', 'imports', 'b')
    await g.removeNode('c')
    const cut = now()
    await g.putEdge('b', 'imports', 'a')
    await g.removeEdge('b', 'imports', 'a')
    expect((await g.verify()).tombstonedEdges).toBe(3)
    expect(await g.compact({ before: cut })).toEqual({ edges: 2, nodes: 2 })
    const after = await g.verify()
    expect(after).toMatchObject({ ok: true, nodes: 2, edges: 1, tombstonedEdges: 1, tombstonedNodes: 0 })
    expect(await g.getNode('c')).toBeNull()
    expect((await g.getNode('a'))?.type).toBe('file')
  })

  it('verify warns when tombstones pile up', async () => {
    await using memory = await openTestMemory()
    const g = memory.graph
    for (const dst of ['b', 'c', 'd']) await g.putEdge('a', 'calls', dst)
    await g.removeEdge('a', 'calls', 'b')
    await g.removeEdge('a', 'calls', 'c')
    const report = await g.verify()
    expect(report.tombstoneRatio).toBeCloseTo(2 / 3, 10)
    expect(report.warnings).toEqual(['67% of edges are tombstoned: run graph.compact()'])
  })

  it('every read and traversal reports a telemetry event with the run and task it names; a removed node reports its links', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    await g.putGraph({
      relations: [{ name: 'calls' }],
      nodes: [
        { id: 'fn:a', type: 'function' },
        { id: 'fn:b', type: 'function' },
      ],
      edges: [{ src: 'fn:a', rel: 'calls', dst: 'fn:b' }],
    })
    const events: TelemetryEvent[] = []
    memory.telemetry.subscribe((e) => events.push(e))
    const run = { runId: 'run-7', taskId: 'task-3' }
    await g.getNode('fn:a', run)
    await g.nodeHistory('fn:a', run)
    await g.nodes(run)
    await g.neighbors('fn:a', run)
    await g.out('fn:a', run)
    await g.in('fn:b', { rel: 'calls', ...run })
    await g.walk('fn:a', run)
    await g.getNode('fn:a')
    expect(events.map((e) => [e.op, e.entityType, e.memoryId, e.runId, e.taskId])).toEqual([
      ['read', 'node', 'fn:a', 'run-7', 'task-3'],
      ['read', 'node', 'fn:a', 'run-7', 'task-3'],
      ['query', 'node', null, 'run-7', 'task-3'],
      ['query', 'edge', 'fn:a', 'run-7', 'task-3'],
      ['query', 'edge', 'fn:a', 'run-7', 'task-3'],
      ['query', 'edge', 'fn:b', 'run-7', 'task-3'],
      ['query', 'edge', 'fn:a', 'run-7', 'task-3'],
      ['read', 'node', 'fn:a', null, null],
    ])
    expect(events[5]?.detail).toEqual({ direction: 'in', results: 1 })
    expect(events[6]?.detail).toEqual({ walk: 2, nodes: 2, edges: 1 })
    events.length = 0
    const [link] = await g.neighbors('fn:a', { runId: 'x' })
    events.length = 0
    await g.removeNode('fn:b', run)
    expect(events.filter((e) => e.op === 'delete').map((e) => [e.entityType, e.memoryId, e.runId, e.detail])).toEqual([
      ['edge', link?.edgeId, 'run-7', { src: 'fn:a', rel: 'calls', dst: 'fn:b' }],
      ['node', 'fn:b', 'run-7', undefined],
    ])
  })

  it('removals that leave too many tombstones warn through telemetry, without waiting for verify', async () => {
    await using memory = await openTestMemory()
    const g = memory.graph
    const warnings: TelemetryEvent[] = []
    memory.telemetry.subscribe((e) => {
      // (Links to ids that are no nodes warn of that too.)
      if (e.op === 'warning' && e.detail?.warning === 'tombstones') warnings.push(e)
    })
    for (const dst of ['b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k']) await g.putEdge('a', 'calls', dst)
    await memory.refreshStatistics()
    await g.removeEdge('a', 'calls', 'b')
    await g.removeEdge('a', 'calls', 'c')
    await g.removeEdge('a', 'calls', 'd')
    expect(warnings).toEqual([])
    await g.removeEdge('a', 'calls', 'e')
    expect(warnings.map((w) => w.detail)).toEqual([{ warning: 'tombstones', tombstoned: 4, edges: 10, ratio: 0.4, advice: 'run graph.compact()' }])
    // Removing a node tombstones its edges and warns as well; compacting clears the cause.
    await g.putNode({ id: 'a', type: 'module' })
    await g.removeNode('a')
    expect(warnings).toHaveLength(2)
    await g.compact({ before: new Date(Date.now() + 60_000) })
    for (const dst of ['y', 'z', 'w', 'v']) await g.putEdge('x', 'calls', dst)
    await memory.refreshStatistics()
    await g.removeEdge('x', 'calls', 'y')
    expect(warnings).toHaveLength(2)
    expect((await g.verify()).tombstoneRatio).toBe(0.25)
    // Revising links retires the rows they replace: a payload rewritten run after run piles up
    // tombstones too, and so does ending an edge by id.
    await g.putEdge('x', 'calls', 'z', { run: 2 })
    expect(warnings.map((w) => w.detail?.tombstoned)).toEqual([4, 10, 2])
    await g.putGraph({ edges: [{ src: 'x', rel: 'calls', dst: 'w', payload: { run: 2 } }] })
    expect(warnings).toHaveLength(4)
    const [link] = await g.neighbors('x', { rel: 'calls' })
    const deletes: TelemetryEvent[] = []
    memory.telemetry.subscribe((e) => {
      if (e.op === 'delete' && e.entityType === 'edge') deletes.push(e)
    })
    await memory.graph.tombstone(link?.edgeId as string)
    expect(deletes.map((d) => [d.memoryId, d.detail])).toEqual([[link?.edgeId, { src: 'x', rel: 'calls', dst: link?.dst }]])
    expect(warnings).toHaveLength(5)
  })

  it('a system clock stepped back dates nothing before what it follows: the engine clock holds until it catches up', async () => {
    let t = Date.parse('2025-03-01T10:00:10Z')
    await using memory = await openTestMemory({ now: () => new Date(t) })
    const g = memory.graph
    await g.putNodes([{ id: 'a', type: 't' }, { id: 'b', type: 't' }, { id: 'n1', type: 't' }])
    await g.putEdge('a', 'imports', 'b', { v: 1 })
    await g.putEdge('n1', 'imports', 'a')
    t -= 5000
    await g.putEdge('a', 'imports', 'b', { v: 2 })
    await g.removeEdge('a', 'imports', 'b')
    await g.removeNode('n1')
    await g.verify()
    const history = await g.nodeHistory('n1')
    expect(history.map((n) => n.updatedAt.toISOString())).toEqual(['2025-03-01T10:00:10.000Z', '2025-03-01T10:00:10.000Z'])
    t += 10_000
    await g.putNode({ id: 'c', type: 't' })
    expect((await g.getNode('c'))?.updatedAt.toISOString()).toBe('2025-03-01T10:00:15.000Z')
  })

  it('an edge cannot be ended before it began, which would leave the graph failing verify()', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    await memory.graph.putEdge('a', 'calls', 'b')
    const [link] = await memory.graph.neighbors('a')
    const err = await errorOf(memory.graph.tombstone(link?.edgeId as string, { at: new Date(link!.createdAt.getTime() - 1000) }))
    expect(err.code).toBe('INVALID_INPUT')
    expect((await memory.graph.verify()).ok).toBe(true)
    expect(await memory.graph.neighbors('a')).toHaveLength(1)
    const ended = await memory.graph.tombstone(link?.edgeId as string, { at: link!.createdAt })
    expect(ended.tombstonedAt).toBe(link?.createdAt.toISOString())
    expect((await memory.graph.verify()).ok).toBe(true)
  })

  it('payloads that are not JSON, and revision numbers past what is stored, are refused as INVALID_INPUT, nothing written', async () => {
    await using memory = await openTestMemory()
    const circular: Record<string, unknown> = {}
    circular.self = circular
    const bad: unknown[] = [circular, { n: 10n }, { s: 'half \uD800' }, { n: Number.NaN }, { at: new Date() }, { f: () => 1 }]
    for (const payload of bad) {
      for (const write of [
        () => memory.graph.putNode({ id: 'n', type: 't', payload: payload as Record<string, unknown> }),
        () => memory.graph.putEdge('a', 'calls', 'b', payload as Record<string, unknown>),
        () => memory.graph.putGraph({ nodes: [{ id: 'n', type: 't', payload }] }),
        () => memory.kv.put('s', 'n', 'k', payload),
        () => memory.remember({ content: 'x', category: 'fact', userId: 'u', metadata: payload as Record<string, unknown> }),
      ]) {
        expect((await errorOf(write())).code).toBe('INVALID_INPUT')
      }
    }
    expect((await errorOf(memory.kv.put('s', 'n', 'k', undefined))).code).toBe('INVALID_INPUT')
    expect((await memory.stats()).counts).toMatchObject({ nodes: 0, edges: 0, memories: 0 })
    expect(await memory.kv.history('s', 'n', 'k')).toEqual([])
    // A number is a revision in kv.get and getNode: one past Postgres' int is refused, not sent.
    expect((await errorOf(memory.kv.get('s', 'n', 'k', { asOf: Date.now() }))).code).toBe('INVALID_INPUT')
    expect((await errorOf(memory.graph.getNode('n', { rev: 3e9 }))).code).toBe('INVALID_INPUT')
    expect(await memory.kv.get('s', 'n', 'k', { asOf: 2_147_483_647 })).toBeNull()
    // kv.list takes a time only: a number there would mean a time in one call and a revision in the other.
    expect((await errorOf(memory.kv.list('s', 'n', { asOf: Date.now() as never }))).code).toBe('INVALID_INPUT')
    // Long canonical ids the entity graph takes are read by out, in and walk too.
    const long = `sym:${'x'.repeat(900)}`
    await memory.graph.putEdge(long, 'calls', 'b')
    expect((await memory.graph.out(long)).map((e) => e.dst)).toEqual(['b'])
    expect((await memory.graph.walk(long)).nodes.map((n) => n.id).sort()).toEqual(['b', long].sort())
  })

  it('corruption fails fast: a dangling relation id or a broken payload', async () => {
    const db = await openTestDb()
    try {
      const { graph: g } = await createEngine({ db, now: steppingClock() })
      await g.putNode({ id: 'a', type: 'file' })
      await g.putEdge('a', 'calls', 'b')
      expect((await g.verify()).ok).toBe(true)

      // Damage the foreign key would normally prevent (a bad import, a disk error).
      await db.exec(`SET session_replication_role = replica;
        INSERT INTO edges (id, src, rel, dst, created_at) VALUES ('edg_broken', 'a', 9999, 'z', now());
        RESET session_replication_role;`)
      const bad = await errorOf(g.verify())
      expect(bad.code).toBe('CORRUPT')
      expect(bad.details?.issues).toEqual([{ kind: 'unknown_relation', id: 'edg_broken', detail: '9999' }])
      expect((await errorOf(g.neighbors('a'))).code).toBe('CORRUPT')
      // Edges are append-only; repairs and damage alike go around the guard triggers.
      await db.exec(`SET session_replication_role = replica;
        DELETE FROM edges WHERE id = 'edg_broken';
        RESET session_replication_role;`)
      expect((await g.neighbors('a')).map((n) => n.neighbor)).toEqual(['b'])

      await db.exec(`SET session_replication_role = replica;
        UPDATE edges SET props = '"garbage"';
        RESET session_replication_role;`)
      expect((await issuesOf(g.verify()))[0]?.kind).toBe('edge_payload')
      expect((await errorOf(g.neighbors('a'))).code).toBe('CORRUPT')
      await db.exec(`SET session_replication_role = replica;
        UPDATE edges SET props = '{}';
        RESET session_replication_role;`)

      await db.exec(`UPDATE nodes SET payload = '[1, 2]' WHERE id = 'a'`)
      expect((await errorOf(g.getNode('a'))).code).toBe('CORRUPT')
      expect((await issuesOf(g.verify()))[0]?.kind).toBe('node_payload')
      await db.exec(`UPDATE nodes SET payload = '{}' WHERE id = 'a'`)

      await db.exec(`INSERT INTO nodes (id, rev, type, created_at) VALUES ('a', 3, 'file', now())`)
      expect((await issuesOf(g.verify()))[0]).toMatchObject({
        kind: 'node_revision_gap',
        id: 'a',
      })
    } finally {
      await db.close()
    }
  })

  // Tens of thousands of entities are bench/snapshot.ts's scale; this checks the batch writes.
  it('writes thousands of entities and links in one transaction each, adjacency exact', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const g = memory.graph
    const N = 2_000
    const nodes = Array.from({ length: N }, (_, i) => ({
      id: `sym:${i}`,
      type: i % 10 === 0 ? 'file' : 'function',
    }))
    const written = await g.putNodes(nodes)
    expect(written.filter((w) => w.action === 'created')).toHaveLength(N)
    // Each node i calls i+1 and i+7 (mod N): 2N edges.
    const edges = nodes.flatMap((_, i) => [
      { src: `sym:${i}`, rel: 'calls', dst: `sym:${(i + 1) % N}` },
      { src: `sym:${i}`, rel: 'references', dst: `sym:${(i + 7) % N}`, payload: { i } },
    ])
    const results = await g.putEdges(edges)
    expect(results.filter((r) => r.action === 'created')).toHaveLength(2 * N)
    const report = await g.verify()
    expect(report).toMatchObject({ ok: true, nodes: N, edges: 2 * N, tombstonedEdges: 0 })
    for (const i of [0, 1, 999, 1_999]) {
      const out = await g.neighbors(`sym:${i}`)
      expect(out.map((n) => [n.rel, n.neighbor]).sort()).toEqual(
        [
          ['calls', `sym:${(i + 1) % N}`],
          ['references', `sym:${(i + 7) % N}`],
        ].sort(),
      )
      const inbound = await g.neighbors(`sym:${i}`, { direction: 'in' })
      expect(inbound.map((n) => n.src).sort()).toEqual(
        [`sym:${(i - 1 + N) % N}`, `sym:${(i - 7 + N) % N}`].sort(),
      )
      expect(inbound.find((n) => n.rel === 'references')?.payload).toEqual({ i: (i - 7 + N) % N })
    }
    expect((await g.neighbors('sym:10', { direction: 'in', rel: 'calls' }))[0]?.neighborType).toBe('function')
    expect((await g.neighbors('sym:9', { rel: 'calls' }))[0]?.neighborType).toBe('file')
  })
})
