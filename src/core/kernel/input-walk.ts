import { MemoryError } from './errors.ts'
import { MAX_INPUT_DEPTH } from './limits.ts'

/** Why Postgres text cannot hold a string with NUL in it. */
export const NUL_PROBLEM = 'contains a NUL character, which cannot be stored'

/** Why Postgres text cannot hold half of a surrogate pair: it would store U+FFFD instead. */
export const SURROGATE_PROBLEM = 'contains an unpaired UTF-16 surrogate (not valid Unicode)'

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

// `isWellFormed` (ES2024) scans without a regex where the runtime has it.
const isWellFormed: (text: string) => boolean =
  typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === 'function'
    ? (text) => (text as unknown as { isWellFormed(): boolean }).isWellFormed()
    : (text) => !LONE_SURROGATE.test(text)

/** Why a string cannot be stored in Postgres text, or undefined when it can. */
export function textProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return NUL_PROBLEM
  if (!isWellFormed(text)) return SURROGATE_PROBLEM
  return undefined
}

interface Frame {
  value: unknown
  key: string | number | null
  parent: Frame | null
  depth: number
}

function pathOf(frame: Frame): (string | number)[] {
  const path: (string | number)[] = []
  for (let f: Frame | null = frame; f && f.key !== null; f = f.parent) path.push(f.key)
  return path.reverse()
}

/**
 * The first part of an input that nothing below may see: arrays and plain objects nested
 * deeper than `MAX_INPUT_DEPTH`, or (unless `text` is false) a string, a key too, that
 * Postgres cannot store. Walked with a stack of its own, so no depth overflows the call stack;
 * other objects (bytes, signals, dates) are not entered, and an object met twice is walked once.
 */
export function inputProblem(value: unknown, { text = true } = {}): { path: (string | number)[]; message: string } | null {
  const seen = new Set<object>()
  const stack: Frame[] = [{ value, key: null, parent: null, depth: 0 }]
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const v = frame.value
    if (typeof v === 'string') {
      if (!text) continue
      const problem = textProblem(v)
      if (problem) return { path: pathOf(frame), message: problem }
      continue
    }
    if (typeof v !== 'object' || v === null || seen.has(v)) continue
    const isArray = Array.isArray(v)
    if (!isArray) {
      const proto = Object.getPrototypeOf(v) as unknown
      if (proto !== Object.prototype && proto !== null) continue
    }
    if (frame.depth >= MAX_INPUT_DEPTH) {
      return { path: pathOf(frame), message: `nested deeper than ${MAX_INPUT_DEPTH} levels` }
    }
    seen.add(v)
    const depth = frame.depth + 1
    // Pushed last to first, so the first bad part in reading order is the one reported.
    if (isArray) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], key: i, parent: frame, depth })
      continue
    }
    const keys = Object.keys(v)
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string
      stack.push({ value: (v as Record<string, unknown>)[key], key, parent: frame, depth })
    }
    if (!text) continue
    for (const key of keys) {
      const problem = textProblem(key)
      if (problem) return { path: [...pathOf(frame), key], message: `key ${problem}` }
    }
  }
  return null
}

/**
 * Refuses, with INVALID_INPUT, arguments nested deeper than `MAX_INPUT_DEPTH`, before the
 * method that takes them looks at them: a deep argument a method checks late (or passes on)
 * could otherwise overflow the call stack.
 */
export function checkArgumentDepth(method: string, args: readonly unknown[]): void {
  for (let i = 0; i < args.length; i++) {
    const problem = inputProblem(args[i], { text: false })
    if (!problem) continue
    const path = problem.path.join('.')
    throw new MemoryError('INVALID_INPUT', `Invalid argument ${i + 1} to ${method}${path ? ` at "${path}"` : ''}: ${problem.message}`, {
      details: { issues: [{ path: [i, ...problem.path].join('.'), message: problem.message }] },
    })
  }
}

/** Refuses a listener that is not a function now, rather than when the first event calls it. */
export function checkListener(listener: unknown, method: string): void {
  if (typeof listener !== 'function') {
    throw new MemoryError('INVALID_INPUT', `${method} takes a function, called with each event; it was given ${listener === null ? 'null' : typeof listener}.`)
  }
}

/**
 * Refuses options that `names` does not list, with INVALID_INPUT naming them: a misspelt
 * option (`dataDirr`) would otherwise be ignored without a word.
 */
export function checkOptionNames(options: unknown, names: readonly string[], what: string): void {
  if (options === undefined) return
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new MemoryError('INVALID_INPUT', `${what} takes an options object.`)
  }
  const unknown = Object.keys(options).filter((key) => !names.includes(key))
  if (unknown.length === 0) return
  const listed = unknown.map((key) => `"${key}"`).join(', ')
  throw new MemoryError('INVALID_INPUT', `${what} has no option ${listed}. Its options are: ${names.join(', ')}.`, {
    details: { unknown },
  })
}

/**
 * `true` when `Keys` names every key of `T`, else `false`: a list of option names kept beside
 * its interface, typed `true` with this, cannot fall behind the interface.
 */
export type ListsEveryKey<T, Keys extends readonly PropertyKey[]> = [Exclude<keyof T, Keys[number]>] extends [never]
  ? true
  : false
