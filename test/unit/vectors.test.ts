import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Db } from '../../src/core/kernel/db.ts'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import {
  encodeVectorBinary,
  lookupVectorOid,
  parseVectorText,
  vectorQueryOptions,
} from '../../src/embed/vectors.ts'
import { openTestDb } from '../support/memory.ts'

/** A deterministic 384-d vector with awkward float32 values (tiny, negative, non-terminating). */
function sampleVector(seed: number): Float32Array {
  return Float32Array.from({ length: 384 }, (_, i) => Math.sin(seed * 997 + i * 31) / (1 + (i % 7)) + (i === 5 ? 1e-30 : 0))
}

describe('pgvector encoding', () => {
  it('writes the vector_recv layout: int16 dims, int16 zero, big-endian float32 components', () => {
    expect(Array.from(encodeVectorBinary(Float32Array.of(1, -2.5)))).toEqual([
      0x00, 0x02, 0x00, 0x00, 0x3f, 0x80, 0x00, 0x00, 0xc0, 0x20, 0x00, 0x00,
    ])
    expect(encodeVectorBinary([0.5, 0.25, 0]).byteLength).toBe(16)
  })

  it('rejects empty vectors and non-finite components', () => {
    expect(() => encodeVectorBinary([])).toThrow(MemoryError)
    expect(() => encodeVectorBinary([1, Number.NaN])).toThrow(/component 1/)
    expect(() => encodeVectorBinary([Number.POSITIVE_INFINITY])).toThrow(MemoryError)
  })

  it('parses the text form PGlite returns', () => {
    expect(Array.from(parseVectorText('[1,2,3]'))).toEqual([1, 2, 3])
    expect(Array.from(parseVectorText(' [-0.5, 1e-3] '))).toEqual([-0.5, Math.fround(1e-3)])
    expect(parseVectorText('[]')).toHaveLength(0)
    expect(() => parseVectorText('1,2')).toThrow(MemoryError)
    expect(() => parseVectorText('[1,,2]')).toThrow(MemoryError)
    expect(() => parseVectorText('[1,x]')).toThrow(MemoryError)
  })
})

describe('vectors through PGlite', () => {
  let pg: Awaited<ReturnType<typeof openTestDb>> | undefined
  // Through the engine's Db interface, whose serializers may return bytes.
  let db: Db
  let oid: number

  beforeAll(async () => {
    pg = await openTestDb()
    db = pg
    oid = await lookupVectorOid(db)
    await db.exec('CREATE TABLE vector_roundtrip (id int PRIMARY KEY, embedding vector(384))')
  })

  afterAll(async () => {
    await pg?.close()
  })

  it('a vector sent as a binary parameter in a transaction reads back bit for bit', async () => {
    const options = vectorQueryOptions(oid)
    const vectors = [sampleVector(1), sampleVector(2), sampleVector(3)]
    await db.transaction(async (tx) => {
      for (const [id, vector] of vectors.entries()) {
        await tx.query('INSERT INTO vector_roundtrip (id, embedding) VALUES ($1, $2)', [id, vector], options)
      }
    })
    const { rows } = await db.query<{ id: number; embedding: Float32Array }>(
      'SELECT id, embedding FROM vector_roundtrip ORDER BY id',
      [],
      options,
    )
    expect(rows.map((r) => r.id)).toEqual([0, 1, 2])
    for (const [i, row] of rows.entries()) {
      expect(row.embedding).toBeInstanceOf(Float32Array)
      expect(Array.from(row.embedding)).toEqual(Array.from(vectors[i]!))
    }
  })

  it('binary, number[] and text parameters mean the same vector to pgvector', async () => {
    const options = vectorQueryOptions(oid)
    const vector = sampleVector(1)
    const text = `[${Array.from(vector).join(',')}]`
    const { rows } = await db.query<{ id: number; same_as_text: boolean; distance: number }>(
      `SELECT id, embedding = $2::vector AS same_as_text, embedding <=> $3 AS distance
         FROM vector_roundtrip
        WHERE embedding = $1`,
      [vector, text, Array.from(vector)],
      options,
    )
    expect(rows).toEqual([{ id: 0, same_as_text: true, distance: 0 }])
  })

  it('a malformed vector parameter fails before anything is written', async () => {
    const options = vectorQueryOptions(oid)
    const bad = sampleVector(9)
    bad[10] = Number.NaN
    const error = await db
      .transaction(async (tx) => {
        await tx.query('INSERT INTO vector_roundtrip (id, embedding) VALUES ($1, $2)', [10, sampleVector(4)], options)
        await tx.query('INSERT INTO vector_roundtrip (id, embedding) VALUES ($1, $2)', [11, bad], options)
      })
      .catch((e: unknown) => e)
    expect(MemoryError.is(error, 'INVALID_INPUT')).toBe(true)
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM vector_roundtrip')
    expect(rows[0]!.n).toBe(3)
  })
})
