import type { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { type CompileFilterOptions, compileFilter } from '../../src/core/db/filters.ts'
import { openTestDb } from '../support/memory.ts'

const options: CompileFilterOptions = {
  columns: {
    kind: { sql: 't.kind', type: 'text' },
    score: { sql: 't.score', type: 'number' },
    created_at: { sql: 't.created_at', type: 'timestamp' },
    done: { sql: 't.done', type: 'boolean' },
  },
  jsonColumn: 't.meta',
  paramOffset: 1,
}

const ROWS: [string, string | null, number | null, string, boolean, unknown][] = [
  [
    'a',
    'note',
    1,
    '2024-01-01T00:00:00Z',
    false,
    { tag: 'work', n: 3, tags: ['x', 'Y'], deep: { path: 'v1' } },
  ],
  ['b', 'task', 5, '2024-06-01T00:00:00Z', true, { tag: 'home', n: 10, tags: ['y'], "it's": 'quoted' }],
  [
    'c',
    null,
    null,
    '2025-01-01T00:00:00Z',
    false,
    { tag: "'; DROP TABLE t; --", n: 'seven', 'a.b': 'dotted' },
  ],
  ['d', 'note', 2, '2025-06-01T00:00:00Z', true, { tag: 'Ünïcödé ✓', $1: 'dollar', deep: { path: 'v2' } }],
]

let db: PGlite

beforeAll(async () => {
  db = await openTestDb()
  await db.exec(
    'CREATE TABLE t (id text PRIMARY KEY, kind text, score float8, created_at timestamptz, done boolean, meta jsonb)',
  )
  for (const r of ROWS) {
    await db.query('INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6)', [
      r[0],
      r[1],
      r[2],
      r[3],
      r[4],
      JSON.stringify(r[5]),
    ])
  }
})
afterAll(async () => {
  await db.close()
})

/** Ids of the rows a filter keeps, with one leading parameter to prove the offset works. */
async function ids(expr: unknown): Promise<string[]> {
  const f = compileFilter(expr, options)
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM t WHERE id <> $1 AND ${f.sql} ORDER BY id`,
    ['zzz', ...f.params],
  )
  return rows.map((r) => r.id)
}

function invalid(expr: unknown): MemoryError {
  try {
    compileFilter(expr, options)
  } catch (e) {
    if (MemoryError.is(e, 'INVALID_FILTER')) return e
    throw e
  }
  throw new Error('expected INVALID_FILTER')
}

describe('filter expressions', () => {
  it('compare metadata fields with every operator', async () => {
    expect(await ids({ field: 'tag', operator: 'eq', value: 'work' })).toEqual(['a'])
    expect(await ids({ field: 'tag', operator: 'ne', value: 'work' })).toEqual(['b', 'c', 'd'])
    expect(await ids({ field: 'n', operator: 'gt', value: 3 })).toEqual(['b'])
    expect(await ids({ field: 'n', operator: 'gte', value: 3 })).toEqual(['a', 'b'])
    expect(await ids({ field: 'n', operator: 'lt', value: 10 })).toEqual(['a'])
    expect(await ids({ field: 'n', operator: 'lte', value: 10 })).toEqual(['a', 'b'])
    expect(await ids({ field: 'tag', operator: 'in', value: ['work', 'home'] })).toEqual(['a', 'b'])
    expect(await ids({ field: 'tag', operator: 'nin', value: ['work', 'home'] })).toEqual(['c', 'd'])
    expect(await ids({ field: 'tags', operator: 'contains', value: 'x' })).toEqual(['a'])
    expect(await ids({ field: 'tags', operator: 'icontains', value: 'y' })).toEqual(['a', 'b'])
    expect(await ids({ field: 'tag', operator: 'contains', value: 'or' })).toEqual(['a'])
    expect(await ids({ field: 'tag', operator: 'icontains', value: 'ÜNÏ' })).toEqual(['d'])
    expect(await ids({ field: 'missing', operator: 'eq', value: null })).toEqual(['a', 'b', 'c', 'd'])
    expect(await ids({ field: 'deep', operator: 'ne', value: null })).toEqual(['a', 'd'])
  })

  it('compare known columns with typed values', async () => {
    expect(await ids({ field: 'kind', operator: 'eq', value: 'note' })).toEqual(['a', 'd'])
    expect(await ids({ field: 'kind', operator: 'ne', value: 'note' })).toEqual(['b', 'c'])
    expect(await ids({ field: 'kind', operator: 'eq', value: null })).toEqual(['c'])
    expect(await ids({ field: 'score', operator: 'gte', value: 2 })).toEqual(['b', 'd'])
    expect(await ids({ field: 'score', operator: 'in', value: [1, 5] })).toEqual(['a', 'b'])
    expect(await ids({ field: 'score', operator: 'nin', value: [1, 5] })).toEqual(['c', 'd'])
    expect(await ids({ field: 'kind', operator: 'in', value: ['task', null] })).toEqual(['b', 'c'])
    expect(await ids({ field: 'created_at', operator: 'gte', value: '2025-01-01' })).toEqual(['c', 'd'])
    expect(await ids({ field: 'done', operator: 'eq', value: true })).toEqual(['b', 'd'])
    expect(await ids({ field: 'kind', operator: 'icontains', value: 'OT' })).toEqual(['a', 'd'])
  })

  it('compose with AND, OR and NOT, nested', async () => {
    expect(
      await ids({
        AND: [
          { field: 'kind', operator: 'eq', value: 'note' },
          {
            OR: [
              { field: 'tag', operator: 'eq', value: 'work' },
              { NOT: { field: 'done', operator: 'eq', value: true } },
            ],
          },
        ],
      }),
    ).toEqual(['a'])
    expect(await ids({ NOT: { field: 'kind', operator: 'eq', value: 'note' } })).toEqual(['b', 'c'])
    expect(await ids({ NOT: { NOT: { field: 'kind', operator: 'eq', value: 'note' } } })).toEqual(['a', 'd'])
  })

  it('nested paths work dotted or as an explicit list, which also reaches keys containing dots', async () => {
    expect(await ids({ field: 'deep.path', operator: 'eq', value: 'v2' })).toEqual(['d'])
    expect(await ids({ field: ['deep', 'path'], operator: 'in', value: ['v1', 'v2'] })).toEqual(['a', 'd'])
    expect(await ids({ field: ['a.b'], operator: 'eq', value: 'dotted' })).toEqual(['c'])
  })

  it('hostile field names and values stay data: they never reach the SQL text', async () => {
    const hostile = ["'; DROP TABLE t; --", "it's", '$1', 'Ünïcödé ✓', 'x") OR 1=1 --', "meta #>> '{}'"]
    for (const h of hostile) {
      const f = compileFilter({ field: h, operator: 'eq', value: h }, options)
      expect(f.sql).not.toContain(h)
      expect(f.params).toContainEqual([h])
      const g = compileFilter({ field: 'tag', operator: 'in', value: [h] }, options)
      expect(g.sql).not.toContain(h)
    }
    expect(await ids({ field: 'tag', operator: 'eq', value: "'; DROP TABLE t; --" })).toEqual(['c'])
    expect(await ids({ field: "it's", operator: 'eq', value: 'quoted' })).toEqual(['b'])
    expect(await ids({ field: '$1', operator: 'eq', value: 'dollar' })).toEqual(['d'])
    expect(await ids({ field: 'tag', operator: 'eq', value: 'Ünïcödé ✓' })).toEqual(['d'])
    expect(await ids({ field: "'; DROP TABLE t; --", operator: 'eq', value: 'x' })).toEqual([])
    expect(await ids({ field: 'kind', operator: 'contains', value: "%' OR '1'='1" })).toEqual([])
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM t')
    expect(rows[0]?.n).toBe(4)
  })

  it('numbers the parameters after the offset it is given', () => {
    const f = compileFilter(
      {
        AND: [
          { field: 'kind', operator: 'eq', value: 'note' },
          { field: 'tag', operator: 'eq', value: 'w' },
        ],
      },
      { ...options, paramOffset: 7 },
    )
    expect(f.sql).toContain('$8')
    expect(f.sql).toContain('$10')
    expect(f.sql).not.toContain('$7')
    expect(f.sql).not.toContain('$11')
    expect(f.params).toEqual(['note', ['tag'], '"w"'])
  })

  it('refuses malformed expressions with INVALID_FILTER', () => {
    expect(invalid({ field: 'tag', operator: 'like', value: 'x' }).message).toMatch(/filter/)
    invalid({ field: 'tag', operator: 'eq' })
    invalid({ field: '', operator: 'eq', value: 1 })
    invalid({ AND: [] })
    invalid({ AND: {} })
    invalid({ OR: [{ field: 'a', operator: 'eq', value: 1 }], extra: true })
    invalid({ field: 'a', operator: 'eq', value: { nested: 'object' } })
    invalid({ field: 'tag', operator: 'in', value: 'not-an-array' })
    invalid({ field: 'tag', operator: 'eq', value: ['array'] })
    invalid({ field: 'score', operator: 'eq', value: 'not a number' })
    invalid({ field: 'created_at', operator: 'gt', value: 'yesterday-ish' })
    invalid({ field: 'score', operator: 'contains', value: '1' })
    invalid({ field: 'tag', operator: 'gt', value: true })
    invalid('tag = work')
    invalid(null)
    let deep: unknown = { field: 'a', operator: 'eq', value: 1 }
    for (let i = 0; i < 40; i++) deep = { NOT: deep }
    invalid(deep)
  })
})
