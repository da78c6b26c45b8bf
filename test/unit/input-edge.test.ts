import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectMemory } from '../../src/browser/client/create-memory.ts'
import { Memory } from '../../src/adapters/mem0/facade.ts'
import { openMemory, type NodeMemory } from '../../src/node/index.ts'
import { openTestMemory } from '../support/memory.ts'

let memory: NodeMemory

beforeAll(async () => {
  memory = await openTestMemory()
})
afterAll(() => memory.close())

/** Half of a surrogate pair, high or low, at a random place in otherwise plain text. */
function withLoneSurrogate(): string {
  const half = String.fromCharCode((Math.random() < 0.5 ? 0xd800 : 0xdc00) + Math.floor(Math.random() * 0x400))
  const text = `note ${Math.random().toString(36).slice(2)}`
  const at = Math.floor(Math.random() * (text.length + 1))
  return text.slice(0, at) + half + text.slice(at)
}

describe('half a surrogate pair', () => {
  it('is refused by remember, memories.update, export and import passphrases and a vault key, and nothing changes', async () => {
    const kept = await memory.remember({ content: 'Ann likes tea', category: 'preference', userId: 'ann' })
    const before = (await memory.stats()).counts
    const bad = withLoneSurrogate()
    const calls: [string, () => Promise<unknown>][] = [
      ['remember', () => memory.remember({ content: bad, category: 'fact', userId: 'ann' })],
      ['memories.update', () => memory.memories.update(kept.id, { content: bad })],
      ['exportFile', () => memory.exportFile({ passphrase: bad })],
      ['importFile', () => memory.importFile(new Blob(['not read']), { passphrase: bad })],
      ['vault.setKey', () => memory.vault.setKey({ passphrase: `${bad} long enough to pass` })],
      ['search', () => memory.search(bad)],
    ]
    for (const [name, call] of calls) {
      await expect(call(), name).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('surrogate') })
    }
    expect((await memory.stats()).counts).toEqual(before)
    expect((await memory.memories.get(kept.id))?.content).toBe('Ann likes tea')
    expect(await memory.vault.status()).toBe('none')
  })

  it('is told from a whole pair, which is stored as given', async () => {
    const { id } = await memory.remember({ content: 'Ann likes 🍵 tea', category: 'preference', userId: 'ann' })
    expect((await memory.memories.get(id))?.content).toBe('Ann likes 🍵 tea')
  })
})

describe('listeners', () => {
  it('must be functions: telemetry.subscribe, onError and onIndexProgress refuse anything else at once', () => {
    for (const bad of [42, null, {}, 'f', undefined]) {
      expect(() => memory.telemetry.subscribe(bad as never)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }))
      expect(() => memory.onError(bad as never)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }))
      expect(() => memory.onIndexProgress(bad as never)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }))
    }
    const stop = memory.onError(() => {})
    expect(typeof stop).toBe('function')
    stop()
  })
})

describe('the mem0 facade', () => {
  it('refuses to be made without a memory, saying what to pass', () => {
    for (const bad of [undefined, null, 42, {}, { remember: () => {} }]) {
      expect(() => new Memory(bad as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT', message: expect.stringContaining('openMemory()') }),
      )
    }
    expect(() => new Memory(memory, null as never)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }))
    expect(new Memory(memory)).toBeInstanceOf(Memory)
  })
})

describe('unknown options', () => {
  it('are refused by openMemory, naming them, before anything opens', async () => {
    const dataDir = `./never-made-${Math.random().toString(36).slice(2)}`
    await expect(openMemory({ dataDirr: dataDir } as never)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('"dataDirr"'),
      details: { unknown: ['dataDirr'] },
    })
    await expect(openMemory({ dataDir, postgress: 'postgres://x' } as never)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      details: { unknown: ['postgress'] },
    })
    // Two places for one memory: a folder and a server.
    await expect(openMemory({ dataDir, postgres: 'postgres://x' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('"dataDir"'),
    })
    await expect(openMemory(42 as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    const { existsSync } = await import('node:fs')
    expect(existsSync(dataDir)).toBe(false)
  })

  it('are refused by the browser client as by openMemory', () => {
    expect(() => connectMemory({ nmae: 'x' } as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', details: { unknown: ['nmae'] } }),
    )
  })
})

describe('the browser client', () => {
  it('refuses arguments too deep to clone for the worker with INVALID_INPUT, not a stack overflow', async () => {
    // A worker that never answers: the refusal comes before anything is sent.
    const { port1, port2 } = new MessageChannel()
    const worker = Object.assign(port1, { terminate: () => port1.close() }) as unknown as Worker
    const client = connectMemory({ worker, bootTimeoutMs: Infinity })
    let deep: unknown = 'x'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    await expect(client.search('x', deep as never)).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('deeper') })
    await expect(client.memories.update('m', deep as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    port1.close()
    port2.close()
  })
})
