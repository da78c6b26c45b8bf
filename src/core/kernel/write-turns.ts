/**
 * A lock that the processes writing one database share: a PostgreSQL server's advisory lock.
 * It also carries the writers' clock, the latest time any of them gave.
 */
export interface WriteLock {
  /** Waits for the lock; returns the clock the last holder stored (ms), or null if none has. */
  acquire(): Promise<number | null>
  /** Stores `clock` (ms; the latest time this process gave, or null) and frees the lock. */
  release(clock: number | null): Promise<void>
}

/** The engine's clock, as write turns move it. */
export interface TurnClock {
  /** Moves the clock to at least `at` (ms). */
  raise(at: number): void
  /** The latest time the clock gave or was raised to (ms), or null. */
  latest(): number | null
}

/** Runs `fn` in this process's turn to write. */
export type InTurn = <T>(fn: () => Promise<T>) => Promise<T>

interface Waiter {
  /** Runs the call; settles when it does. */
  run: () => Promise<void>
  fail: (error: unknown) => void
}

/**
 * Write calls of several processes take turns on one database. In its turn, a process holds the
 * lock and runs every write call that was waiting when it got the lock, together, as it would
 * alone; calls made during the turn wait for the next one, so a process that keeps writing
 * cannot keep the lock from the others. At the start of a turn the engine's clock rises to the
 * writers' clock; at the end the writers' clock takes the engine's latest time. So a row is
 * never dated before one another process wrote earlier, and a change list cut in a turn misses
 * no write: the others' writes are committed, and theirs to come are dated after it.
 *
 * @example
 * const inTurn = writeTurns(lock, clock)
 * await inTurn(() => kv.put(...))
 */
export function writeTurns(lock: WriteLock, clock: TurnClock): InTurn {
  let waiting: Waiter[] = []
  let taking = false

  async function takeTurns(): Promise<void> {
    taking = true
    while (waiting.length > 0) {
      let at: number | null
      try {
        at = await lock.acquire()
      } catch (error) {
        // The lock could not be taken (the connection is lost): the calls waiting fail.
        for (const w of waiting.splice(0)) w.fail(error)
        continue
      }
      // The turn takes every call waiting now, those made while the lock was awaited included.
      const batch = waiting
      waiting = []
      if (at !== null) clock.raise(at)
      await Promise.all(batch.map((w) => w.run()))
      // A lock that could not be freed is lost with its connection; the next turn says so.
      await lock.release(clock.latest()).catch(() => {})
    }
    taking = false
  }

  return <T>(fn: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      waiting.push({ run: () => fn().then(resolve, reject), fail: reject })
      if (!taking) void takeTurns()
    })
}
