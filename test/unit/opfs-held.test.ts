import { describe, expect, it } from 'vitest'
import { whileHeld } from '../../src/browser/storage/opfs-fs.ts'

const held = () => Object.assign(new Error('Access Handles cannot be created if there is another open Access Handle'), { name: 'NoModificationAllowedError' })

describe('whileHeld: a flush waits out files that another access handle holds', () => {
  it('writes again while a file is held, and returns once a write goes through', async () => {
    let tries = 0
    const result = await whileHeld(async () => {
      if (++tries < 3) throw held()
      return 'written'
    })
    expect(result).toBe('written')
    expect(tries).toBe(3)
  })

  it('throws any other failure at once', async () => {
    let tries = 0
    const full = Object.assign(new Error('quota'), { name: 'QuotaExceededError' })
    await expect(
      whileHeld(async () => {
        tries++
        throw full
      }),
    ).rejects.toBe(full)
    expect(tries).toBe(1)
  })

  it('gives up once the wait is over, with the last failure', async () => {
    let tries = 0
    await expect(
      whileHeld(async () => {
        tries++
        throw held()
      }, 120),
    ).rejects.toMatchObject({ name: 'NoModificationAllowedError' })
    expect(tries).toBeGreaterThan(1)
  })
})
