import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_EVENT_CONTENT_BYTES } from '../../src/core/kernel/limits.ts'
import type { NodeMemory } from '../../src/node/index.ts'
import { openTestMemory } from '../support/memory.ts'

let memory: NodeMemory
let baseline: Record<string, number>

beforeAll(async () => {
  memory = await openTestMemory({ workspace: { mode: 'local', root: '/repo' } })
  await memory.recordTurn({ conversationId: 'c0', user: 'hi', agent: 'hello' })
  baseline = (await memory.stats()).counts
})
afterAll(() => memory.close())

const good = {
  kind: 'message',
  scope: { conversationId: 'c1' },
  actor: { type: 'human', id: 'u' },
  content: { text: 'ok' },
} as const

const circular: Record<string, unknown> = { text: 'loop' }
circular.self = circular

/** Calls the API with deliberately wrong input, as an untyped caller (or the worker boundary) would. */
function call(fn: (input: never) => Promise<unknown>, input: unknown) {
  return fn(input as never)
}

async function expectRefused(promise: Promise<unknown>, code: string, message?: RegExp) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toMatchObject({ name: 'MemoryError', code })
  if (message) expect((error as Error).message).toMatch(message)
  expect((await memory.stats()).counts).toEqual(baseline)
}

describe('bad input changes nothing', () => {
  it.each([
    ['no scope', 'SCOPE_REQUIRED', { ...good, scope: undefined }],
    ['no conversationId', 'SCOPE_REQUIRED', { ...good, scope: { userId: 'u' } }],
    ['an unknown kind', 'INVALID_INPUT', { ...good, kind: 'thought' }],
    ['a function in content', 'INVALID_INPUT', { ...good, content: { text: 'x', fn: () => 1 } }],
    ['a BigInt in content', 'INVALID_INPUT', { ...good, content: { text: 'x', n: 10n } }],
    ['a circular object', 'INVALID_INPUT', { ...good, content: circular }],
    ['NaN in content', 'INVALID_INPUT', { ...good, content: { text: 'x', n: Number.NaN } }],
    ['a Date in content', 'INVALID_INPUT', { ...good, content: { text: 'x', at: new Date() } }],
    ['content that is not an object', 'INVALID_INPUT', { ...good, content: 'just text' }],
    ['a NUL character', 'INVALID_INPUT', { ...good, content: { text: 'a\u0000b' } }],
    ['a message without text', 'INVALID_INPUT', { ...good, content: { body: 'x' } }],
    ['a number as conversationId', 'INVALID_INPUT', { ...good, scope: { conversationId: 42 } }],
    ['an empty conversationId', 'INVALID_INPUT', { ...good, scope: { conversationId: '' } }],
    ['an unknown channel', 'INVALID_INPUT', { ...good, channel: 'broadcast' }],
    ['an unknown actor type', 'INVALID_INPUT', { ...good, actor: { type: 'robot', id: 'r' } }],
    ['tags that are not strings', 'INVALID_INPUT', { ...good, tags: [1, 2] }],
    ['an unknown field', 'INVALID_INPUT', { ...good, extra: true }],
    ['a malformed createdAt', 'INVALID_INPUT', { ...good, createdAt: 'yesterday' }],
    ['a tool_result without output', 'INVALID_INPUT', { ...good, kind: 'tool_result', content: { tool: 'ls' } }],
  ])('record with %s → %s', async (_what, code, input) => {
    await expectRefused(call((i) => memory.record(i), input), code)
  })

  it('a secret is refused with the reason that secrets are never stored', async () => {
    await expectRefused(call((i) => memory.record(i), { ...good, sensitivity: 'secret' }), 'INVALID_INPUT', /never stored/)
    await expectRefused(
      call((i) => memory.recordTurn(i), { conversationId: 'c1', user: 'k', agent: 'a', sensitivity: 'secret' }),
      'INVALID_INPUT',
      /never stored/,
    )
  })

  it('20 MB of text is refused naming the limit', async () => {
    const huge = 'x'.repeat(20 * 1024 * 1024)
    expect(MAX_EVENT_CONTENT_BYTES).toBe(8 * 1024 * 1024)
    await expectRefused(
      call((i) => memory.record(i), { ...good, content: { text: huge } }),
      'INVALID_INPUT',
      /limit is 8 MiB \(MAX_EVENT_CONTENT_BYTES\)/,
    )
    await expectRefused(call((i) => memory.recordTurn(i), { conversationId: 'c1', user: huge, agent: 'a' }), 'INVALID_INPUT', /8 MiB/)
  })

  it('tool output over the artifact cap is refused naming the limit', async () => {
    const output = 'y'.repeat(33 * 1024 * 1024)
    await expectRefused(
      call((i) => memory.record(i), { ...good, kind: 'tool_result', content: { tool: 'cat', output } }),
      'INVALID_INPUT',
      /MAX_ARTIFACT_BYTES/,
    )
  })

  it.each([
    ['a path escaping the root', 'PATH_OUTSIDE_ROOT', { path: '../outside.txt', content: 'x', conversationId: 'c1' }],
    ['an absolute path elsewhere', 'PATH_OUTSIDE_ROOT', { path: '/etc/passwd', content: 'x', conversationId: 'c1' }],
    ['no conversationId', 'SCOPE_REQUIRED', { path: 'a.txt', content: 'x' }],
    ['both path and url', 'INVALID_INPUT', { path: 'a', url: 'https://x.y/', content: 'x', conversationId: 'c1' }],
    ['neither content nor hash', 'INVALID_INPUT', { path: 'a', conversationId: 'c1' }],
    ['a malformed hash', 'INVALID_INPUT', { path: 'a', contentHash: 'abc', conversationId: 'c1' }],
    ['an unknown cause', 'INVALID_INPUT', { path: 'a', content: 'x', conversationId: 'c1', cause: 'magic' }],
    ['a relative URL', 'INVALID_INPUT', { url: '/relative', content: 'x', conversationId: 'c1' }],
  ])('observeDocument with %s → %s', async (_what, code, input) => {
    await expectRefused(call((i) => memory.observeDocument(i), input), code)
  })

  it.each([
    ['no conversationId', 'SCOPE_REQUIRED', { user: 'q', agent: 'a' }],
    ['no agent reply', 'INVALID_INPUT', { conversationId: 'c1', user: 'q' }],
    ['a user that is a number', 'INVALID_INPUT', { conversationId: 'c1', user: 5, agent: 'a' }],
    ['a procedure without a tool', 'INVALID_INPUT', { conversationId: 'c1', user: 'q', agent: 'a', procedures: [{ args: {} }] }],
    [
      'a procedure named like a builtin relation',
      'INVALID_INPUT',
      { conversationId: 'c1', user: 'q', agent: 'a', procedures: [{ tool: 'VERSION_OF' }] },
    ],
    [
      'arguments that are not JSON',
      'INVALID_INPUT',
      { conversationId: 'c1', user: 'q', agent: 'a', procedures: [{ tool: 't', args: { f: Symbol('s') } }] },
    ],
    [
      'a document effect that is unknown',
      'INVALID_INPUT',
      {
        conversationId: 'c1',
        user: 'q',
        agent: 'a',
        procedures: [{ tool: 't', document: { path: 'a', content: 'x', effect: 'delete' } }],
      },
    ],
    [
      'a document outside the root in the last procedure',
      'PATH_OUTSIDE_ROOT',
      {
        conversationId: 'c1',
        user: 'q',
        agent: 'a',
        procedures: [
          { tool: 'read_file', document: { path: 'ok.txt', content: 'x', effect: 'read' } },
          { tool: 'read_file', document: { path: '../../etc/passwd', content: 'x', effect: 'read' } },
        ],
      },
    ],
  ])('recordTurn with %s → %s', async (_what, code, input) => {
    await expectRefused(call((i) => memory.recordTurn(i), input), code)
  })

  it('reads refuse malformed arguments and report missing rows', async () => {
    await expectRefused(call((i) => memory.graph.walk(i), 123), 'INVALID_INPUT')
    await expectRefused(memory.graph.walk('evt_x', { depth: 50 }), 'INVALID_INPUT')
    await expectRefused(memory.events.get('evt_01jmissingmissingmissing00'), 'NOT_FOUND')
    await expectRefused(memory.documents.history('never/seen.md'), 'NOT_FOUND')
    await expectRefused(memory.documents.history('../escape.md'), 'PATH_OUTSIDE_ROOT')
    await expectRefused(call((i) => memory.diffSince(i), 'not a date'), 'INVALID_INPUT')
    await expectRefused(call((i) => memory.forget(i), { everything: true }), 'INVALID_INPUT')
  })
})

describe('caller-chosen ids', () => {
  it('are up to MAX_ID_LENGTH characters for every part of the memory, and one more is refused by every part', async () => {
    const { Memory } = await import('../../src/adapters/mem0/facade.ts')
    const { MAX_ID_LENGTH } = await import('../../src/core/kernel/limits.ts')
    const mem0 = new Memory(memory)
    const writes = (id: string) => ({
      record: () => memory.record({ ...good, scope: { conversationId: 'ids', userId: id } }),
      remember: () => memory.remember({ content: `a fact for ${id.length}`, category: 'fact', userId: id }),
      kv: () => memory.kv.put('policy', 'ids', `k${id.length}`, 'v', { tenantId: id }),
      graph: () => memory.graph.putNode({ id: `n${id.length}`, type: 't', tenantId: id }),
      mem0: () => mem0.add(`a note for ${id.length}`, { userId: id, infer: false }),
    })
    for (const [part, write] of Object.entries(writes('u'.repeat(MAX_ID_LENGTH)))) await expect(write(), part).resolves.toBeDefined()
    for (const [part, write] of Object.entries(writes('u'.repeat(MAX_ID_LENGTH + 1)))) {
      await expect(write(), part).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    }
    for (const [part, write] of Object.entries(writes(' padded'))) await expect(write(), part).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })
})
