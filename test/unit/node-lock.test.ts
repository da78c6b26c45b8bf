import { mkdtemp, rm, stat, utimes } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openMemory } from '../../src/node/index.ts'
import { STALE_LOCK_MS } from '../../src/node/lock.ts'
import { codeOf } from '../support/errors.ts'
import { templateBlob } from '../support/memory.ts'

const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) {
    await rm(dir, { recursive: true, force: true })
    await rm(`${dir}.lock`, { recursive: true, force: true })
  }
})

async function folder(): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), 'engram-lock-')), 'memory')
  dirs.push(dir)
  return dir
}

describe('a data folder is opened once at a time', () => {
  it('a second open of the same folder is refused until the first is closed, and then sees its writes', async () => {
    const dataDir = await folder()
    const open = () => openMemory({ dataDir, cacheMB: 16 })
    const first = await openMemory({ dataDir, loadDataDir: await templateBlob(), cacheMB: 16 })
    await first.remember({ content: 'Written by the first open', category: 'fact' })
    expect(await codeOf(open())).toBe('LOCKED_BY_OTHER_PROCESS')
    // The same folder named another way is the same lock.
    expect(await codeOf(openMemory({ dataDir: `${dataDir}/../memory`, cacheMB: 16 }))).toBe('LOCKED_BY_OTHER_PROCESS')
    expect((await stat(`${dataDir}.lock`)).isDirectory()).toBe(true)
    await first.close()
    await first.close() // closing twice is harmless
    await expect(stat(`${dataDir}.lock`)).rejects.toMatchObject({ code: 'ENOENT' })

    const second = await open()
    expect((await second.memories.list()).map((m) => m.content)).toEqual(['Written by the first open'])
    await second.close()
  })

  it('the lock of a process that died is taken over once it is stale', async () => {
    const dataDir = await folder()
    const first = await openMemory({ dataDir, loadDataDir: await templateBlob(), cacheMB: 16 })
    await first.close()
    // What a process killed while holding the memory leaves: the lock folder, no longer renewed.
    const { mkdir } = await import('node:fs/promises')
    await mkdir(`${dataDir}.lock`)
    expect(await codeOf(openMemory({ dataDir, cacheMB: 16 }))).toBe('LOCKED_BY_OTHER_PROCESS')
    const past = new Date(Date.now() - STALE_LOCK_MS - 5_000)
    await utimes(`${dataDir}.lock`, past, past)
    const taken = await openMemory({ dataDir, cacheMB: 16 })
    expect(await taken.ping()).toMatchObject({ schemaVersion: expect.any(Number) })
    await taken.close()
  })
})
