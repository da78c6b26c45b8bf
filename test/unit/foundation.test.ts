import { describe, expect, it } from 'vitest'
import { migrate, SCHEMA_VERSION } from '../../src/core/schema/migrations.ts'
import { openTestDb, openTestMemory } from '../support/memory.ts'

describe('foundation', () => {
  it('opens a migrated memory with pgvector and answers ping', async () => {
    await using memory = await openTestMemory()
    const ping = await memory.ping()
    expect(ping.schemaVersion).toBe(SCHEMA_VERSION)
    expect(ping.postgres).toMatch(/^1[5-9]/)
    expect(ping.vector).toMatch(/^0\.\d+\.\d+$/)
  })

  it('migrate is idempotent', async () => {
    const db = await openTestDb()
    expect(await migrate(db)).toBe(SCHEMA_VERSION)
    expect(await migrate(db)).toBe(SCHEMA_VERSION)
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations')
    expect(rows[0]?.n).toBe(SCHEMA_VERSION)
    await db.close()
  })

  it('cosine distance works in the template', async () => {
    const db = await openTestDb()
    const { rows } = await db.query<{ d: number }>(`SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector AS d`)
    expect(rows[0]?.d).toBeCloseTo(1, 6)
    await db.close()
  })
})
