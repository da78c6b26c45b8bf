import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { Memory } from '../../src/adapters/mem0/facade.ts'
import { openSnapshot } from '../../src/core/portable/snapshot.ts'
import type { NodeMemory } from '../../src/node/index.ts'
import { apiMethods, deepArguments, garbageArguments } from '../support/api-methods.ts'
import { openTestMemory } from '../support/memory.ts'

let memory: NodeMemory

beforeAll(async () => {
  memory = await openTestMemory({ workspace: { mode: 'local', root: '/repo' } })
  await memory.recordTurn({ conversationId: 'c0', user: 'hi', agent: 'hello' })
})
afterAll(() => memory.close())

const GARBAGE = garbageArguments()

function describeArgs(args: unknown[]): string {
  return args
    .map((a) => {
      if (typeof a === 'symbol' || typeof a === 'function' || typeof a === 'bigint') return typeof a
      try {
        return JSON.stringify(a) ?? String(a)
      } catch {
        return 'circular or too deep to print'
      }
    })
    .join(', ')
}

/**
 * Calls `call` with every argument set of GARBAGE (or of `argumentSets`); what it throws that is not a refusal (a
 * MemoryError other than INTERNAL) goes into `wrong`. True when every call was refused.
 */
async function sweep(name: string, call: (...args: unknown[]) => unknown, wrong: string[]): Promise<boolean> {
  return sweepWith(GARBAGE, name, call, wrong)
}

/** `sweep` over the given argument sets. */
async function sweepWith(
  argumentSets: unknown[][],
  name: string,
  call: (...args: unknown[]) => unknown,
  wrong: string[],
): Promise<boolean> {
  let refusedAll = true
  for (const args of argumentSets) {
    try {
      await call(...args)
      refusedAll = false
    } catch (error) {
      if (!MemoryError.is(error)) wrong.push(`${name}(${describeArgs(args)}) threw ${String(error)}`)
      else if (error.code === 'INTERNAL') wrong.push(`${name}(${describeArgs(args)}) failed inside: ${error.message}`)
    }
  }
  return refusedAll
}

describe('the whole API against garbage', () => {
  it('answers every bad argument of every public method with a MemoryError, and a method that refused them all wrote nothing', async () => {
    const all = apiMethods(memory)
    // The walk finds the namespaces' methods, not only the top level.
    expect(all.length).toBeGreaterThan(70)
    expect(all.map((p) => p.join('.'))).toEqual(expect.arrayContaining(['recordTurn', 'memories.update', 'graph.neighbors', 'kv.put', 'vault.setKey']))
    const wrong: string[] = []
    for (const path of all) {
      const self = path.slice(0, -1).reduce<Record<string, unknown>>((o, k) => o[k] as Record<string, unknown>, memory as never)
      const fn = self[path.at(-1) as string] as (...args: unknown[]) => unknown
      const name = path.join('.')
      const before = (await memory.stats()).counts
      const refusedAll = await sweep(name, (...args) => fn.apply(self, args), wrong)
      if (refusedAll) {
        const after = (await memory.stats()).counts
        if (JSON.stringify(after) !== JSON.stringify(before)) wrong.push(`${name} refused every call but changed the counts`)
      }
    }
    expect(wrong).toEqual([])
  })

  it('answers every bad argument of the mem0-compatible facade with a MemoryError', async () => {
    const facade = new Memory(memory)
    const names = Object.getOwnPropertyNames(Memory.prototype).filter((n) => n !== 'constructor' && n !== 'reset')
    expect(names).toEqual(expect.arrayContaining(['add', 'search', 'get', 'getAll', 'update', 'delete', 'deleteAll', 'history']))
    const wrong: string[] = []
    for (const name of names) {
      const fn = (facade as unknown as Record<string, (...args: unknown[]) => unknown>)[name] as (...args: unknown[]) => unknown
      await sweep(name, (...args) => fn.apply(facade, args), wrong)
    }
    expect(wrong).toEqual([])
  })

  it('answers every bad argument of a snapshot, and of opening one, with a MemoryError', async () => {
    const snapshot = await openSnapshot(await memory.exportFile())
    const all = apiMethods(snapshot)
    expect(all.map((p) => p.join('.'))).toEqual(expect.arrayContaining(['rows', 'graph.neighbors', 'kv.get', 'events.get']))
    const wrong: string[] = []
    expect(await sweep('openSnapshot', (...args) => openSnapshot(...(args as Parameters<typeof openSnapshot>)), wrong)).toBe(true)
    for (const path of all) {
      const self = path.slice(0, -1).reduce<Record<string, unknown>>((o, k) => o[k] as Record<string, unknown>, snapshot as never)
      const fn = self[path.at(-1) as string] as (...args: unknown[]) => unknown
      await sweep(path.join('.'), (...args) => fn.apply(self, args), wrong)
    }
    expect(wrong).toEqual([])
  })

  it('refuses arguments nested 5,000 and 100,000 deep with INVALID_INPUT in every method, and the facade and a snapshot never fail inside on them', async () => {
    const deep = deepArguments()
    const methodsOf = (api: object, prefix: string) =>
      apiMethods(api).map((path): [string, (...args: unknown[]) => unknown] => {
        const self = path.slice(0, -1).reduce<Record<string, unknown>>((o, k) => o[k] as Record<string, unknown>, api as never)
        const fn = self[path.at(-1) as string] as (...args: unknown[]) => unknown
        return [prefix + path.join('.'), (...args) => fn.apply(self, args)]
      })
    const before = (await memory.stats()).counts
    const wrong: string[] = []
    // The memory itself: every method refuses every deep argument, whatever its place.
    for (const [name, call] of methodsOf(memory, '')) {
      for (const [i, args] of deep.entries()) {
        try {
          await call(...args)
          wrong.push(`${name} #${i} was accepted`)
        } catch (error) {
          if (!MemoryError.is(error) || error.code !== 'INVALID_INPUT') wrong.push(`${name} #${i} threw ${String(error).slice(0, 200)}`)
        }
      }
    }
    // The facade and a snapshot may ignore an argument they do not take, but never fail inside.
    const facade = new Memory(memory)
    const others: [string, (...args: unknown[]) => unknown][] = [
      ...methodsOf(await openSnapshot(await memory.exportFile()), 'snapshot.'),
      ...Object.getOwnPropertyNames(Memory.prototype)
        .filter((n) => n !== 'constructor' && n !== 'reset')
        .map((n): [string, (...args: unknown[]) => unknown] => {
          const fn = (facade as unknown as Record<string, (...args: unknown[]) => unknown>)[n] as (...args: unknown[]) => unknown
          return [`mem0.${n}`, (...args) => fn.apply(facade, args)]
        }),
      ['openSnapshot', (...args) => openSnapshot(...(args as Parameters<typeof openSnapshot>))],
    ]
    for (const [name, call] of others) {
      await sweepWith(deep, name, call, wrong)
    }
    expect(wrong).toEqual([])
    expect((await memory.stats()).counts).toEqual(before)
  })
})
