import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, inject, it } from 'vitest'
import { openMemory } from '../../src/node/index.ts'
import { lockDataDir } from '../../src/node/lock.ts'
import { codeOf } from '../support/errors.ts'
import { startHolder } from '../support/holder.ts'
import { templateBlob } from '../support/memory.ts'

const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(join(dir, '..'), { recursive: true, force: true })
})

async function folder(): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), 'engram-lock-')), 'memory')
  dirs.push(dir)
  return dir
}

/** A lock file as another process would leave it. */
const lockOf = (pid: number, more: { start?: string; host?: string; boot?: string } = {}) =>
  JSON.stringify({ pid, ...more, token: Math.random().toString(36).slice(2) })

/** The id of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
  await new Promise((resolve) => child.on('exit', resolve))
  return child.pid as number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a data folder is opened once at a time', () => {
  it('a second open of the same folder is refused until the first is closed, and then sees its writes', async () => {
    const dataDir = await folder()
    const open = () => openMemory({ dataDir, cacheMB: 4 })
    const first = await openMemory({ dataDir, loadDataDir: await templateBlob(), cacheMB: 4 })
    await first.remember({ content: 'Written by the first open', category: 'fact' })
    expect(await codeOf(open())).toBe('LOCKED_BY_OTHER_PROCESS')
    // The same folder named another way is the same lock.
    expect(await codeOf(openMemory({ dataDir: `${dataDir}/../memory`, cacheMB: 4 }))).toBe('LOCKED_BY_OTHER_PROCESS')
    expect((await stat(`${dataDir}.lock`)).isFile()).toBe(true)
    await first.close()
    await first.close() // closing twice is harmless
    await expect(stat(`${dataDir}.lock`)).rejects.toMatchObject({ code: 'ENOENT' })

    const second = await open()
    expect((await second.memories.list()).map((m) => m.content)).toEqual(['Written by the first open'])
    await second.close()
  })

  it('the lock of a process that died, or of a process id now reused, is taken over at once', async () => {
    const dataDir = await folder()
    const first = await openMemory({ dataDir, loadDataDir: await templateBlob(), cacheMB: 4 })
    await first.close()
    const lock = `${dataDir}.lock`
    // The lock on its own: the database behind it is opened once, below.
    const takeOver = async () => {
      const taken = await lockDataDir(dataDir)
      taken.check()
      taken.release()
    }

    // A live process (this test's own runner) holds it: refused.
    await writeFile(lock, lockOf(process.ppid))
    expect(await codeOf(openMemory({ dataDir, cacheMB: 4 }))).toBe('LOCKED_BY_OTHER_PROCESS')
    await writeFile(lock, lockOf(await deadPid()))
    const taken = await openMemory({ dataDir, cacheMB: 4 })
    expect(await taken.ping()).toMatchObject({ schemaVersion: expect.any(Number) })
    await taken.close()
    // What a crash while writing the lock, or another program, might leave: no holder named.
    await writeFile(lock, 'not a lock')
    await takeOver()
    // The folder an older version locked with names no holder either.
    await mkdir(lock)
    await takeOver()
    if (existsSync('/proc/self/stat')) {
      // A live process id whose start time differs: the holder died and its id was reused.
      await writeFile(lock, lockOf(process.ppid, { start: '1' }))
      await takeOver()
      // A live process id of an earlier boot: every process of that boot is gone.
      await writeFile(lock, lockOf(process.ppid, { boot: randomUUID() }))
      await takeOver()
    }
    expect(existsSync(lock)).toBe(false)
    // Another host's process ids mean nothing here: its lock stays until deleted.
    await writeFile(lock, lockOf(await deadPid(), { host: `other-${randomUUID()}` }))
    expect(await codeOf(openMemory({ dataDir, cacheMB: 4 }))).toBe('LOCKED_BY_OTHER_PROCESS')
  })

  it('an open whose lock was taken fails every later call and leaves the taker’s lock on close', async () => {
    const dataDir = await folder()
    const first = await openMemory({ dataDir, loadDataDir: await templateBlob(), cacheMB: 4 })
    await first.remember({ content: 'Written while the lock was held', category: 'fact' })
    const mine = await readFile(`${dataDir}.lock`, 'utf8')
    // What a taker leaves: its own lock file in place of this open's.
    const theirs = lockOf(process.ppid)
    await writeFile(`${dataDir}.lock`, theirs)
    expect(await codeOf(first.remember({ content: 'Written after the lock was taken', category: 'fact' }))).toBe(
      'LOCKED_BY_OTHER_PROCESS',
    )
    // Even with this open's lock back, it has stopped for good.
    await writeFile(`${dataDir}.lock`, mine)
    expect(await codeOf(first.memories.list())).toBe('LOCKED_BY_OTHER_PROCESS')
    await writeFile(`${dataDir}.lock`, theirs)
    await first.close()
    expect(await readFile(`${dataDir}.lock`, 'utf8')).toBe(theirs)
  })

  it(
    'a holder writing back to back keeps its lock, and one killed is taken over at once',
    async () => {
      const dataDir = await folder()
      const holder = startHolder({ ENGRAM_DATA_DIR: dataDir, ENGRAM_TEMPLATE: inject('templateDataDir') })
      let killed: number
      try {
        // Writing: the holder has opened the memory and had writes acknowledged.
        await holder.writing
        // The lock names a live process and is never renewed, so it has no stale period to
        // outlast: a few tries while the holder writes show it, however long they wait.
        const refusals: string[] = []
        for (let attempt = 0; attempt < 3; attempt++) {
          await sleep(500)
          refusals.push(await codeOf(openMemory({ dataDir, cacheMB: 4 })))
        }
        expect(refusals).toEqual(Array(3).fill('LOCKED_BY_OTHER_PROCESS'))
      } finally {
        killed = await holder.kill()
      }
      const seen = holder.acknowledged()
      // The lock on its own: opening the database after it takes what the machine takes.
      const lock = await lockDataDir(dataDir)
      const tookMs = performance.now() - killed
      lock.release()
      expect(tookMs).toBeLessThan(2_000)
      const taken = await openMemory({ dataDir, cacheMB: 4 })
      // Every write the holder saw acknowledged is there.
      expect((await taken.stats()).counts.memories).toBeGreaterThanOrEqual(seen)
      await taken.close()
    },
    30_000,
  )
})
