import { MemoryError } from '../kernel/errors.ts'
import { MAX_EVENT_CONTENT_BYTES, MAX_PROCEDURES_PER_TURN, utf8Length } from '../kernel/limits.ts'
import { procedureInput, type RecordTurnInput, speechInput, type TurnRecord, turnInput } from './turns.ts'
import { NUL_PROBLEM } from '../kernel/input-walk.ts'
import { parseInput, z } from '../kernel/validate.ts'

/** What a turn recorder writes through: an engine, a page's `Memory`, or anything with `recordTurn`. */
export interface TurnSink {
  recordTurn(input: RecordTurnInput): Promise<TurnRecord>
}

export type TurnProcedure = NonNullable<RecordTurnInput['procedures']>[number]

const optionsSchema = turnInput
  .pick({ conversationId: true, scope: true, channel: true, sensitivity: true, tags: true })
  .extend({
    /**
     * Records a turn that has a reply once this long has passed without a change to it (a
     * reply delta or a procedure); without it, a turn is recorded by `commit`, by the next
     * `user` message or by `close`.
     */
    idleMs: z.number().int().min(1).max(3_600_000).optional(),
    /**
     * Receives what a commit that nobody awaited (an idle one) failed with, and the turn it
     * could not record.
     */
    onError: z
      .custom<(error: unknown, turn: RecordTurnInput) => void>((v) => typeof v === 'function', 'onError must be a function')
      .optional(),
  })
  .strict()
  // Secrets are never stored: a recorder for them could record nothing.
  .refine((o) => o.sensitivity !== 'secret', { message: 'secret is never stored', path: ['sensitivity'] })

export type TurnRecorderOptions = z.input<typeof optionsSchema>

export interface TurnRecorder {
  /**
   * The user's message: it starts a turn, committing the one before when that one has a
   * reply. Messages sent before any reply are one request, joined by a blank line.
   */
  user(message: string | { text: string; actorId?: string }): Promise<void>
  /** Reply text as it streams: each delta is appended to the open turn's reply. */
  reply(delta: string): void
  /** A tool call the agent made in this turn, checked now (as `recordTurn` checks it). */
  procedure(procedure: TurnProcedure): void
  /** Records the open turn as one `recordTurn`: its record, or null when no turn is open. */
  commit(): Promise<TurnRecord | null>
  /** Drops the open turn unrecorded. */
  discard(): void
  /**
   * Commits the open turn (a message still unanswered with an empty reply, so that it is not
   * lost), after any idle commit under way, and stops; later calls are refused with CLOSED.
   * When that commit fails, close rejects with its error (and is closed all the same).
   */
  close(): Promise<TurnRecord | null>
  /** The open turn so far, or null. */
  readonly pending: { user: string; reply: string; procedures: number } | null
  /** `close()`, for `await using turns = turnRecorder(…)`. */
  [Symbol.asyncDispose](): Promise<void>
}

interface OpenTurn {
  user: string
  actorId: string | undefined
  reply: string
  procedures: TurnProcedure[]
}

/**
 * Assembles a turn as a streaming agent produces it (the user's message, then tool calls and
 * reply deltas in any order) and records it whole, in one `recordTurn`, when the turn ends:
 * at `commit()`, at the next user message, at `close()`, or after `idleMs` without a change.
 *
 * @example
 * // a memory with a local workspace, so `src/parse.ts` is relative to its root
 * const memory = await openMemory({ workspace: { mode: 'local', root: '/work/app' } })
 * const turns = turnRecorder(memory, { conversationId: 'c1', idleMs: 5000 })
 * await turns.user('why does the parser fail on dates?')
 * turns.procedure({ tool: 'read_file', document: { path: 'src/parse.ts', content, effect: 'read' } })
 * for await (const delta of stream) turns.reply(delta)
 * await turns.commit()
 */
export function turnRecorder(sink: TurnSink, options: TurnRecorderOptions): TurnRecorder {
  if (typeof (sink as Partial<TurnSink> | null)?.recordTurn !== 'function') {
    throw new MemoryError('INVALID_INPUT', 'turnRecorder needs a memory (something with recordTurn)')
  }
  const { idleMs, onError, ...turnOptions } = parseInput(optionsSchema, options, 'turn recorder options')
  let open: OpenTurn | null = null
  let closed = false
  let timer: ReturnType<typeof setTimeout> | undefined
  /** The commit in flight: the next one waits for it, so turns are recorded in order. */
  let inFlight: Promise<unknown> = Promise.resolve()

  const live = () => {
    if (closed) throw new MemoryError('CLOSED', 'This turn recorder is closed')
  }
  const needTurn = (what: string): OpenTurn => {
    live()
    if (!open) throw new MemoryError('INVALID_INPUT', `${what} needs a turn: send the user's message first (user())`)
    return open
  }
  const disarm = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
  }
  const arm = () => {
    disarm()
    if (idleMs === undefined || !open || open.reply === '') return
    timer = setTimeout(() => {
      timer = undefined
      const turn = open
      commit().catch((error: unknown) => {
        if (turn) onError?.(error, inputOf(turn))
      })
    }, idleMs)
  }

  const inputOf = (turn: OpenTurn): RecordTurnInput => ({
    ...turnOptions,
    user: turn.actorId === undefined ? turn.user : { text: turn.user, actorId: turn.actorId },
    agent: turn.reply,
    procedures: [...turn.procedures],
  })

  function commit(): Promise<TurnRecord | null> {
    disarm()
    const turn = open
    if (!turn) return inFlight.then(() => null)
    open = null
    const run = inFlight.then(async () => {
      try {
        return await sink.recordTurn(inputOf(turn))
      } catch (error) {
        // Nothing was stored. The turn is open again, for another commit or discard(), unless
        // another one started meanwhile or the recorder closed; the idle timer is armed again
        // only for a failure that may pass, not for the turn's own refusal.
        if (open === null && !closed) {
          open = turn
          if (!MemoryError.is(error, 'INVALID_INPUT')) arm()
        }
        throw error
      }
    })
    inFlight = run.catch(() => undefined)
    return run
  }

  return {
    async user(message) {
      live()
      const m = parseInput(speechInput, message, 'user message')
      const text = typeof m === 'string' ? m : m.text
      const actorId = typeof m === 'string' ? undefined : m.actorId
      if (open && open.reply === '' && open.actorId === actorId) {
        open.user = `${open.user}\n\n${text}`
        return
      }
      if (open) await commit()
      open = { user: text, actorId, reply: '', procedures: [] }
    },
    reply(delta) {
      const turn = needTurn('reply()')
      // A delta may end inside a surrogate pair that the next one completes: only NUL is
      // refused here, and the whole reply is checked when the turn is recorded.
      if (typeof delta !== 'string') throw new MemoryError('INVALID_INPUT', 'Invalid reply delta: a string is required')
      if (delta.includes('\u0000')) throw new MemoryError('INVALID_INPUT', `Invalid reply delta: ${NUL_PROBLEM}`)
      const text = delta
      // Refused before it is added: the reply so far stays as it was.
      if (utf8Length(turn.reply) + utf8Length(text) > MAX_EVENT_CONTENT_BYTES) {
        throw new MemoryError('INVALID_INPUT', `The reply would pass ${MAX_EVENT_CONTENT_BYTES} bytes (MAX_EVENT_CONTENT_BYTES)`, {
          details: { limit: MAX_EVENT_CONTENT_BYTES },
        })
      }
      turn.reply += text
      arm()
    },
    procedure(procedure) {
      const turn = needTurn('procedure()')
      const checked = parseInput(procedureInput, procedure, 'procedure')
      if (turn.procedures.length >= MAX_PROCEDURES_PER_TURN) {
        throw new MemoryError('INVALID_INPUT', `A turn holds at most ${MAX_PROCEDURES_PER_TURN} procedures (MAX_PROCEDURES_PER_TURN)`, {
          details: { limit: MAX_PROCEDURES_PER_TURN },
        })
      }
      turn.procedures.push(checked)
      arm()
    },
    commit() {
      live()
      return commit()
    },
    discard() {
      live()
      disarm()
      open = null
    },
    async close() {
      if (closed) return null
      try {
        // An idle commit under way is waited for, so the memory may be closed right after.
        if (!open) await inFlight
        return open ? await commit() : null
      } finally {
        closed = true
        disarm()
        open = null
      }
    },
    async [Symbol.asyncDispose]() {
      await this.close()
    },
    get pending() {
      return open && { user: open.user, reply: open.reply, procedures: open.procedures.length }
    },
  }
}
