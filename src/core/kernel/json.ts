import { MAX_JSON_DEPTH } from './limits.ts'
import { textProblem } from './input-walk.ts'
import { z } from './validate.ts'

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }
export type JsonObject = { [key: string]: JsonValue }

/**
 * Why a value is not plain JSON (functions, BigInt, NaN, class instances, cycles, too deep),
 * with the path to the offending part, or undefined when it is.
 */
export function jsonProblem(value: unknown): { path: string; message: string } | undefined {
  const ancestors: object[] = []
  const walk = (v: unknown, path: string, depth: number): { path: string; message: string } | undefined => {
    if (v === null || typeof v === 'boolean') return undefined
    if (typeof v === 'string') {
      const problem = textProblem(v)
      return problem ? { path, message: `string ${problem}` } : undefined
    }
    if (typeof v === 'number') {
      return Number.isFinite(v) ? undefined : { path, message: `${v} is not a JSON number` }
    }
    if (typeof v !== 'object') return { path, message: `a ${typeof v} is not JSON` }
    if (depth >= MAX_JSON_DEPTH) return { path, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }
    if (ancestors.includes(v)) return { path, message: 'circular reference' }
    ancestors.push(v)
    try {
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          if (v[i] === undefined) return { path: `${path}[${i}]`, message: 'undefined is not JSON' }
          const p = walk(v[i], `${path}[${i}]`, depth + 1)
          if (p) return p
        }
        return undefined
      }
      const proto: unknown = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) {
        const name = (v as { constructor?: { name?: unknown } }).constructor?.name
        return { path, message: `a ${typeof name === 'string' ? name : 'class'} instance is not plain JSON` }
      }
      for (const [k, child] of Object.entries(v)) {
        const problem = textProblem(k)
        if (problem) return { path: `${path}.${k}`, message: `key ${problem}` }
        if (child === undefined) continue // dropped, as JSON.stringify does
        const p = walk(child, `${path}.${k}`, depth + 1)
        if (p) return p
      }
      return undefined
    } finally {
      ancestors.pop()
    }
  }
  return walk(value, '$', 0)
}

function checkObject(value: unknown, ctx: z.RefinementCtx): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    ctx.addIssue({ code: 'custom', message: 'expected a JSON object' })
    return
  }
  const problem = jsonProblem(value)
  if (problem) ctx.addIssue({ code: 'custom', message: `not JSON at ${problem.path}: ${problem.message}` })
}

/** A zod schema for a JSON object (the shape of event content and tool arguments). */
export const jsonObject = z.custom<JsonObject>().superRefine(checkObject)

/** `jsonObject` typed as callers write such objects (payloads, metadata): the same check. */
export const jsonRecord = z.custom<Record<string, unknown>>().superRefine(checkObject)

/** A zod schema for any JSON value (a policy entry's payload): undefined and what JSON cannot hold are refused. */
export const jsonValue = z.custom<JsonValue>().superRefine((value, ctx) => {
  if (value === undefined) {
    ctx.addIssue({ code: 'custom', message: 'a value is required' })
    return
  }
  const problem = jsonProblem(value)
  if (problem) ctx.addIssue({ code: 'custom', message: `not JSON at ${problem.path}: ${problem.message}` })
})

/** A string Postgres can store (no NUL, well-formed Unicode). */
export const storableText = z.string().superRefine((value, ctx) => {
  const problem = textProblem(value)
  if (problem) ctx.addIssue({ code: 'custom', message: `text ${problem}` })
})

/** Drops undefined properties so the value is what will actually be stored. */
export function toStoredJson<T extends JsonValue>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T
}

const utf8 = new TextEncoder()

/** Postgres' order of a jsonb object's keys: the shorter first (in UTF-8 bytes), then bytewise. */
export function jsonbKeyOrder(a: string, b: string): number {
  const x = utf8.encode(a)
  const y = utf8.encode(b)
  if (x.length !== y.length) return x.length - y.length
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number)
  return 0
}

/**
 * `value` with every object's keys in the order a jsonb value keeps them, so what is derived
 * from it (an event's chunk text) is the same before it is stored and after it is read back.
 */
export function inJsonbOrder(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(inJsonbOrder)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.keys(value)
      .sort(jsonbKeyOrder)
      .map((key) => [key, inJsonbOrder(value[key] as JsonValue)]),
  )
}
