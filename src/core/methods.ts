import { type Api, mapFunctions, memoryErrors } from './db/errors.ts'
import type { Vault } from './kernel/engine-context.ts'
import { type Telemetry, type Timing, timedCall } from './kernel/telemetry.ts'
import { openedCall } from './privacy/vault.ts'
import type { InTurn } from './kernel/write-turns.ts'

type Call = (...args: unknown[]) => unknown

/** What the engine adds around its public methods, by dotted path (`memories.update`). */
export interface MethodRules {
  /** Writes, with the rows each changes: after one succeeds, background work is told. */
  writes: Readonly<Record<string, number>>
  /** Calls reported to telemetry listeners. */
  timings: Readonly<Record<string, Timing<never>>>
  /** Listeners: they return at once, and their errors are thrown as they are. */
  plain: readonly string[]
  /** Calls not noted as running: a change list reads the clock's cut itself; a Cypher query writes nothing. */
  untracked: readonly string[]
  /**
   * Calls that neither write nor cut the clock, so they need no write turn when several
   * processes write one database (listeners in `plain` need none either). Any other call takes
   * one, so a read left off this list only waits for a turn.
   */
  reads: readonly string[]
}

export interface MethodHooks {
  /** Called after a write succeeds, with the rows it changed. */
  wrote: (rows: number) => void
  telemetry: Telemetry
  /** Notes a call as running; returns its end. */
  begin: () => () => void
  vault: () => Vault
  /** Runs a call in this process's turn to write, where several processes write the database. */
  inTurn?: InTurn
}

/**
 * The public API: each method of `methods` wrapped once, in this order from the inside out.
 * A write tells background work it wrote; errors become `MemoryError`s; timed calls report to
 * telemetry; the call is noted as running until it settles; it waits for a write turn where
 * several processes write the database; what it returns is opened by the vault. A rule naming
 * a method that does not exist is a bug, and throws at once.
 */
export function wrapMethods<T extends Api>(methods: T, rules: MethodRules, hooks: MethodHooks): T {
  const seen = new Set<string>()
  const api = mapFunctions(methods, (call, key, path) => {
    seen.add(path)
    let fn: Call = call
    const rows = rules.writes[path]
    if (rows !== undefined) fn = afterSuccess(fn, () => hooks.wrote(rows))
    if (!rules.plain.includes(path)) fn = memoryErrors(fn, key)
    const timing = rules.timings[path]
    if (timing !== undefined) fn = timedCall(fn, path, timing, hooks.telemetry)
    if (!rules.untracked.includes(path)) fn = tracked(fn, hooks.begin)
    if (hooks.inTurn && !rules.reads.includes(path) && !rules.plain.includes(path)) fn = inTurn(fn, hooks.inTurn)
    return openedCall(fn, hooks.vault)
  })
  const named = [...Object.keys(rules.writes), ...Object.keys(rules.timings), ...rules.plain, ...rules.untracked, ...rules.reads]
  const missing = named.filter((path) => !seen.has(path))
  if (missing.length > 0) throw new Error(`engine: no method ${missing.join(', ')}`)
  return api
}

/** `call`, then `after` once its promise resolves. */
function afterSuccess(call: Call, after: () => void): Call {
  return async (...args: unknown[]) => {
    const result = await call(...args)
    after()
    return result
  }
}

/** `call` noted by `begin` (which returns its end) until it returns or its promise settles. */
function tracked(call: Call, begin: () => () => void): Call {
  return (...args: unknown[]) => {
    const end = begin()
    let result: unknown
    try {
      result = call(...args)
    } catch (error) {
      end()
      throw error
    }
    if (result instanceof Promise) return result.finally(end)
    end()
    return result
  }
}

/** `call` run in a write turn (see `writeTurns`). */
function inTurn(call: Call, turn: InTurn): Call {
  return (...args: unknown[]) => turn(async () => call(...args))
}
