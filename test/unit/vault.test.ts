import { describe, expect, it } from 'vitest'
import type { Db } from '../../src/core/kernel/db.ts'
import { createEngine, type Engine, type EngineOptions } from '../../src/core/engine.ts'
import { SEALED_PREFIX } from '../../src/core/privacy/vault.ts'
import { isSealed } from '../../src/node/index.ts'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import { testClock } from '../support/clock.ts'
import { openTestDb } from '../support/memory.ts'
import { codeOf } from '../support/errors.ts'

const WORD = 'zanzibar'
const PASSPHRASE = 'correct horse battery'
/** Every table that holds what a `high` row says. Documents carry no sensitivity and stay plain. */
const SEALED_TABLES = ['events', 'artifacts', 'chunks', 'edges', 'memories', 'memory_history']

function engineOver(db: Db, options: Partial<EngineOptions> = {}) {
  return createEngine({
    db,
    now: testClock('2025-03-01T10:00:00.000Z').now,
    embedder: createHashEmbedder({ dims: 32 }),
    indexing: 'manual',
    workspace: { mode: 'local', root: '/repo' },
    ...options,
  })
}

/** The tables' rows as text, one string per table that mentions `word`. */
async function tablesMentioning(db: Db, word: string): Promise<string[]> {
  const found: string[] = []
  for (const table of SEALED_TABLES) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} t WHERE t::text ILIKE '%' || $1 || '%'`,
      [word],
    )
    if ((rows[0]?.n ?? 0) > 0) found.push(table)
  }
  return found
}

/** A `high` turn with a tool call, a long tool output (kept as an artifact) and a document read; a plain turn; a `high` task and memory. */
async function writeHigh(m: Engine) {
  const turn = await m.recordTurn({
    conversationId: 'c-high',
    scope: { userId: 'ann' },
    sensitivity: 'high',
    user: `My ${WORD} account number is 4411; where is it used?`,
    agent: `The ${WORD} account pays the payroll run.`,
    procedures: [
      { tool: 'search_ledger', args: { query: `${WORD} 4411` }, output: `${WORD} row\n`.repeat(8_000) },
      { tool: 'read_file', args: { path: 'src/payroll.ts', note: `${WORD} lookup` }, document: { path: 'src/payroll.ts', content: 'export const RUN = 1', effect: 'read' } },
    ],
  })
  const task = await m.record({
    kind: 'task_update',
    scope: { conversationId: 'c-high', userId: 'ann' },
    actor: { type: 'agent', id: 'coder' },
    sensitivity: 'high',
    content: { title: `Rotate the ${WORD} keys`, status: 'open' },
  })
  await m.recordTurn({ conversationId: 'c-plain', scope: { userId: 'ann' }, user: 'Is the weather fine?', agent: 'Sunny all week.' })
  const memory = await m.remember({ content: `Ann's ${WORD} PIN hint is the harbour`, category: 'fact', source: 'explicit', sensitivity: 'high' })
  await m.indexNow()
  return { turn, task, memory }
}

describe('vault: high sensitivity encrypted at rest', () => {
  it('stores high events, artifacts, tool arguments and memories sealed, and reads them back plain', async () => {
    const db = await openTestDb()
    const m = await engineOver(db, { vault: { passphrase: PASSPHRASE } })
    expect(await m.vault.status()).toBe('open')
    expect((await m.stats()).vault).toBe('open')
    const { turn, task, memory } = await writeHigh(m)

    // Nothing of the high rows is stored in plain text, and no chunk or vector is kept of them.
    expect(await tablesMentioning(db, WORD)).toEqual([])
    expect(await tablesMentioning(db, 'weather')).toEqual(['events', 'chunks'])
    const { rows: chunks } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM chunks c JOIN events e ON e.id = c.source_id WHERE e.sensitivity = 'high'`,
    )
    expect(chunks[0]?.n).toBe(0)
    expect(turn.chunkIds).toEqual([])
    const { rows: stored } = await db.query<{ content: { title: string; status: string }; meta: { sealed?: boolean } }>(
      `SELECT content, meta FROM events WHERE id = $1`,
      [task.eventId],
    )
    // States and ids the database reads stay plain; text is sealed.
    expect(stored[0]?.content.status).toBe('open')
    expect(stored[0]?.content.title.startsWith(SEALED_PREFIX)).toBe(true)
    expect(stored[0]?.meta.sealed).toBe(true)
    const { rows: mem } = await db.query<{ vector: string | null; tsv: string; hash: string }>(
      `SELECT vector::text, tsv::text, hash FROM memories WHERE id = $1`,
      [memory.id],
    )
    expect(mem[0]).toMatchObject({ vector: null, tsv: '' })

    // Every read opens what it returns.
    const events = await m.events.list({ conversationId: 'c-high' })
    expect(events.map((e) => e.content.text ?? e.content.title ?? e.content.tool)).toEqual([
      `My ${WORD} account number is 4411; where is it used?`,
      `The ${WORD} account pays the payroll run.`,
      'search_ledger',
      'search_ledger',
      `Rotate the ${WORD} keys`,
    ])
    expect(events[2]?.content.args).toEqual({ query: `${WORD} 4411` })
    expect(events.every((e) => e.meta.sealed === true)).toBe(true)
    const resultEvent = events[3]
    const artifact = await m.artifacts.get(resultEvent?.content.artifactId as string)
    expect(artifact.content.startsWith(`${WORD} row\n`)).toBe(true)
    const graph = await m.graph.conversation('c-high')
    const read = graph.edges.find((e) => e.rel === 'read_file')
    expect(read?.props).toEqual({ args: { path: 'src/payroll.ts', note: `${WORD} lookup` }, effect: 'read' })
    expect((await m.memories.get(memory.id))?.content).toBe(`Ann's ${WORD} PIN hint is the harbour`)
    expect((await m.memories.history(memory.id))[0]?.newValue).toBe(`Ann's ${WORD} PIN hint is the harbour`)

    // The context bundle groups and shows sealed rows like plain ones.
    const bundle = await m.buildContext({ query: 'rotate keys', conversationId: 'c-high', maxTokens: 4000, retrieval: false })
    expect(bundle.sections.find((s) => s.name === 'task_state')?.items.map((i) => i.text).join('\n')).toContain(`Rotate the ${WORD} keys`)
    expect(bundle.text).toContain(`The ${WORD} account pays the payroll run.`)
    expect(bundle.text).not.toContain(SEALED_PREFIX)

    // What the task state groups by seals equally; other text under a random iv.
    const taskUpdate = {
      kind: 'task_update',
      scope: { conversationId: 'c-high', userId: 'ann' },
      actor: { type: 'agent', id: 'coder' },
      sensitivity: 'high',
    } as const
    const done = await m.record({ ...taskUpdate, content: { title: `Rotate the ${WORD} keys`, status: 'done', text: 'Rotated.' } })
    const twice = await m.record({ ...taskUpdate, content: { title: 'Other', status: 'open', text: 'Rotated.' } })
    const { rows: sealedRows } = await db.query<{ title: string; text: string | null }>(
      `SELECT content ->> 'title' AS title, content ->> 'text' AS text FROM events WHERE id = ANY($1) ORDER BY seq`,
      [[task.eventId, done.eventId, twice.eventId]],
    )
    expect(sealedRows[0]?.title).toBe(sealedRows[1]?.title)
    expect(sealedRows[1]?.text).not.toBe(sealedRows[2]?.text)
    // The task is closed: its two updates are one task to the database.
    const after = await m.buildContext({ query: 'rotate keys', conversationId: 'c-high', maxTokens: 4000, retrieval: false })
    expect(after.sections.find((x) => x.name === 'task_state')?.items.map((i) => i.text)).toEqual(['- [open] Other: Rotated.'])

    // Search keeps no index of sealed text: neither keyword nor vector finds it.
    const hits = await m.search(`${WORD} account`, { limit: 10 })
    expect(hits.map((h) => h.conversationId)).not.toContain('c-high')
    expect(hits.every((h) => h.explain.keyword === null)).toBe(true)
    expect((await m.memories.search(`${WORD} PIN`, { limit: 10 })).map((r) => r.id)).not.toContain(memory.id)
    // The indexer does not wait for vectors it will never make.
    expect((await m.indexing()).pending).toBe(0)

    // The same text again is unchanged; marked otherwise, it is restated.
    expect((await m.remember({ content: `ann's ${WORD} pin hint is the  harbour`, category: 'fact', source: 'explicit', sensitivity: 'high' })).action).toBe('unchanged')
    const restated = await m.remember({ content: `Ann's ${WORD} PIN hint is the harbour`, category: 'fact', source: 'explicit', sensitivity: 'low' })
    expect(restated).toMatchObject({ action: 'superseded', supersededId: memory.id })
    expect(await tablesMentioning(db, WORD)).toEqual(['memories', 'memory_history'])
    await db.close()
  })

  it('seals what was stored before the vault, refuses a wrong key, and is locked without one', async () => {
    const db = await openTestDb()
    const plain = await engineOver(db)
    expect(await plain.vault.status()).toBe('none')
    const { memory } = await writeHigh(plain)
    expect(await tablesMentioning(db, WORD)).toEqual(SEALED_TABLES)
    await plain.stopIndexing()

    const sealed = await engineOver(db, { vault: { passphrase: PASSPHRASE } })
    expect(await tablesMentioning(db, WORD)).toEqual([])
    expect((await sealed.events.list({ conversationId: 'c-high' }))[0]?.content.text).toBe(`My ${WORD} account number is 4411; where is it used?`)
    expect((await sealed.memories.get(memory.id))?.content).toBe(`Ann's ${WORD} PIN hint is the harbour`)
    await sealed.stopIndexing()

    expect(await codeOf(engineOver(db, { vault: { passphrase: 'wrong horse battery' } }))).toBe('WRONG_PASSPHRASE')
    const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])
    expect(await codeOf(engineOver(db, { vault: { key } }))).toBe('WRONG_PASSPHRASE')
    expect(await codeOf(engineOver(db, { vault: { passphrase: 'short' } }))).toBe('INVALID_INPUT')
    expect(await codeOf(engineOver(db, { vault: { key: 'not a key' } as never }))).toBe('INVALID_INPUT')
    const signing = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    expect(await codeOf(engineOver(db, { vault: { key: signing } }))).toBe('INVALID_INPUT')

    // Opened without its key: sealed text reads as stored, high writes and exports are refused.
    const locked = await engineOver(db)
    expect(await locked.vault.status()).toBe('locked')
    expect((await locked.stats()).vault).toBe('locked')
    const text = (await locked.events.list({ conversationId: 'c-high' }))[0]?.content.text
    expect((text as string).startsWith(SEALED_PREFIX)).toBe(true)
    // What an app shows in place of it: the package's `isSealed` tells sealed text apart.
    expect(isSealed(text)).toBe(true)
    expect(isSealed((await locked.events.list({ conversationId: 'c-plain' }))[0]?.content.text)).toBe(false)
    const high = { kind: 'message', scope: { conversationId: 'c-high' }, actor: { type: 'human', id: 'ann' }, content: { text: 'more' } } as const
    expect(await codeOf(locked.record({ ...high, sensitivity: 'high' }))).toBe('VAULT_LOCKED')
    expect(await codeOf(locked.recordTurn({ conversationId: 'c-high', user: 'a', agent: 'b', sensitivity: 'high' }))).toBe('VAULT_LOCKED')
    expect(await codeOf(locked.remember({ content: 'x y z', category: 'fact', sensitivity: 'high' }))).toBe('VAULT_LOCKED')
    expect(await codeOf(locked.memories.update(memory.id, { sensitivity: 'none' }))).toBe('VAULT_LOCKED')
    expect(await codeOf(locked.exportFile())).toBe('VAULT_LOCKED')
    expect(await codeOf(locked.record({ ...high, sensitivity: 'low' }))).toBe('none')
    await db.close()
  })

  it('refuses plain text that would read as sealed', async () => {
    const db = await openTestDb()
    const m = await engineOver(db, { vault: { passphrase: PASSPHRASE } })
    const lookalike = `${SEALED_PREFIX}bm90IHNlYWxlZA==`
    const say = { kind: 'message', scope: { conversationId: 'c1' }, actor: { type: 'human', id: 'ann' }, sensitivity: 'high' } as const
    expect(await codeOf(m.record({ ...say, content: { text: lookalike } }))).toBe('INVALID_INPUT')
    expect(await codeOf(m.record({ ...say, content: { text: `see ${lookalike}` } }))).toBe('INVALID_INPUT')
    expect(await codeOf(m.recordTurn({ conversationId: 'c1', user: 'a', agent: 'b', procedures: [{ tool: 't', args: { q: lookalike } }] }))).toBe('INVALID_INPUT')
    expect(await codeOf(m.remember({ content: lookalike, category: 'fact', sensitivity: 'high' }))).toBe('INVALID_INPUT')
    const { id } = await m.remember({ content: 'plain fact', category: 'fact' })
    expect(await codeOf(m.memories.update(id, { content: lookalike }))).toBe('INVALID_INPUT')
    // The private-use character alone is ordinary text.
    expect(await codeOf(m.record({ ...say, content: { text: 'icon \uE000 here' } }))).toBe('none')
    expect((await m.events.list({ conversationId: 'c1' })).length).toBe(1)
    await db.close()
  })

  it('setKey makes a vault on a memory without one, and wraps the data key under a new key', async () => {
    const db = await openTestDb()
    const m = await engineOver(db)
    const { task } = await writeHigh(m)
    expect(await m.vault.setKey({ passphrase: PASSPHRASE })).toBe('open')
    expect(await tablesMentioning(db, WORD)).toEqual([])
    expect((await m.events.get(task.eventId)).content.title).toBe(`Rotate the ${WORD} keys`)
    const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])
    expect(await m.vault.setKey({ key })).toBe('open')
    expect(await codeOf(m.vault.setKey({ passphrase: 'short' }))).toBe('INVALID_INPUT')
    await m.stopIndexing()
    // The old passphrase opens it no more; the new key opens what was sealed before the change.
    expect(await codeOf(engineOver(db, { vault: { passphrase: PASSPHRASE } }))).toBe('WRONG_PASSPHRASE')
    const reopened = await engineOver(db, { vault: { key } })
    expect((await reopened.events.get(task.eventId)).content.title).toBe(`Rotate the ${WORD} keys`)
    await reopened.stopIndexing()
    const locked = await engineOver(db)
    expect(await codeOf(locked.vault.setKey({ passphrase: PASSPHRASE }))).toBe('VAULT_LOCKED')
    await db.close()
  })

  it('a vault made by setKey, or by the first open with one, restores the archives made without it, sealed', async () => {
    for (const how of ['setKey', 'open'] as const) {
      const db = await openTestDb()
      const m = await engineOver(db)
      const { turn } = await writeHigh(m)
      await m.archives.create({ conversationIds: ['c-high'] })
      // The archive's file holds the rows plain (compressed): restored, they would come back plain.
      expect(await m.archives.list()).toHaveLength(1)
      await m.stopIndexing()
      const vaulted = how === 'setKey' ? m : await engineOver(db, { vault: { passphrase: PASSPHRASE } })
      if (how === 'setKey') expect(await m.vault.setKey({ passphrase: PASSPHRASE })).toBe('open')
      expect(await vaulted.archives.list(), how).toEqual([])
      expect(await tablesMentioning(db, WORD), how).toEqual([])
      expect((await vaulted.events.get(turn.userEventId)).content.text, how).toContain(WORD)
      await vaulted.stopIndexing()
      await db.close()
    }
  })

  it('check tells whether a key fits the vault, and changes nothing', async () => {
    const db = await openTestDb()
    const plain = await engineOver(db)
    expect(await plain.vault.check({ passphrase: PASSPHRASE })).toBe('none')
    expect(await plain.vault.status()).toBe('none')
    expect(await codeOf(plain.vault.check({ passphrase: 'short' }))).toBe('INVALID_INPUT')
    await plain.vault.setKey({ passphrase: PASSPHRASE })
    const wrapped = (await db.query<{ wrapped: Uint8Array }>('SELECT wrapped FROM vault')).rows
    expect(await plain.vault.check({ passphrase: PASSPHRASE })).toBe('open')
    expect(await codeOf(plain.vault.check({ passphrase: 'another long passphrase' }))).toBe('WRONG_PASSPHRASE')
    expect((await db.query<{ wrapped: Uint8Array }>('SELECT wrapped FROM vault')).rows).toEqual(wrapped)
    await plain.stopIndexing()
    // A memory opened without its key is locked, whatever key is checked against it.
    const locked = await engineOver(db)
    expect(await locked.vault.check({ passphrase: PASSPHRASE })).toBe('locked')
    await locked.stopIndexing()
    await db.close()
  })

  it('setKey seals the high writes that were already under way when it was called', async () => {
    const db = await openTestDb()
    const m = await engineOver(db)
    // Each write starts before the key is set and commits after: none of them may land plain.
    const writes = Promise.all([
      writeHigh(m),
      m.remember({ content: `The ${WORD} vault code is 7`, category: 'fact', source: 'explicit', sensitivity: 'high' }),
      m.record({
        kind: 'message',
        scope: { conversationId: 'c-race', userId: 'ann' },
        actor: { type: 'human', id: 'ann' },
        sensitivity: 'high',
        content: { text: `${WORD} in flight` },
      }),
    ])
    const keyed = m.vault.setKey({ passphrase: PASSPHRASE })
    const [[{ turn, task }, remembered, event], status] = await Promise.all([writes, keyed])
    expect(status).toBe('open')
    expect(turn.chunkIds).toEqual([])
    expect(event.chunkIds).toEqual([])
    expect(await tablesMentioning(db, WORD)).toEqual([])
    expect((await m.events.get(task.eventId)).content.title).toBe(`Rotate the ${WORD} keys`)
    expect((await m.events.get(event.eventId)).content.text).toBe(`${WORD} in flight`)
    expect((await m.memories.get(remembered.id))?.content).toBe(`The ${WORD} vault code is 7`)
    await m.stopIndexing()
    await db.close()
  })

  it('reads that wait behind setKey come back plain', async () => {
    const db = await openTestDb()
    const m = await engineOver(db)
    const { id } = await m.remember({ content: `The ${WORD} hint is the dog's name`, category: 'fact', sensitivity: 'high' })
    // Called before the key is set, run after it has sealed the row.
    const keyed = m.vault.setKey({ passphrase: PASSPHRASE })
    const [got, listed] = await Promise.all([m.memories.get(id), m.memories.list({}), keyed])
    expect(got?.content).toBe(`The ${WORD} hint is the dog's name`)
    expect(listed.map((memory) => memory.content)).toEqual([`The ${WORD} hint is the dog's name`])
    await m.stopIndexing()
    await db.close()
  })

  it('exports open text, and the importing memory seals it under its own vault or keeps it plain', async () => {
    const a = await openTestDb()
    const source = await engineOver(a, { vault: { passphrase: PASSPHRASE } })
    const { memory } = await writeHigh(source)
    const file = await source.exportFile()
    const body = await new Response(
      new Blob([new Uint8Array(await file.arrayBuffer()).subarray(9)]).stream().pipeThrough(new DecompressionStream('gzip')),
    ).text()
    expect(body).toContain(`Rotate the ${WORD} keys`)
    expect(body).not.toContain(SEALED_PREFIX)
    expect(body).not.toContain('"sealed"')

    const b = await openTestDb()
    const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])
    const other = await engineOver(b, { vault: { key } })
    await other.importFile(file, { mode: 'replace' })
    expect(await tablesMentioning(b, WORD)).toEqual([])
    expect((await other.events.list({ conversationId: 'c-high' })).map((e) => e.content.text ?? e.content.title)).toContain(
      `Rotate the ${WORD} keys`,
    )
    expect((await other.memories.get(memory.id))?.content).toBe(`Ann's ${WORD} PIN hint is the harbour`)

    const c = await openTestDb()
    const open = await engineOver(c)
    await open.importFile(file)
    await open.indexNow()
    expect((await open.search(`${WORD} account`, { limit: 3 })).length).toBeGreaterThan(0)
    // Its plain hash again: the same text is the same memory.
    expect((await open.remember({ content: `Ann's ${WORD} PIN hint is the harbour`, category: 'fact', source: 'explicit', sensitivity: 'high' })).action).toBe('unchanged')
    for (const db of [a, b, c]) await db.close()
  })

  it('moves a memory into and out of the vault as its sensitivity changes', async () => {
    const db = await openTestDb()
    const m = await engineOver(db, { vault: { passphrase: PASSPHRASE } })
    const { id } = await m.remember({ content: `The ${WORD} gate code changes monthly`, category: 'fact', source: 'explicit' })
    await m.indexNow()
    expect(await tablesMentioning(db, WORD)).toEqual(['memories', 'memory_history'])
    await m.memories.update(id, { sensitivity: 'high' })
    expect(await tablesMentioning(db, WORD)).toEqual(['memory_history'])
    const { rows } = await db.query<{ vector: string | null }>(`SELECT vector::text FROM memories WHERE id = $1`, [id])
    expect(rows[0]?.vector).toBeNull()
    await m.memories.update(id, { content: `The ${WORD} gate code changes weekly` })
    expect((await m.memories.get(id))?.content).toBe(`The ${WORD} gate code changes weekly`)
    expect(await tablesMentioning(db, 'weekly')).toEqual([])
    // Out of the vault, its text and the history entry of the change are plain again.
    await m.memories.update(id, { sensitivity: 'none' })
    expect(await tablesMentioning(db, 'weekly')).toEqual(['memories', 'memory_history'])
    await m.indexNow()
    expect((await m.memories.search(`${WORD} gate weekly`, { limit: 1 }))[0]?.id).toBe(id)
    await db.close()
  })

  it('keeps archived high conversations sealed and restores them readable', async () => {
    const db = await openTestDb()
    const m = await engineOver(db, { vault: { passphrase: PASSPHRASE } })
    await writeHigh(m)
    const [archive] = await m.archives.create({ conversationIds: ['c-high'] })
    const { rows } = await db.query<{ file: Uint8Array }>(`SELECT file FROM archives WHERE id = $1`, [archive?.id])
    const bytes = new Uint8Array(rows[0]?.file ?? [])
    const text = await new Response(new Blob([bytes.subarray(9)]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
    expect(text).toContain(SEALED_PREFIX)
    expect(text).not.toContain(WORD)
    await m.archives.restore(String(archive?.id))
    expect(await tablesMentioning(db, WORD)).toEqual([])
    expect((await m.events.list({ conversationId: 'c-high' }))[0]?.content.text).toBe(`My ${WORD} account number is 4411; where is it used?`)
    await db.close()
  })
})
