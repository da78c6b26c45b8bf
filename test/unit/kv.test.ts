import { describe, expect, it } from 'vitest'
import { createEngine } from '../../src/core/engine.ts'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import type { TelemetryEvent } from '../../src/core/kernel/telemetry.ts'
import { steppingClock } from '../support/clock.ts'
import { openTestDb, openTestMemory } from '../support/memory.ts'

describe('policy memory (kv)', () => {
  it('keeps every revision and reads any of them back by revision or time', async () => {
    const now = steppingClock()
    await using memory = await openTestMemory({ now })
    const r1 = await memory.kv.put(
      'repo:engram',
      'decisions',
      'errors',
      { text: 'one MemoryError class' },
      { runId: 'r1', taskId: 't1' },
    )
    const r2 = await memory.kv.put(
      'repo:engram',
      'decisions',
      'errors',
      { text: 'codes are stable' },
      { runId: 'r2' },
    )
    expect([r1.rev, r2.rev]).toEqual([1, 2])
    expect(await memory.kv.get('repo:engram', 'decisions', 'errors')).toMatchObject({
      rev: 2,
      payload: { text: 'codes are stable' },
      runId: 'r2',
      deleted: false,
    })
    expect((await memory.kv.get('repo:engram', 'decisions', 'errors', { asOf: 1 }))?.payload).toEqual({
      text: 'one MemoryError class',
    })
    expect((await memory.kv.get('repo:engram', 'decisions', 'errors', { asOf: r1.createdAt }))?.rev).toBe(1)
    expect((await memory.kv.get('repo:engram', 'decisions', 'errors', { asOf: r2.createdAt }))?.rev).toBe(2)
    expect(
      await memory.kv.get('repo:engram', 'decisions', 'errors', {
        asOf: new Date(r1.createdAt.getTime() - 1),
      }),
    ).toBeNull()
    expect(
      (await memory.kv.history('repo:engram', 'decisions', 'errors')).map((e) => [e.rev, e.runId, e.taskId]),
    ).toEqual([
      [1, 'r1', 't1'],
      [2, 'r2', null],
    ])
  })

  it('delete writes a tombstone revision; the past stays readable', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const put = await memory.kv.put('s', 'constraints', 'no-network', 'never call the network')
    expect(await memory.kv.delete('s', 'constraints', 'no-network')).toEqual({ deleted: true, rev: 2 })
    expect(await memory.kv.delete('s', 'constraints', 'no-network')).toEqual({ deleted: false, rev: null })
    expect(await memory.kv.delete('s', 'constraints', 'never-existed')).toEqual({ deleted: false, rev: null })
    expect(await memory.kv.get('s', 'constraints', 'no-network')).toBeNull()
    expect((await memory.kv.get('s', 'constraints', 'no-network', { asOf: put.createdAt }))?.payload).toBe(
      'never call the network',
    )
    expect((await memory.kv.history('s', 'constraints', 'no-network')).map((e) => e.deleted)).toEqual([
      false,
      true,
    ])
    const again = await memory.kv.put('s', 'constraints', 'no-network', 'allow localhost only')
    expect(again.rev).toBe(3)
  })

  it('lists the live entries of a namespace, now or as of a time, by key', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    await memory.kv.put('s', 'procedures', 'test', 'npm test')
    const lint = await memory.kv.put('s', 'procedures', 'lint', 'biome check')
    await memory.kv.put('s', 'procedures', 'build', 'vite build')
    await memory.kv.put('s', 'procedures', 'test', 'vitest run')
    await memory.kv.delete('s', 'procedures', 'lint')
    await memory.kv.put('s', 'other', 'x', 1)
    await memory.kv.put('other-scope', 'procedures', 'y', 1)
    expect((await memory.kv.list('s', 'procedures')).map((e) => [e.key, e.payload])).toEqual([
      ['build', 'vite build'],
      ['test', 'vitest run'],
    ])
    expect(
      (await memory.kv.list('s', 'procedures', { asOf: lint.createdAt })).map((e) => [e.key, e.payload]),
    ).toEqual([
      ['lint', 'biome check'],
      ['test', 'npm test'],
    ])
  })

  it('names the namespaces of a scope that hold a live entry, now or as of a time', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    await memory.kv.put('s', 'procedures', 'test', 'npm test')
    const only = await memory.kv.put('s', 'decisions', 'db', 'pglite')
    await memory.kv.put('s', 'constraints', 'net', 'offline')
    await memory.kv.delete('s', 'decisions', 'db')
    await memory.kv.put('other-scope', 'elsewhere', 'y', 1)
    await memory.kv.put('s', 'acme-only', 'z', 1, { tenantId: 'acme' })
    expect(await memory.kv.namespaces('s')).toEqual(['constraints', 'procedures'])
    expect(await memory.kv.namespaces('s', { asOf: only.createdAt })).toEqual(['decisions', 'procedures'])
    expect(await memory.kv.namespaces('s', { tenantId: 'acme' })).toEqual(['acme-only'])
    expect(await memory.kv.namespaces('nothing-here')).toEqual([])
  })

  it('revisions cannot be rewritten or deleted in the database', async () => {
    const db = await openTestDb()
    try {
      await createEngine({ db })
      await db.query(
        `INSERT INTO kv (id, scope, namespace, key, rev, payload, created_at) VALUES ('kvr_1', 's', 'n', 'k', 1, '1', now())`,
      )
      await expect(db.query(`UPDATE kv SET payload = '2'`)).rejects.toThrow(/append-only/)
      await expect(db.query('DELETE FROM kv')).rejects.toThrow(/append-only/)
    } finally {
      await db.close()
    }
  })

  it('emits write, overwrite, read and delete telemetry with scope, run and task', async () => {
    await using memory = await openTestMemory({ now: steppingClock() })
    const events: TelemetryEvent[] = []
    const stop = memory.telemetry.subscribe((e) => events.push(e))
    await memory.kv.put('s', 'n', 'k', 1, { runId: 'run', taskId: 'task' })
    await memory.kv.put('s', 'n', 'k', 2, { runId: 'run', taskId: 'task' })
    await memory.kv.get('s', 'n', 'k')
    // A read names its run and task too, when the caller gives them.
    await memory.kv.get('s', 'n', 'k', { runId: 'run', taskId: 'task' })
    await memory.kv.list('s', 'n', { runId: 'run', taskId: 'task' })
    await memory.kv.delete('s', 'n', 'k', { runId: 'run' })
    stop()
    await memory.kv.put('s', 'n', 'k', 3)
    expect(events.map((e) => [e.op, e.entityType, e.scope, e.runId, e.taskId])).toEqual([
      ['write', 'kv', 's', 'run', 'task'],
      ['overwrite', 'kv', 's', 'run', 'task'],
      ['read', 'kv', 's', null, null],
      ['read', 'kv', 's', 'run', 'task'],
      ['query', 'kv', 's', 'run', 'task'],
      ['delete', 'kv', 's', 'run', null],
    ])
    expect(events.filter((e) => e.op !== 'query').every((e) => e.at instanceof Date && typeof e.memoryId === 'string')).toBe(true)
  })

  it('a listener that throws does not break the write it observes', async () => {
    await using memory = await openTestMemory()
    const seen: string[] = []
    memory.telemetry.subscribe(() => {
      throw new Error('broken observer')
    })
    memory.telemetry.subscribe((e) => seen.push(e.op))
    expect((await memory.kv.put('s', 'n', 'k', 1)).rev).toBe(1)
    expect(seen).toEqual(['write'])
  })

  it('bad input is refused with INVALID_INPUT', async () => {
    await using memory = await openTestMemory()
    for (const call of [
      () => memory.kv.put('', 'n', 'k', 1),
      () => memory.kv.put('s', 'n', 'k', undefined),
      () => memory.kv.get('s', 'n', 'k', { asOf: 0 }),
      () => memory.kv.list('s', 'n', { asOf: 'not a date' }),
    ]) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(MemoryError.is(err, 'INVALID_INPUT')).toBe(true)
    }
  })
})
