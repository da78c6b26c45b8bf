import { describe, expect, it } from 'vitest'
import { eachLimited } from '../../src/browser/storage/file-writes.ts'

describe('eachLimited: a pool of writes that ends whole, even when one fails', () => {
  it('runs every item, at most `limit` at once', async () => {
    let running = 0
    let most = 0
    const done: number[] = []
    await eachLimited([1, 2, 3, 4, 5], 2, async (n) => {
      most = Math.max(most, ++running)
      await new Promise((resolve) => setTimeout(resolve, 5))
      running--
      done.push(n)
    })
    expect(done.sort()).toEqual([1, 2, 3, 4, 5])
    expect(most).toBe(2)
  })

  it('after a failure starts no new item, and throws the first error once the started ones end', async () => {
    const events: string[] = []
    const failing = eachLimited(['slow', 'bad', 'worse', 'never'], 3, async (item) => {
      events.push(`start ${item}`)
      if (item === 'slow') await new Promise((resolve) => setTimeout(resolve, 30))
      if (item === 'bad') throw new Error('bad failed')
      if (item === 'worse') {
        await new Promise((resolve) => setTimeout(resolve, 5))
        throw new Error('worse failed')
      }
      events.push(`end ${item}`)
    })
    await expect(failing).rejects.toThrow('bad failed')
    // The slow write ended before the call failed; the fourth never started.
    expect(events).toEqual(['start slow', 'start bad', 'start worse', 'end slow'])
  })
})
