import { describe, expect, it } from 'vitest'
import { type WriteLock, writeTurns } from '../../src/core/kernel/write-turns.ts'

/** A lock that processes share, in one process: first come, first served, with the writers' clock. */
function sharedLock() {
  let held = false
  const waiting: (() => void)[] = []
  let stored: number | null = null
  let acquires = 0
  const lock: WriteLock = {
    acquire: async () => {
      acquires++
      if (held) await new Promise<void>((resolve) => waiting.push(resolve))
      held = true
      return stored
    },
    release: async (clock) => {
      if (clock !== null) stored = Math.max(stored ?? clock, clock)
      const next = waiting.shift()
      if (next) next()
      else held = false
    },
  }
  return { lock, acquires: () => acquires }
}

/** A process's clock as write turns move it. */
function clockAt(start: number) {
  let floor = start
  return { raise: (at: number) => void (floor = Math.max(floor, at)), latest: () => floor, now: () => floor }
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('write turns', () => {
  it('runs the calls waiting when it gets the lock together, in one turn', async () => {
    const { lock, acquires } = sharedLock()
    const inTurn = writeTurns(lock, clockAt(0))
    let running = 0
    let most = 0
    const call = () =>
      inTurn(async () => {
        most = Math.max(most, ++running)
        await tick()
        running--
      })
    await Promise.all([call(), call(), call()])
    expect(most).toBe(3)
    expect(acquires()).toBe(1)
  })

  it('a process writing back to back leaves another its turn', async () => {
    const { lock } = sharedLock()
    const busy = writeTurns(lock, clockAt(0))
    const other = writeTurns(lock, clockAt(0))
    let stop = false
    let busyCalls = 0
    const loop = (async () => {
      while (!stop) await busy(async () => void (busyCalls++, await tick()))
    })()
    await tick()
    const before = busyCalls
    await other(async () => {})
    // The other's turn came after at most the busy process's current and next turns.
    expect(busyCalls - before).toBeLessThanOrEqual(2)
    stop = true
    await loop
  })

  it('raises a clock behind to the latest time another process gave', async () => {
    const { lock } = sharedLock()
    const ahead = clockAt(5_000)
    const behind = clockAt(1_000)
    await writeTurns(lock, ahead)(async () => {})
    let seen = 0
    await writeTurns(lock, behind)(async () => void (seen = behind.now()))
    expect(seen).toBe(5_000)
  })

  it('fails the calls of a turn whose lock cannot be taken, and takes it again for the next', async () => {
    let fail = true
    const lock: WriteLock = {
      acquire: async () => {
        if (fail) throw new Error('connection lost')
        return null
      },
      release: async () => {},
    }
    const inTurn = writeTurns(lock, clockAt(0))
    await expect(Promise.all([inTurn(async () => 1), inTurn(async () => 2)])).rejects.toThrow('connection lost')
    fail = false
    expect(await inTurn(async () => 3)).toBe(3)
  })
})
