import type { RecordTurnInput } from '../turns/turns.ts'
import { parseInput, z } from '../kernel/validate.ts'

/** Turns `warmUp()` rehearses by default. */
export const DEFAULT_WARM_UP_TURNS = 20
/** The most it rehearses in one call. */
export const MAX_WARM_UP_TURNS = 200

export const warmUpOptions = z
  .object({
    turns: z.number().int().min(0).max(MAX_WARM_UP_TURNS).default(DEFAULT_WARM_UP_TURNS),
    /** Stops it between two rehearsals. */
    signal: z.instanceof(AbortSignal).optional(),
    /** Awaited before each rehearsal: the worker waits there for the database and the model to be idle. */
    beforeEach: z.custom<() => Promise<void>>((v) => typeof v === 'function', 'a function').optional(),
  })
  .strict()

export function parseWarmUp(options: unknown): z.output<typeof warmUpOptions> {
  return parseInput(warmUpOptions, options ?? {}, 'warm-up options')
}

/**
 * The `n`th rehearsal: a turn shaped like an agent's (a request, a reply, a file read and
 * written, a test run with its output), with words that vary from one to the next so that
 * the keyword statistics and indexes see new terms as they do in use.
 */
export function rehearsalTurn(n: number): RecordTurnInput {
  const file = `https://engram.invalid/warm-up/module${n % 7}.ts`
  const body = (rev: number) => `export const value${n} = ${rev} // rehearsal ${n}\n`.repeat(24)
  return {
    conversationId: 'engram-warm-up',
    user: `Rehearsal ${n}: please look at module${n % 7} and fix the parser${n} test that fails on input ${n * 7}`,
    agent: `I read module${n % 7}, changed parser${n} to accept input ${n * 7} and ran the tests: ${n % 50} passed.`,
    procedures: [
      { tool: 'read_file', args: { url: file }, document: { url: file, content: body(n), effect: 'read' } },
      { tool: 'edit_file', args: { url: file, find: `${n}`, replace: `${n + 1}` }, document: { url: file, content: body(n + 1), effect: 'write' } },
      { tool: 'run_tests', args: { filter: `parser${n}` }, output: `PASS module${n % 7}.test.ts (${n % 50} tests)\n` },
    ],
  }
}
