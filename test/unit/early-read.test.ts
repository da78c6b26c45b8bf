import { describe, expect, it } from 'vitest'
import { startEarly } from '../../src/browser/storage/opfs-fs.ts'

describe('startEarly', () => {
  it('reads from the start, before anything asks, and hands on every entry in order', async () => {
    const started: number[] = []
    let finished = () => {}
    const sourceDone = new Promise<void>((resolve) => (finished = resolve))
    async function* source() {
      for (let i = 0; i < 5; i++) {
        started.push(i)
        await new Promise((resolve) => setTimeout(resolve, 1))
        yield i
      }
      finished()
    }
    const read = startEarly(source())
    // Read through before the reader came: the source ends with no reader asking (a fixed wait
    // here failed on a busy machine, where five 1 ms timers took longer than 30 ms).
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('nothing read the source before a reader came')), 5000)
    })
    await Promise.race([sourceDone, late])
    clearTimeout(timer)
    expect(started).toEqual([0, 1, 2, 3, 4])
    const got: number[] = []
    for await (const item of read()) got.push(item)
    expect(got).toEqual([0, 1, 2, 3, 4])
  })

  it('waits for entries not yet read, and a failure reaches the reader after the entries before it', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    async function* source() {
      yield 'a'
      await gate
      yield 'b'
      throw new Error('the folder went away')
    }
    const read = startEarly(source())
    const got: string[] = []
    const reading = (async () => {
      for await (const item of read()) got.push(item)
    })()
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(got).toEqual(['a'])
    release()
    await expect(reading).rejects.toThrow('the folder went away')
    expect(got).toEqual(['a', 'b'])
  })
})
