import { MemoryError } from '../core/kernel/errors.ts'
import type { QueryOptions, Queryable } from '../core/kernel/db.ts'

/**
 * pgvector's binary wire format (`vector_recv`): int16 dimensions, int16 unused (0), then
 * each component as a big-endian float32. Sending vectors this way skips parsing their text
 * form inside the database, which dominates the cost of inserting them.
 *
 * @example
 * encodeVectorBinary(Float32Array.of(1, 2, 3)).byteLength // 16
 */
export function encodeVectorBinary(vector: ArrayLike<number>): Uint8Array {
  const dims = vector.length
  if (dims < 1 || dims > 16000) {
    throw new MemoryError('INVALID_INPUT', `a vector needs 1 to 16000 dimensions, got ${dims}`)
  }
  const bytes = new Uint8Array(4 + 4 * dims)
  const view = new DataView(bytes.buffer)
  view.setInt16(0, dims)
  view.setInt16(2, 0)
  for (let i = 0; i < dims; i++) {
    const value = vector[i]!
    if (!Number.isFinite(value)) {
      throw new MemoryError('INVALID_INPUT', `vector component ${i} is ${value}; pgvector accepts finite numbers only`)
    }
    view.setFloat32(4 + 4 * i, value)
  }
  return bytes
}

/**
 * Parses pgvector's text output (`[1,2.5,-3]`), the form PGlite returns vectors in.
 *
 * @example
 * parseVectorText('[1,2,3]') // Float32Array [1, 2, 3]
 */
export function parseVectorText(text: string): Float32Array {
  const trimmed = text.trim()
  if (!trimmed.startsWith('[') || !trimmed.endsWith(']')) {
    throw new MemoryError('INVALID_INPUT', `not a vector literal: ${trimmed.slice(0, 40)}`)
  }
  const body = trimmed.slice(1, -1).trim()
  if (body === '') return new Float32Array(0)
  const parts = body.split(',')
  const vector = new Float32Array(parts.length)
  for (let i = 0; i < parts.length; i++) {
    const value = Number(parts[i])
    if (!Number.isFinite(value) || parts[i]!.trim() === '') {
      throw new MemoryError('INVALID_INPUT', `vector component ${i} is not a number: ${parts[i]}`)
    }
    vector[i] = value
  }
  return vector
}

/** The `vector` type's oid; it differs per database, so look it up once after migrating. */
export async function lookupVectorOid(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ oid: number | string | null }>(
    `SELECT to_regtype('vector')::oid AS oid`,
  )
  const oid = Number(rows[0]?.oid ?? 0)
  if (!oid) throw new MemoryError('INTERNAL', 'the vector type is missing: the pgvector extension is not installed')
  return oid
}

/**
 * Query options that send `Float32Array`/`number[]` parameters of type `vector` in binary
 * and read `vector` columns back as `Float32Array`. Strings pass through as vector literals.
 *
 * @example
 * const vectorOptions = vectorQueryOptions(await lookupVectorOid(db))
 * await tx.query('UPDATE chunks SET embedding = $1 WHERE id = $2', [vector, id], vectorOptions)
 */
export function vectorQueryOptions(oid: number): Required<Pick<QueryOptions, 'serializers' | 'parsers'>> {
  return {
    serializers: { [oid]: serializeVector },
    parsers: { [oid]: (text: string) => parseVectorText(text) },
  }
}

function serializeVector(value: unknown): string | Uint8Array {
  if (typeof value === 'string') return value
  if (value instanceof Float32Array || value instanceof Float64Array || Array.isArray(value)) {
    return encodeVectorBinary(value as ArrayLike<number>)
  }
  throw new MemoryError('INVALID_INPUT', 'a vector parameter must be a Float32Array, a number[] or a vector literal')
}
