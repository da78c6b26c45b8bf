import type { IndexingPause } from '../kernel/engine-context.ts'
import { parseInput, z } from '../kernel/validate.ts'

export type { IndexingPause }

/**
 * Background indexing yields to writes: before each batch it waits until no write has come
 * for `quietMs`, but never more than `maxWaitMs`. The model takes the CPU while it embeds,
 * which would otherwise slow the writes that keep arriving. Once a run has waited `maxWaitMs`,
 * it stops waiting until nothing is left, so a steady stream of writes still gets its vectors.
 * `waitForIndex` and `indexNow` never wait for a pause. `quietMs: 0` indexes at once.
 */
export const DEFAULT_INDEXING_PAUSE: Readonly<IndexingPause> = Object.freeze({ quietMs: 1_000, maxWaitMs: 10_000 })

const pauseInput = z.strictObject({
  quietMs: z.number().int().min(0).max(60_000).default(DEFAULT_INDEXING_PAUSE.quietMs),
  maxWaitMs: z.number().int().min(0).max(600_000).default(DEFAULT_INDEXING_PAUSE.maxWaitMs),
})

/** `indexingPause` with its defaults filled in; refuses a value out of range. */
export function parseIndexingPause(input: Partial<IndexingPause> | undefined): IndexingPause {
  return parseInput(pauseInput, input ?? {}, 'indexingPause')
}

/**
 * Milliseconds until work waiting since `since` may start: once no write has come for
 * `quietMs` since `lastWrite`, or once it has waited `maxWaitMs`. Zero or less: now.
 */
export function untilPause(pause: IndexingPause, lastWrite: number, since: number, now = performance.now()): number {
  return Math.min(pause.quietMs - (now - lastWrite), pause.maxWaitMs - (now - since))
}

/** What a pause reads and sets of the indexer's shared state. */
export interface PauseState {
  /** When the last write came (`performance.now()`). */
  lastWrite: number
  /** Callers waiting for the index (`waitForIndex`, `indexNow`): batches then do not wait for a pause. */
  urgent: number
  /** Ends the pause a batch is waiting in, if any. */
  wake: (() => void) | undefined
  /** The run in progress has waited `maxWaitMs` once: it waits for no pause again. */
  pressed: boolean
  stopped: boolean
}

/**
 * Waits until writes have paused for `quietMs`, `maxWaitMs` at most; at once when someone
 * waits for the index, or when this run has already waited `maxWaitMs` (`pressed`): writes
 * that never pause would otherwise hold each batch for `maxWaitMs`, and the backlog would grow.
 */
export async function waitForQuiet(state: PauseState, pause: IndexingPause): Promise<void> {
  const began = performance.now()
  for (;;) {
    // Manual mode runs only for a caller waiting on the index (urgent).
    if (state.urgent > 0 || state.stopped || state.pressed) return
    const now = performance.now()
    const left = untilPause(pause, state.lastWrite, began, now)
    if (left <= 0) {
      if (now - began >= pause.maxWaitMs && now - state.lastWrite < pause.quietMs) state.pressed = true
      return
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, left)
      state.wake = () => {
        clearTimeout(t)
        resolve()
      }
    })
    state.wake = undefined
  }
}
