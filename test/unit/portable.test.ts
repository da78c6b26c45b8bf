import { describe, expect, it } from 'vitest'
import type { Engine } from '../../src/core/engine.ts'
import { memoryHash } from '../../src/core/kernel/hash.ts'
import { createHashEmbedder } from '../../src/embed/hash-embedder.ts'
import { openTestEngine } from '../support/engine.ts'
import { codeOf } from '../support/errors.ts'
import { editedExport } from '../support/export-file.ts'

const T0 = Date.parse('2026-03-01T09:00:00Z')

/** A small memory touching every ground-truth table. */
async function populate(engine: Engine) {
  const at = (m: number) => new Date(T0 + m * 60_000).toISOString()
  await engine.recordTurn({
    conversationId: 'c1',
    user: 'Why does login fail?',
    agent: 'The token check compares against an expired key; fixed in src/auth.ts.',
    procedures: [
      { tool: 'read_file', args: { path: '/repo/src/auth.ts' }, document: { path: '/repo/src/auth.ts', content: 'v1', effect: 'read' } },
      { tool: 'write_file', args: { path: '/repo/src/auth.ts' }, document: { path: '/repo/src/auth.ts', content: 'v2', effect: 'write' } },
      { tool: 'run_tests', args: { filter: 'auth' }, output: '12 passed' },
    ],
    createdAt: at(0),
  })
  await engine.record({
    kind: 'decision',
    scope: { conversationId: 'c1', userId: 'u1' },
    actor: { type: 'agent', id: 'assistant' },
    content: { text: 'Rotate signing keys monthly' },
    createdAt: at(1),
  })
  await engine.remember({ content: 'The user prefers tabs over spaces', category: 'preference', userId: 'u1' })
  await engine.kv.put('repo:engram', 'constraints', 'network', { text: 'Never call the network' })
  await engine.graph.putNode({ id: 'file:src/auth.ts', type: 'file', payload: { lang: 'ts' } })
}

async function snapshot(engine: Engine) {
  const stats = await engine.stats()
  const conversation = await engine.graph.conversation('c1')
  const history = await engine.documents.history('/repo/src/auth.ts')
  const memories = await engine.memories.list({ userId: 'u1' })
  return { counts: stats.counts, conversation, history, memories }
}

async function corruptBody(file: Blob, edit: (jsonl: string) => string): Promise<Blob> {
  const bytes = new Uint8Array(await file.arrayBuffer())
  const header = bytes.subarray(0, 9)
  const text = await new Response(new Blob([bytes.subarray(9)]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
  const gz = await new Response(new Blob([edit(text)]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer()
  return new Blob([header, gz])
}

describe('one-file export and import', () => {
  it('replace restores the same memory: rows, graph, versions, memories and chunks', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const before = await snapshot(source.engine)
    // Derived from the events on import, as the chunks are: counted among the rows compared.
    expect(before.counts.actor_terms).toBeGreaterThan(0)
    const file = await source.engine.exportFile()
    expect(file.size).toBeGreaterThan(100)

    await using target = await openTestEngine()
    await target.engine.recordTurn({ conversationId: 'other', user: 'to be replaced', agent: 'gone' })
    const report = await target.engine.importFile(file, { mode: 'replace' })
    expect(report.mode).toBe('replace')
    expect(report.inserted.events).toBe(before.counts.events)
    expect(await snapshot(target.engine)).toEqual(before)
    expect(await target.engine.events.list({ conversationId: 'other' })).toEqual([])
  })

  it('a memory whose identical document contents are stored once restores them, shared', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const copy = await source.engine.observeDocument({ path: '/repo/vendor/auth.ts', content: 'v2', conversationId: 'c2' })
    expect(await source.engine.documents.deduplicate()).toMatchObject({ contents: 1, versions: 1 })
    const before = await source.engine.documents.version(copy.versionId)
    expect(before).toMatchObject({ content: 'v2', contentOf: expect.stringMatching(/^ver_/) })

    for (const mode of ['replace', 'merge'] as const) {
      await using target = await openTestEngine()
      await target.engine.importFile(await source.engine.exportFile(), { mode })
      expect(await target.engine.documents.version(copy.versionId)).toEqual(before)
      expect(await target.engine.documents.deduplicate()).toEqual({ contents: 0, versions: 0, bytesFreed: 0 })
    }
  })

  it('serializes deterministically: the same memory gives the same bytes, and so does the memory its file restores', async () => {
    const now = () => new Date(T0 + 3_600_000)
    const embedder = createHashEmbedder({ dims: 32 })
    await using source = await openTestEngine({ now, embedder, indexing: 'manual' })
    await populate(source.engine)
    await source.engine.indexNow()
    const bytes = async (engine: Engine, options?: Parameters<Engine['exportFile']>[0]) =>
      Buffer.from(await (await engine.exportFile(options)).arrayBuffer())
    const first = await bytes(source.engine)
    expect(await bytes(source.engine)).toEqual(first)
    const withoutVectors = await bytes(source.engine, { includeVectors: false })
    expect(withoutVectors.length).toBeLessThan(first.length)

    // A snapshot taken of the restored memory is the snapshot it was restored from.
    await using target = await openTestEngine({ now, embedder, indexing: 'manual' })
    await target.engine.recordTurn({ conversationId: 'other', user: 'to be replaced', agent: 'gone' })
    await target.engine.importFile(new Blob([first]), { mode: 'replace' })
    expect(await bytes(target.engine)).toEqual(first)
    expect(await bytes(target.engine, { includeVectors: false })).toEqual(withoutVectors)

    // Anything written afterwards shows in the bytes.
    await target.engine.remember({ content: 'The user deploys on Fridays', category: 'fact', userId: 'u1' })
    expect(await bytes(target.engine)).not.toEqual(first)
  })

  it("orders each table's rows by its primary key, however they were written", async () => {
    const now = () => new Date(T0)
    const nodeLines = async (engine: Engine) => {
      const bytes = new Uint8Array(await (await engine.exportFile()).arrayBuffer())
      const text = await new Response(new Blob([bytes.subarray(9)]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
      return text.split('\n').filter((line) => line.startsWith('{"t":"nodes"'))
    }
    const node = (tenantId: string, v: number) => ({ id: 'file:src/app.ts', type: 'file', payload: { v }, tenantId })
    // The same three revisions, tenant b's first in one memory and last in the other.
    await using one = await openTestEngine({ now })
    for (const input of [node('b', 1), node('a', 1), node('a', 2)]) await one.engine.graph.putNode(input)
    await using other = await openTestEngine({ now })
    for (const input of [node('a', 1), node('a', 2), node('b', 1)]) await other.engine.graph.putNode(input)
    const lines = await nodeLines(one.engine)
    expect(lines).toHaveLength(3)
    expect(await nodeLines(other.engine)).toEqual(lines)
    expect(lines.map((l) => (JSON.parse(l) as { r: { tenant_id: string; rev: number } }).r).map((r) => `${r.tenant_id}${r.rev}`)).toEqual(['a1', 'a2', 'b1'])
  })

  it('merge adds what is missing and is idempotent', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const file = await source.engine.exportFile()

    await using target = await openTestEngine()
    // A relation the source never had takes the next serial id here: edges must follow names.
    await target.engine.graph.defineRelation('owned_by')
    await target.engine.recordTurn({ conversationId: 'mine', user: 'keep me', agent: 'kept' })
    const first = await target.engine.importFile(file)
    const afterFirst = await target.engine.stats()
    const second = await target.engine.importFile(file)
    expect(Object.values(second.inserted).every((n) => n === 0)).toBe(true)
    expect((await target.engine.stats()).counts).toEqual(afterFirst.counts)
    expect(first.inserted.events).toBeGreaterThan(0)
    expect((await target.engine.events.list({ conversationId: 'mine' })).length).toBe(2)
    const merged = await target.engine.graph.conversation('c1')
    const expected = await source.engine.graph.conversation('c1')
    expect(merged.edges.map((e) => e.rel).sort()).toEqual(expected.edges.map((e) => e.rel).sort())
  })

  it('encrypts with a passphrase and refuses a wrong or missing one', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const file = await source.engine.exportFile({ passphrase: 'correct horse battery staple' })
    const text = new TextDecoder().decode(new Uint8Array(await file.arrayBuffer()))
    expect(text).not.toContain('login')

    await using target = await openTestEngine()
    expect(await codeOf(target.engine.importFile(file))).toBe('WRONG_PASSPHRASE')
    expect(await codeOf(target.engine.importFile(file, { passphrase: 'wrong' }))).toBe('WRONG_PASSPHRASE')
    await target.engine.importFile(file, { passphrase: 'correct horse battery staple', mode: 'replace' })
    expect(await snapshot(target.engine)).toEqual(await snapshot(source.engine))
  })

  it('carries chunk vectors when asked, and leaves them to be rebuilt when not', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    await source.db.query(
      `UPDATE chunks SET embedding = array_fill(0.25::real, ARRAY[4])::vector, embed_model = 'test/4'`,
    )
    const withVectors = await source.engine.exportFile()
    const without = await source.engine.exportFile({ includeVectors: false })
    expect(without.size).toBeLessThan(withVectors.size)

    await using a = await openTestEngine()
    const report = await a.engine.importFile(withVectors, { mode: 'replace' })
    const { rows } = await a.db.query<{ n: number; model: string }>(
      `SELECT count(*)::int AS n, min(embed_model) AS model FROM chunks WHERE embedding = '[0.25,0.25,0.25,0.25]'`,
    )
    expect(rows[0]).toEqual({ n: report.vectorsRestored, model: 'test/4' })
    expect(report.vectorsRestored).toBe((await source.engine.stats()).counts.chunks)

    await using b = await openTestEngine()
    await b.engine.importFile(without, { mode: 'replace' })
    const { rows: none } = await b.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM chunks WHERE embedding IS NOT NULL`)
    expect(none[0]?.n).toBe(0)
  })

  it("a file's vectors go only to the chunks of the events it adds, never to those of events the memory holds", async () => {
    await using mine = await openTestEngine()
    await populate(mine.engine)
    // Every chunk of this memory waits for a vector; a file holding the same events brings some.
    const file = await mine.engine.exportFile()
    await using other = await openTestEngine()
    await other.engine.importFile(file, { mode: 'replace' })
    await other.engine.record({ kind: 'message', scope: { conversationId: 'c2' }, actor: { type: 'human', id: 'bo' }, content: { text: 'a new note' } })
    await other.db.query(`UPDATE chunks SET embedding = array_fill(0.5::real, ARRAY[4])::vector, embed_model = 'test/4'`)
    const report = await mine.engine.importFile(await other.engine.exportFile())
    const { rows } = await mine.db.query<{ text: string }>(`SELECT text FROM chunks WHERE embedding IS NOT NULL`)
    expect(rows.map((r) => r.text)).toEqual(['a new note'])
    expect(report.vectorsRestored).toBe(1)
  })

  it('rejects damaged, foreign and newer files and leaves the memory exactly as it was', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const good = await source.engine.exportFile()
    const bytes = new Uint8Array(await good.arrayBuffer())

    await using target = await openTestEngine()
    await target.engine.recordTurn({ conversationId: 'mine', user: 'precious', agent: 'kept' })
    const before = (await target.engine.stats()).counts

    const flipped = bytes.slice()
    flipped[Math.floor(flipped.length / 2)] = (flipped[Math.floor(flipped.length / 2)] as number) ^ 0xff
    const newerContainer = bytes.slice()
    newerContainer[7] = 2
    const random = crypto.getRandomValues(new Uint8Array(4096))

    const cases: [string, Blob, string][] = [
      ['truncated', new Blob([bytes.subarray(0, Math.floor(bytes.length * 0.6))]), 'IMPORT_CORRUPT'],
      ['flipped byte', new Blob([flipped]), 'IMPORT_CORRUPT'],
      ['random bytes', new Blob([random]), 'IMPORT_CORRUPT'],
      ['empty', new Blob([]), 'IMPORT_CORRUPT'],
      ['newer container', new Blob([newerContainer]), 'IMPORT_UNSUPPORTED_VERSION'],
      [
        'wrong checksum',
        await corruptBody(good, (t) => t.replace('precious', 'x').replace('login', 'LOGIN')),
        'IMPORT_CORRUPT',
      ],
      [
        'newer format',
        await corruptBody(good, (t) => t.replace('"formatVersion":1', '"formatVersion":99')),
        'IMPORT_UNSUPPORTED_VERSION',
      ],
      [
        'edited row (checksum mismatch)',
        // The edited row no longer matches the table's checksum.
        await corruptBody(good, (t) => t.replace(/"kind": ?"message"/, '"kind": "bogus"')),
        'IMPORT_CORRUPT',
      ],
    ]
    for (const [name, file, code] of cases) {
      for (const mode of ['replace', 'merge'] as const) {
        expect([name, mode, await codeOf(target.engine.importFile(file, { mode }))]).toEqual([name, mode, code])
      }
    }
    expect((await target.engine.stats()).counts).toEqual(before)
  })

  it('a file that would take minutes to unlock, or inflate past what it could hold, is refused before either', async () => {
    const { openSnapshot } = await import('../../src/core/portable/snapshot.ts')
    await using t = await openTestEngine()
    const header = (flags: number) => [...new TextEncoder().encode('ENGRAM\u0000'), 1, flags]
    // Encrypted, naming 2³² − 1 iterations of the key derivation (and 5).
    for (const iterations of [0xffffffff, 5]) {
      const bytes = new Uint8Array([...header(1), ...new Uint8Array(28), 0, 0, 0, 0, ...new Uint8Array(64)])
      new DataView(bytes.buffer).setUint32(header(1).length + 28, iterations)
      const started = Date.now()
      expect(await codeOf(t.engine.importFile(new Blob([bytes]), { passphrase: 'a long passphrase' }))).toBe('IMPORT_CORRUPT')
      expect(await codeOf(openSnapshot(bytes, { passphrase: 'a long passphrase' }))).toBe('IMPORT_CORRUPT')
      expect(Date.now() - started).toBeLessThan(5_000)
    }
    // 80 MiB of spaces, gzipped to a few hundred KiB: a thousandfold.
    const spaces = new Blob([new Uint8Array(80 * 2 ** 20).fill(32)]).stream().pipeThrough(new CompressionStream('gzip'))
    const body = new Uint8Array(await new Response(spaces).arrayBuffer())
    const bomb = new Uint8Array([...header(0), ...body])
    const error = await t.engine.importFile(new Blob([bomb])).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'IMPORT_CORRUPT' })
    expect((error as Error).message).toMatch(/inflates past/)
    expect(await codeOf(openSnapshot(bomb))).toBe('IMPORT_CORRUPT')
  })

  it('a file written before edges carried their document imports with it filled in', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const { sha256Hex } = await import('../../src/core/kernel/hash.ts')
    const bytes = new Uint8Array(await (await source.engine.exportFile()).arrayBuffer())
    const text = await new Response(new Blob([bytes.subarray(9)]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
    const lines = text.trimEnd().split('\n')
    // As schema 5 wrote it: no document_id column on edges.
    const manifest = JSON.parse(lines[0] as string) as {
      schemaVersion: number
      tables: Record<string, { sha256: string; columns: string[] }>
    }
    manifest.schemaVersion = 5
    const edges = manifest.tables.edges as { sha256: string; columns: string[] }
    edges.columns = edges.columns.filter((c) => c !== 'document_id')
    const body = lines.slice(1).map((l) => {
      if (!l.startsWith('{"t":"edges"')) return l
      const row = JSON.parse(l) as { t: string; r: Record<string, unknown> }
      delete row.r.document_id
      return `{"t":"edges","r":${JSON.stringify(row.r)}}`
    })
    edges.sha256 = sha256Hex(body.filter((l) => l.startsWith('{"t":"edges"')).join('\n'))
    const jsonl = `${[JSON.stringify(manifest), ...body].join('\n')}\n`
    const gz = await new Response(new Blob([jsonl]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer()

    await using target = await openTestEngine()
    await target.engine.importFile(new Blob([bytes.subarray(0, 9), gz]), { mode: 'replace' })
    const { rows } = await target.db.query<{ filled: number; wrong: number }>(
      `SELECT count(*) FILTER (WHERE e.document_id IS NOT NULL)::int AS filled,
              count(*) FILTER (WHERE e.document_id IS DISTINCT FROM v.document_id)::int AS wrong
       FROM edges e LEFT JOIN doc_versions v ON v.id = e.dst`,
    )
    expect(rows[0]).toEqual({ filled: 2, wrong: 0 }) // read_file and write_file → their versions
  })

  it('a row that breaks a constraint rolls the whole import back', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    // Rewrite the file properly (valid checksums) but with an event the schema refuses.
    const file = await editedExport(await source.engine.exportFile(), 'events', (row) => {
      if (row.kind === 'message') row.kind = 'bogus'
    })

    await using target = await openTestEngine()
    await target.engine.recordTurn({ conversationId: 'mine', user: 'precious', agent: 'kept' })
    const before = (await target.engine.stats()).counts
    for (const mode of ['replace', 'merge'] as const) {
      expect(await codeOf(target.engine.importFile(file, { mode }))).toBe('IMPORT_CORRUPT')
    }
    expect((await target.engine.stats()).counts).toEqual(before)
  })

  it('a file naming a turn number or relation id the memory could not count on from is refused', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const written = await source.engine.exportFile()
    const edited = (table: string, edit: (row: Record<string, unknown>) => void) => editedExport(written, table, edit)
    await using target = await openTestEngine()
    const lastTurn = await edited('events', (r) => {
      if (r.turn_index !== null) r.turn_index = 2 ** 31 - 1
    })
    const lastRelation = await edited('relations', (r) => {
      r.id = 2 ** 31 - 1
    })
    for (const file of [lastTurn, lastRelation]) {
      for (const mode of ['merge', 'replace'] as const) expect(await codeOf(target.engine.importFile(file, { mode }))).toBe('IMPORT_CORRUPT')
    }
    // The file as written imports, and the memory writes on after it.
    await target.engine.importFile(await edited('events', () => {}), { mode: 'replace' })
    await target.engine.recordTurn({ conversationId: 'c1', user: 'more', agent: 'ok' })
  })

  it("a file's sealed text where a vault seals, or an event marked sealed, is refused; a memory's hash is made again from its text", async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const written = await source.engine.exportFile()
    const edited = (table: string, edit: (row: Record<string, unknown>) => void) => editedExport(written, table, edit)
    await using target = await openTestEngine()
    const sealed = '\uE000sealed1:AAAA'
    const refused = [
      await edited('events', (r) => {
        if (r.kind === 'decision') r.content = { text: sealed }
      }),
      await edited('events', (r) => {
        if (r.kind === 'decision') r.meta = { sealed: true }
      }),
      await edited('memories', (r) => {
        r.content = sealed
      }),
      await edited('memory_history', (r) => {
        r.new_value = sealed
      }),
    ]
    for (const file of refused) {
      for (const mode of ['merge', 'replace'] as const) expect(await codeOf(target.engine.importFile(file, { mode }))).toBe('IMPORT_CORRUPT')
    }
    expect((await target.engine.stats()).counts).toMatchObject({ events: 0, memories: 0 })

    // A memory whose hash names another text: it is that memory's own text that dedupes.
    const other = 'Deploys happen on Fridays'
    const plantedHash = memoryHash(other)
    await target.engine.importFile(await edited('memories', (r) => void (r.hash = plantedHash)))
    const [imported] = await target.engine.memories.list({ userId: 'u1' })
    expect(imported?.hash).toBe(memoryHash('The user prefers tabs over spaces'))
    expect((await target.engine.remember({ content: 'the user prefers TABS over spaces', category: 'preference', userId: 'u1' })).id).toBe(imported?.id)
    const deploys = await target.engine.remember({ content: other, category: 'fact', userId: 'u1' })
    expect(deploys.id).not.toBe(imported?.id)
    expect((await target.engine.memories.get(deploys.id))?.content).toBe(other)
  })

  it('validates its options', async () => {
    await using m = await openTestEngine()
    expect(await codeOf(m.engine.exportFile({ passphrase: '' }))).toBe('INVALID_INPUT')
    expect(await codeOf(m.engine.importFile('not a blob' as unknown as Blob))).toBe('INVALID_INPUT')
    const file = await m.engine.exportFile()
    expect(await codeOf(m.engine.importFile(file, { mode: 'upsert' as 'merge' }))).toBe('INVALID_INPUT')
  })
})
