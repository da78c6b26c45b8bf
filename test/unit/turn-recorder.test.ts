import { describe, expect, it, vi } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { turnRecorder } from '../../src/core/turns/turn-recorder.ts'
import type { RecordTurnInput, TurnRecord } from '../../src/core/turns/turns.ts'
import { openTestMemory } from '../support/memory.ts'

function codeOf(call: () => unknown): string {
  try {
    call()
  } catch (error) {
    if (MemoryError.is(error)) return error.code
    throw error
  }
  return 'none'
}

describe('turn recorder', () => {
  it('assembles a streamed turn (deltas and procedures in any order) into one recordTurn', async () => {
    await using memory = await openTestMemory({ workspace: { mode: 'local', root: '/repo' } })
    const turns = turnRecorder(memory, { conversationId: 'c1', scope: { userId: 'ann' }, tags: ['topic:dates'] })
    await turns.user('why does the parser')
    await turns.user('fail on dates?')
    // A stream may split a character in two: its halves arrive as two deltas.
    turns.reply('It reads dates \uD83D')
    turns.reply('\uDCC5 ')
    turns.procedure({ tool: 'read_file', args: { path: 'src/parse.ts' }, document: { path: '/repo/src/parse.ts', content: 'mmdd', effect: 'read' } })
    turns.reply('as MM/DD.')
    turns.procedure({ tool: 'run_tests', output: '1 failed' })
    expect(turns.pending).toEqual({ user: 'why does the parser\n\nfail on dates?', reply: 'It reads dates \u{1F4C5} as MM/DD.', procedures: 2 })
    const record = await turns.commit()
    expect(turns.pending).toBeNull()
    expect(record?.turnIndex).toBe(0)
    const [view] = await memory.turns([record?.userEventId as string])
    expect(view).toMatchObject({ userText: 'why does the parser\n\nfail on dates?', replyText: 'It reads dates \u{1F4C5} as MM/DD.' })
    expect(view?.procedures.map((p) => [p.tool, p.document])).toEqual([
      ['read_file', 'src/parse.ts'],
      ['run_tests', null],
    ])
    expect(await memory.events.get(record?.userEventId as string)).toMatchObject({ scope: { userId: 'ann' }, tags: ['topic:dates'] })
    // Nothing open: commit records nothing.
    expect(await turns.commit()).toBeNull()
  })

  it('the next user message ends the turn before it, and close records what is open', async () => {
    await using memory = await openTestMemory()
    const turns = turnRecorder(memory, { conversationId: 'c2' })
    await turns.user('first question')
    turns.reply('first answer')
    await turns.user({ text: 'second question', actorId: 'ann' })
    expect(turns.pending).toEqual({ user: 'second question', reply: '', procedures: 0 })
    const listed = async () => (await memory.events.list({ conversationId: 'c2' })).map((e) => [e.actor.id, e.content.text])
    expect(await listed()).toEqual([
      ['user', 'first question'],
      ['agent', 'first answer'],
    ])
    // An unanswered message is kept when the recorder closes, with an empty reply.
    const last = await turns.close()
    expect(last?.turnIndex).toBe(1)
    expect((await listed()).slice(2)).toEqual([
      ['ann', 'second question'],
      ['agent', ''],
    ])
    await expect(turns.user('after close')).rejects.toMatchObject({ code: 'CLOSED' })
    // `await using` closes a recorder when its block ends, recording what is open.
    {
      await using scoped = turnRecorder(memory, { conversationId: 'c2' })
      await scoped.user('third question')
      scoped.reply('third answer')
    }
    expect((await listed()).slice(4)).toEqual([
      ['user', 'third question'],
      ['agent', 'third answer'],
    ])
    expect(codeOf(() => turns.reply('x'))).toBe('CLOSED')
    expect(await turns.close()).toBeNull()
  })

  it('records a turn after idleMs without a change, each change putting it off; a failed idle commit goes to onError and keeps the turn', async () => {
    await using memory = await openTestMemory()
    const errors: unknown[] = []
    const failedTurns: RecordTurnInput[] = []
    let failNext = false
    const sink = {
      recordTurn: async (input: RecordTurnInput): Promise<TurnRecord> => {
        if (failNext) {
          failNext = false
          throw new MemoryError('STORAGE_UNAVAILABLE', 'the disk went away')
        }
        return memory.recordTurn(input)
      },
    }
    const turns = turnRecorder(sink, {
      conversationId: 'c3',
      idleMs: 150,
      onError: (e, turn) => {
        errors.push(e)
        failedTurns.push(turn)
      },
    })
    const count = async () => (await memory.events.list({ conversationId: 'c3' })).length
    await turns.user('question')
    // No reply yet: no idle commit, however long it waits.
    await new Promise((r) => setTimeout(r, 300))
    expect(await count()).toBe(0)
    for (let i = 0; i < 5; i++) {
      turns.reply(`part ${i} `)
      await new Promise((r) => setTimeout(r, 60))
    }
    // 300 ms of deltas 60 ms apart: still open.
    expect(turns.pending?.reply).toBe('part 0 part 1 part 2 part 3 part 4 ')
    await vi.waitFor(async () => expect(await count()).toBe(2), { timeout: 3000, interval: 25 })
    expect(turns.pending).toBeNull()

    failNext = true
    await turns.user('another')
    turns.reply('answer')
    await vi.waitFor(() => expect(errors).toHaveLength(1), { timeout: 3000, interval: 25 })
    expect(MemoryError.is(errors[0], 'STORAGE_UNAVAILABLE')).toBe(true)
    expect(failedTurns[0]).toMatchObject({ conversationId: 'c3', user: 'another', agent: 'answer' })
    // The turn is open again, and its timer armed again: it is recorded without a call.
    expect(turns.pending).toEqual({ user: 'another', reply: 'answer', procedures: 0 })
    await vi.waitFor(async () => expect(await count()).toBe(4), { timeout: 3000, interval: 25 })

    // A turn the engine refuses is not tried again and again: one error, and it waits open.
    await turns.user('half a character')
    turns.reply('ends on \uD83D')
    await vi.waitFor(() => expect(errors).toHaveLength(2), { timeout: 3000, interval: 25 })
    expect(MemoryError.is(errors[1], 'INVALID_INPUT')).toBe(true)
    await new Promise((r) => setTimeout(r, 400))
    expect(errors).toHaveLength(2)
    expect(turns.pending?.reply).toBe('ends on \uD83D')
    // A delta completes it; the timer, armed again by the change, records it.
    turns.reply('\uDE00')
    await vi.waitFor(async () => expect(await count()).toBe(6), { timeout: 3000, interval: 25 })

    // close() waits for an idle commit under way, so the memory may close right after.
    let release = () => {}
    const slow = turnRecorder(
      { recordTurn: async (input) => { await new Promise<void>((r) => { release = r }); return memory.recordTurn(input) } },
      { conversationId: 'c5', idleMs: 20 },
    )
    await slow.user('slow question')
    slow.reply('slow answer')
    await new Promise((r) => setTimeout(r, 100))
    expect(slow.pending).toBeNull() // taken by the idle commit, not yet written
    const closing = slow.close()
    release()
    await closing
    expect(await memory.events.list({ conversationId: 'c5' })).toHaveLength(2)
    await turns.close()
  })

  it('refuses bad input where it is given, with a typed error, and a turn the engine refuses stays open', async () => {
    await using memory = await openTestMemory()
    for (const bad of [
      {},
      { conversationId: '' },
      { conversationId: 'c', idleMs: 0 },
      { conversationId: 'c', onError: 'log' },
      { conversationId: 'c', bogus: 1 },
      { conversationId: 'c', sensitivity: 'secret' },
    ]) {
      expect(codeOf(() => turnRecorder(memory, bad as never))).toBe('INVALID_INPUT')
    }
    expect(codeOf(() => turnRecorder({} as never, { conversationId: 'c' }))).toBe('INVALID_INPUT')
    const turns = turnRecorder(memory, { conversationId: 'c4' })
    expect(codeOf(() => turns.reply('no question yet'))).toBe('INVALID_INPUT')
    expect(codeOf(() => turns.procedure({ tool: 'read' }))).toBe('INVALID_INPUT')
    await expect(turns.user(42 as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await turns.user('question')
    expect(codeOf(() => turns.procedure({ tool: 'MESSAGE' }))).toBe('INVALID_INPUT')
    expect(codeOf(() => turns.procedure({ tool: 'read', document: { path: 'a', effect: 'read' }, output: 'x' }))).toBe('INVALID_INPUT')
    expect(codeOf(() => turns.reply(7 as never))).toBe('INVALID_INPUT')
    expect(turns.pending).toEqual({ user: 'question', reply: '', procedures: 0 })
    expect(codeOf(() => turns.reply('a NUL \u0000'))).toBe('INVALID_INPUT')
    // Limits are checked where the piece is given, not at the commit.
    for (let n = 0; n < 256; n++) turns.procedure({ tool: 'step', output: `${n}` })
    expect(codeOf(() => turns.procedure({ tool: 'step', output: 'one too many' }))).toBe('INVALID_INPUT')
    expect(turns.pending?.procedures).toBe(256)
    expect(codeOf(() => turns.reply('x'.repeat(9 * 1024 * 1024)))).toBe('INVALID_INPUT')
    expect(turns.pending?.reply).toBe('')
    turns.discard()
    await turns.user('question')
    // A reply the engine refuses (half of a surrogate pair that never got its other half) is
    // refused at commit; nothing is stored and the turn stays open.
    turns.reply('bad \uD83D text')
    await expect(turns.commit()).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    expect(turns.pending?.reply).toBe('bad \uD83D text')
    expect(await memory.events.list({ conversationId: 'c4' })).toEqual([])
    turns.discard()
    expect(turns.pending).toBeNull()
    expect(await turns.close()).toBeNull()
  })
})
