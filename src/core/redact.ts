/** One span of text the redaction layer replaced, by kind (e.g. 'api_key') and offsets. */
import type { JsonValue } from './json.ts'

export interface RedactionFinding {
  kind: string
  start: number
  end: number
}

export interface RedactionResult {
  text: string
  findings: RedactionFinding[]
}

/**
 * The single point every text passes through before it is stored (event content, chunks,
 * tool excerpts, artifacts, document content). It returns the text to store and what it
 * replaced. Today it stores text unchanged; secret detection plugs in here.
 *
 * @example
 * redact('hello').text // → 'hello'
 */
export function redact(text: string): RedactionResult {
  return { text, findings: [] }
}

/**
 * Redacts every string value of a JSON value (keys are left alone) and counts what was
 * replaced.
 *
 * @example
 * redactJson({ args: { token: 'abc' } }).value // → the same shape, strings redacted
 */
export function redactJson<T extends JsonValue>(value: T): { value: T; findings: number } {
  let findings = 0
  const walk = (v: JsonValue): JsonValue => {
    if (typeof v === 'string') {
      const r = redact(v)
      findings += r.findings.length
      return r.text
    }
    if (Array.isArray(v)) return v.map(walk)
    if (v !== null && typeof v === 'object') {
      const out: { [key: string]: JsonValue } = {}
      for (const [k, child] of Object.entries(v)) out[k] = walk(child)
      return out
    }
    return v
  }
  return { value: walk(value) as T, findings }
}
