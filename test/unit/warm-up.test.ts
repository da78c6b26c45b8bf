import { describe, expect, it } from 'vitest'
import { durableDb } from '../../src/runtime/pglite.ts'
import { createEngine } from '../../src/core/engine.ts'
import { openTestDb } from '../support/memory.ts'

async function openEngine() {
  const pg = await openTestDb()
  const engine = await createEngine({ db: durableDb(pg), indexing: 'manual', statistics: 'manual' })
  const counts = async () => {
    const { rows } = await pg.query<{ table_name: string; n: number }>('SELECT table_name, n FROM engram_table_counts()')
    return Object.fromEntries(rows.map((r) => [r.table_name, Number(r.n)]))
  }
  return { pg, engine, counts, [Symbol.asyncDispose]: () => pg.close() }
}

describe('warmUp', () => {
  it('rehearses turns and stores nothing of them: every table holds what it held', async () => {
    await using t = await openEngine()
    await t.engine.recordTurn({ conversationId: 'c', user: 'a real question', agent: 'a real answer' })
    const before = await t.counts()
    const { rows: termsBefore } = await t.pg.query('SELECT lexeme, sensitivity, df FROM term_stats ORDER BY 1, 2')

    const done = await t.engine.warmUp({ turns: 5 })
    expect(done.turns).toBe(5)
    expect(done.ms).toBeGreaterThan(0)
    expect(await t.counts()).toEqual(before)
    expect((await t.pg.query('SELECT lexeme, sensitivity, df FROM term_stats ORDER BY 1, 2')).rows).toEqual(termsBefore)
    expect(await t.engine.search('rehearsal parser', { mode: 'keyword' })).toEqual([])

    // The memory goes on as if nothing happened: the next turn of the conversation is its second.
    const next = await t.engine.recordTurn({ conversationId: 'c', user: 'another question', agent: 'another answer' })
    expect(next.turnIndex).toBe(1)
  })

  it('holds no change list back while it waits for a quiet moment', async () => {
    await using t = await openEngine()
    let release = () => {}
    const waiting = new Promise<void>((resolve) => (release = resolve))
    const warming = t.engine.warmUp({ turns: 5, beforeEach: () => waiting })
    await t.engine.recordTurn({ conversationId: 'c', user: 'written while the rehearsal waits', agent: 'ok' })
    const { events } = await t.engine.diffSince('1970-01-01T00:00:00Z')
    expect(events).toHaveLength(2)
    release()
    await warming
  })

  it('stops at the first real write, and when its signal aborts', async () => {
    await using t = await openEngine()
    const warming = t.engine.warmUp({ turns: 200 })
    await t.engine.recordTurn({ conversationId: 'c', user: 'written while warming up', agent: 'ok' })
    const stopped = await warming
    expect(stopped.turns).toBeGreaterThan(0)
    expect(stopped.turns).toBeLessThan(200)

    const stop = new AbortController()
    const aborted = t.engine.warmUp({ turns: 200, signal: stop.signal })
    stop.abort()
    expect((await aborted).turns).toBeLessThanOrEqual(1)
    expect(await t.engine.warmUp({ turns: 0 })).toMatchObject({ turns: 0 })

    // The hook runs before each rehearsal, and its wait is not counted.
    let waits = 0
    const paced = await t.engine.warmUp({
      turns: 3,
      beforeEach: async () => {
        waits++
        await new Promise((resolve) => setTimeout(resolve, 500))
      },
    })
    expect(waits).toBe(3)
    expect(paced.turns).toBe(3)
    expect(paced.ms).toBeLessThan(1500)
  })

  it('refuses bad options with INVALID_INPUT', async () => {
    await using t = await openEngine()
    for (const bad of [{ turns: -1 }, { turns: 201 }, { turns: 1.5 }, { turns: '3' }, { rounds: 3 }, { signal: 'stop' }, { beforeEach: 'wait' }]) {
      await expect(t.engine.warmUp(bad as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
  })
})
