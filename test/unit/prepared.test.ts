import { describe, expect, it } from 'vitest'
import type { Db } from '../../src/core/kernel/db.ts'
import { createEngine } from '../../src/core/engine.ts'
import { MAX_PREPARED, withPreparedStatements } from '../../src/core/db/prepared.ts'
import { lookupVectorOid, vectorQueryOptions } from '../../src/embed/vectors.ts'
import { durableDb } from '../../src/runtime/pglite.ts'
import { openTestDb } from '../support/memory.ts'

const INSERT = `INSERT INTO scratch (tenant_id, key, value, created_at) VALUES ($1, $2, $3::jsonb, $4) RETURNING key, value, created_at`

/** A fresh test database, closed when the test's `await using` scope ends. */
async function openDb(withScratchTable = false) {
  const pg = await openTestDb()
  if (withScratchTable) {
    await pg.exec(`CREATE TABLE scratch (tenant_id text, key text PRIMARY KEY, value jsonb, created_at timestamptz)`)
  }
  return Object.assign(pg, { [Symbol.asyncDispose]: () => pg.close() })
}

async function preparedNames(pg: Db): Promise<{ name: string; statement: string }[]> {
  const { rows } = await pg.query<{ name: string; statement: string }>(
    `SELECT name, statement FROM pg_prepared_statements ORDER BY name`,
  )
  return rows
}

describe('prepared statements', () => {
  it('parse a statement once and give the rows an unnamed run gives', async () => {
    await using pg = await openDb(true)
    const db = withPreparedStatements(pg)
    const at = new Date('2025-01-02T03:04:05.000Z')
    const results = []
    for (const key of ['a', 'b', 'c']) {
      results.push(
        await db.transaction((tx) => tx.query(INSERT, ['t1', key, JSON.stringify({ key }), at], { prepare: true })),
      )
    }
    const plain = await db.transaction((tx) => tx.query(INSERT, ['t1', 'd', JSON.stringify({ key: 'd' }), at]))
    expect(results.map((r) => r.rows)).toEqual([
      [{ key: 'a', value: { key: 'a' }, created_at: at }],
      [{ key: 'b', value: { key: 'b' }, created_at: at }],
      [{ key: 'c', value: { key: 'c' }, created_at: at }],
    ])
    expect(plain.rows).toEqual([{ key: 'd', value: { key: 'd' }, created_at: at }])
    expect(results[0]?.affectedRows).toBe(1)
    // One named statement, parsed on the first run only.
    expect(await preparedNames(pg)).toEqual([{ name: 'engram_1', statement: INSERT }])
    // A run outside a transaction, or without the hint, is never prepared.
    await db.query(`SELECT $1::int AS n`, [1], { prepare: true })
    expect(await preparedNames(pg)).toHaveLength(1)
  })

  it('outlive a rollback, and a failure inside one writes nothing', async () => {
    await using pg = await openDb(true)
    const db = withPreparedStatements(pg)
    const at = new Date()
    const failed = db.transaction(async (tx) => {
      await tx.query(INSERT, ['t1', 'k', '{}', at], { prepare: true })
      await tx.query(INSERT, ['t1', 'k', '{}', at], { prepare: true })
    })
    // The duplicate key is Postgres's unique violation, with its SQLSTATE.
    await expect(failed).rejects.toMatchObject({ code: '23505' })
    expect((await pg.query(`SELECT count(*)::int AS n FROM scratch WHERE tenant_id = 't1'`)).rows).toEqual([{ n: 0 }])
    // Still prepared, and usable in the next transaction.
    await db.transaction((tx) => tx.query(INSERT, ['t1', 'k', '{}', at], { prepare: true }))
    expect((await pg.query(`SELECT count(*)::int AS n FROM scratch WHERE tenant_id = 't1'`)).rows).toEqual([{ n: 1 }])
    expect(await preparedNames(pg)).toHaveLength(1)
  })

  it('serialize and parse with per-call options (binary vectors)', async () => {
    await using pg = await openDb()
    const db = withPreparedStatements(pg)
    const options = vectorQueryOptions(await lookupVectorOid(pg))
    const vector = new Float32Array([0.5, -0.25, 1])
    for (let run = 0; run < 7; run++) {
      const { rows } = await db.transaction((tx) =>
        tx.query<{ v: Float32Array; n: number }>(`SELECT $1::vector AS v, vector_dims($1::vector) AS n`, [vector], {
          ...options,
          prepare: true,
        }),
      )
      expect(rows).toEqual([{ v: vector, n: 3 }])
    }
    expect(await preparedNames(pg)).toHaveLength(1)
  })

  it(`keep the ${MAX_PREPARED} most recently used statements`, async () => {
    await using pg = await openDb()
    const db = withPreparedStatements(pg)
    const sql = (k: number) => `SELECT $1::int + ${k} AS n`
    const sums = await db.transaction(async (tx) => {
      const out: number[] = []
      for (let k = 0; k < MAX_PREPARED + 5; k++) {
        const { rows } = await tx.query<{ n: number }>(sql(k), [1], { prepare: true })
        out.push(rows[0]?.n ?? -1)
        // Statement 0 stays in use, so it is never the least recently used.
        if (k > 0) await tx.query(sql(0), [1], { prepare: true })
      }
      return out
    })
    expect(sums).toEqual(Array.from({ length: MAX_PREPARED + 5 }, (_, k) => k + 1))
    const kept = (await preparedNames(pg)).map((s) => s.statement)
    expect(kept).toHaveLength(MAX_PREPARED)
    expect(kept).toContain(sql(0))
    expect(kept).toContain(sql(MAX_PREPARED + 4))
    // The oldest of the others were closed: 1–5 made room for the last five.
    for (let k = 1; k <= 5; k++) expect(kept).not.toContain(sql(k))
    expect(kept).toContain(sql(6))
  })

  it("run prepared in the runtime's durable transactions (Node and the worker)", async () => {
    await using pg = await openDb(true)
    const db = durableDb(pg)
    for (const key of ['a', 'b']) await db.transaction((tx) => tx.query(INSERT, ['t1', key, '{}', new Date()], { prepare: true }))
    expect(await preparedNames(pg)).toEqual([{ name: 'engram_1', statement: INSERT }])
    expect((await pg.query(`SELECT count(*)::int AS n FROM scratch`)).rows).toEqual([{ n: 2 }])
  })

  it('leave a database without the protocol calls as it is', () => {
    const plain: Db = {
      query: () => Promise.resolve({ rows: [] }),
      exec: () => Promise.resolve(),
      transaction: (fn) => fn(plain),
    }
    expect(withPreparedStatements(plain)).toBe(plain)
  })

  it("hold the write path's statements, shared by two engines on one database", async () => {
    await using pg = await openDb()
    const workspace = { mode: 'local' as const, root: '/repo' }
    const first = await createEngine({ db: pg, workspace, indexing: 'manual' })
    const second = await createEngine({ db: pg, workspace, indexing: 'manual' })
    const turn = {
      conversationId: 'c1',
      user: 'please read the config',
      agent: 'It sets the port to 8080.',
      procedures: [
        { tool: 'read_file', args: { path: 'config.ts' }, document: { path: 'config.ts', content: 'port = 8080', effect: 'read' as const } },
        { tool: 'run_tests', args: {}, output: 'PASS' },
      ],
    }
    const a = await first.recordTurn(turn)
    const b = await second.recordTurn({ ...turn, conversationId: 'c2' })
    expect(b.procedures[0]?.versionId).toBe(a.procedures[0]?.versionId)
    const statements = (await preparedNames(pg)).map((s) => s.statement)
    expect(statements.some((s) => s.includes('INSERT INTO events'))).toBe(true)
    expect(statements.some((s) => s.includes('INSERT INTO edges'))).toBe(true)
    expect(statements.some((s) => s.includes('FROM documents d'))).toBe(true)

    // A search is prepared too: its statement planned for its own values on every call, its
    // keyword statistics (key look-ups whatever the query) with one generic plan.
    for (let run = 0; run < 7; run++) expect(await first.search('port config', { limit: 3 })).not.toHaveLength(0)
    const { rows } = await pg.query<{ statement: string; generic_plans: number; custom_plans: number }>(
      `SELECT statement, generic_plans::int, custom_plans::int FROM pg_prepared_statements`,
    )
    const plans = (fragment: string) => rows.filter((r) => r.statement.includes(fragment)).map((r) => [r.generic_plans, r.custom_plans])
    expect(plans('ORDER BY s.final DESC')).toEqual([[0, 7]])
    expect(plans('FROM term_stats s')).toEqual([[7, 0]])
  })
})
