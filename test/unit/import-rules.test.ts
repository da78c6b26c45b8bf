import { describe, expect, it } from 'vitest'
import type { Engine } from '../../src/core/engine.ts'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { sha256Hex } from '../../src/core/kernel/hash.ts'
import { judgeImportedRows, MAX_EVENT_LINE_CHARS, refuseOversizedLine } from '../../src/core/portable/import-rules.ts'
import { MAX_EVENT_CONTENT_BYTES } from '../../src/core/kernel/limits.ts'
import { openTestEngine } from '../support/engine.ts'
import { secretCorpus } from '../support/secrets.ts'

type Line = { t: string; r: Record<string, unknown> }

/** A memory touching every table a hostile file is written against. */
async function populate(engine: Engine) {
  await engine.recordTurn({
    conversationId: 'c1',
    user: 'Why does login fail?',
    agent: 'The token check compares against an expired key; fixed in src/auth.ts.',
    procedures: [
      { tool: 'read_file', args: { path: '/repo/src/auth.ts' }, document: { path: '/repo/src/auth.ts', content: 'v1', effect: 'read' } },
      { tool: 'run_tests', args: { filter: 'auth' }, output: '12 passed' },
    ],
  })
  await engine.remember({ content: 'The user prefers tabs over spaces', category: 'preference', userId: 'u1' })
  await engine.kv.put('repo:engram', 'constraints', 'network', { text: 'Never call the network' })
  await engine.graph.putNode({ id: 'file:src/auth.ts', type: 'file', payload: { lang: 'ts' } })
}

/** The lines of an unencrypted export, and a way to write them back with fresh counts and checksums. */
async function openFile(file: Blob) {
  const bytes = new Uint8Array(await file.arrayBuffer())
  const text = await new Response(new Blob([bytes.subarray(9)]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
  const [head, ...body] = text.trimEnd().split('\n')
  const manifest = JSON.parse(head as string) as { tables: Record<string, { count: number; sha256: string; columns: string[] }> }
  const lines = body.map((l) => JSON.parse(l) as Line)
  /**
   * A file as a writer other than Engram could make it: every table's count and checksum
   * recomputed. `raw` replaces a placeholder string with JSON text too deep to stringify.
   */
  const write = async (edit: (lines: Line[], tables: typeof manifest.tables) => void, raw?: [string, string]) => {
    const copy = structuredClone(lines)
    const tables = structuredClone(manifest.tables)
    edit(copy, tables)
    const out = copy.map((l) => {
      const line = JSON.stringify(l)
      return raw ? line.replace(JSON.stringify(raw[0]), raw[1]) : line
    })
    for (const [table, info] of Object.entries(tables)) {
      const own = out.filter((_, i) => copy[i]?.t === table)
      info.count = own.length
      info.sha256 = sha256Hex(own.join('\n'))
    }
    const jsonl = `${[JSON.stringify({ ...manifest, tables }), ...out].join('\n')}\n`
    const gz = await new Response(new Blob([jsonl]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer()
    return new Blob([bytes.subarray(0, 9), gz])
  }
  return { lines, write }
}

/** Edits the first row of `table` (or the first that `which` picks). */
const first =
  (table: string, edit: (r: Record<string, unknown>) => void, which: (r: Record<string, unknown>) => boolean = () => true) =>
  (lines: Line[]) => {
    const line = lines.find((l) => l.t === table && which(l.r))
    if (!line) throw new Error(`no ${table} row to edit`)
    edit(line.r)
  }

const message = (r: Record<string, unknown>) => r.kind === 'message'

/** What a refused file must leave as it was: every count, and what a search finds. */
async function stateOf(engine: Engine) {
  const { counts } = await engine.stats()
  const hits = await engine.search('login token', { mode: 'keyword' })
  return { counts, hits: hits.map((h) => h.eventId) }
}

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!MemoryError.is(error)) return { code: error === undefined ? 'none' : `not a MemoryError: ${(error as Error).message}` }
  return { code: error.code, message: error.message, details: error.details }
}

describe('an imported row obeys the rules a written row obeys', () => {
  it('refuses each hostile file whole with IMPORT_CORRUPT naming the table, row and rule, and changes nothing', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    await source.db.query(`UPDATE chunks SET embedding = array_fill(0.25::real, ARRAY[4])::vector, embed_model = 'test/4'`)
    const { write } = await openFile(await source.engine.exportFile())
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`

    const variants: [name: string, file: Blob, table: string, rule: RegExp][] = [
      ['event content nested 5,000 deep', await write(first('events', (r) => void (r.content = { text: 'x', deep: '@DEEP@' }), message), ['@DEEP@', deep]), 'events', /deeper than 64/],
      ['event content a string', await write(first('events', (r) => void (r.content = 'just text'), message)), 'events', /JSON object/],
      ['event content an array', await write(first('events', (r) => void (r.content = ['a', 'b']), message)), 'events', /JSON object/],
      ['event id "{}"', await write(first('events', (r) => void (r.id = '{}'), message)), 'events', /id Engram makes for a event/],
      ['event tenant id an object', await write(first('events', (r) => void (r.tenant_id = { a: 1 }), message)), 'events', /string/],
      ['memory content 42', await write(first('memories', (r) => void (r.content = 42))), 'memories', /string/],
      ['created_at 0001-01-01 BC', await write(first('events', (r) => void (r.created_at = '0001-01-01T00:00:00+00:00 BC'), message)), 'events', /datetime|time/i],
      ['created_at in the year 10000', await write(first('events', (r) => void (r.created_at = '+010000-01-01T00:00:00Z'), message)), 'events', /datetime|time/i],
      ['a negative turn number', await write(first('events', (r) => void (r.turn_index = -1), message)), 'events', />=0|too small/i],
      ['an unknown table', await write((lines, tables) => {
        tables.secrets = { count: 0, sha256: '', columns: ['id'] }
        lines.push({ t: 'secrets', r: { id: 'x' } })
      }), 'secrets', /not a table/],
      ['an event id written twice', await write((lines) => {
        const twin = lines.find((l) => l.t === 'events' && message(l.r))
        lines.push(structuredClone(twin as Line))
      }), 'events', /repeats a key/],
      ['an edge naming a relation the file lacks', await write(first('edges', (r) => void (r.rel = 999))), 'edges', /relation/],
      ['an artifact of an event the file lacks', await write((lines) => {
        const event = lines.find((l) => l.t === 'events') as Line
        lines.push({ t: 'artifacts', r: { id: 'art_01kbvq9x1ye8xbp0p1pa3n1d0e', event_id: 'evt_01kbvq9x1ye8xbp0p1pa3n1d0f', tenant_id: 'default', media_type: 'text/plain', bytes: 1, sha256: '0'.repeat(64), content: 'x', created_at: event.r.created_at } })
      }), 'artifacts', /event/],
      ['a memory confidence of 7', await write(first('memories', (r) => void (r.confidence = 7))), 'memories', /<=1|too big/i],
      ['an edge ending before it starts', await write(first('edges', (r) => {
        r.valid_from = '2026-03-02T00:00:00+00:00'
        r.valid_to = '2026-03-01T00:00:00+00:00'
      })), 'edges', /valid_to/],
      ['a message without text', await write(first('events', (r) => void (r.content = { body: 'hi' }), message)), 'events', /needs content.text/],
      ['a vector whose model is 42', await write(first('@vectors', (r) => void (r.model = 42))), '@vectors', /string/],
      ['a vector that is not base64', await write(first('@vectors', (r) => void (r.v = '%%%'))), '@vectors', /base64/],
      ['a tag 1,000 characters long', await write(first('events', (r) => void (r.tags = ['t'.repeat(1000)]), message)), 'events', /200|too big/i],
    ]

    await using target = await openTestEngine()
    await populate(target.engine)
    await target.engine.recordTurn({ conversationId: 'mine', user: 'precious login token note', agent: 'kept' })
    const before = await stateOf(target.engine)
    expect(before.hits.length).toBeGreaterThan(0)
    const seen: string[] = []
    for (const [name, file, table, rule] of variants) {
      for (const mode of ['replace', 'merge'] as const) {
        const got = await refusal(target.engine.importFile(file, { mode }))
        expect([name, mode, got.code]).toEqual([name, mode, 'IMPORT_CORRUPT'])
        expect(got.details, name).toMatchObject({ table, row: expect.any(Number), rule: expect.stringMatching(rule) })
        expect(got.message, name).toContain(`"${table}" row ${(got.details as { row: number }).row}`)
      }
      seen.push(name)
    }
    expect(seen).toHaveLength(variants.length)
    expect(await stateOf(target.engine)).toEqual(before)
  })

  it('refuses an event just over the write limit quickly, and an oversized line before parsing it', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    const { write } = await openFile(await source.engine.exportFile())
    const big = await write(first('events', (r) => void (r.content = { text: 'x'.repeat(MAX_EVENT_CONTENT_BYTES) }), message))
    await using target = await openTestEngine()
    const before = await stateOf(target.engine)
    const started = Date.now()
    const got = await refusal(target.engine.importFile(big))
    expect(got).toMatchObject({ code: 'IMPORT_CORRUPT', details: { table: 'events', column: 'content', rule: expect.stringMatching(/MAX_EVENT_CONTENT_BYTES/) } })
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(await stateOf(target.engine)).toEqual(before)

    // A line too long for any event is refused before it is parsed.
    const line = `{"t":"events","r":{"content":{"text":"${'y'.repeat(MAX_EVENT_LINE_CHARS)}"}}}`
    expect(() => refuseOversizedLine(line, new Map([['events', 4]]))).toThrow(/"events" row 5/)
    expect(() => refuseOversizedLine('{"t":"events","r":{}}', new Map())).not.toThrow()
  })

  it('refuses a value of the wrong type in every column of every table an export holds', async () => {
    await using source = await openTestEngine()
    await populate(source.engine)
    await source.engine.graph.defineRelation('owned_by')
    await source.engine.remember({ content: 'Deploys run on Fridays', category: 'fact', userId: 'u1', context: 'work' })
    // Output longer than the excerpt is kept as an artifact.
    await source.engine.recordTurn({ conversationId: 'c2', user: 'show the log', agent: 'done', procedures: [{ tool: 'cat', args: {}, output: 'line\n'.repeat(15_000) }] })
    await source.engine.recordTurn({ conversationId: 'gone', user: 'forget me', agent: 'ok' })
    await source.engine.forget({ conversationId: 'gone' })
    await source.engine.graph.putEdge('file:src/auth.ts', 'owned_by', 'team:auth', { note: 'n' }, { validFrom: '2026-01-01T00:00:00Z', validTo: '2026-02-01T00:00:00Z' })
    const { lines } = await openFile(await source.engine.exportFile())
    const rows = new Map<string, Record<string, unknown>[]>()
    for (const l of lines) rows.set(l.t, [...(rows.get(l.t) ?? []), l.r])
    // The file as written passes.
    expect(() => judgeImportedRows(rows, new Map())).not.toThrow()
    const wrong = (v: unknown): unknown =>
      typeof v === 'string' ? 42 : typeof v === 'number' ? '7' : typeof v === 'boolean' ? 'true' : Array.isArray(v) ? 'x' : 'x'
    // Columns that hold any JSON value have no wrong type.
    const anyJson = new Set(['kv.payload', 'engram_meta.value'])
    const tried: string[] = []
    for (const [table, tableRows] of rows) {
      const row = tableRows[0] as Record<string, unknown>
      for (const [column, value] of Object.entries(row)) {
        if (value === null || anyJson.has(`${table}.${column}`)) continue
        const edited = new Map(rows)
        edited.set(table, [{ ...row, [column]: wrong(value) }, ...tableRows.slice(1)])
        let error: unknown
        try {
          judgeImportedRows(edited, new Map())
        } catch (e) {
          error = e
        }
        expect([table, column, MemoryError.is(error) ? error.code : String(error)]).toEqual([table, column, 'IMPORT_CORRUPT'])
        expect((error as MemoryError).details).toMatchObject({ table, row: 1, column })
        tried.push(`${table}.${column}`)
      }
    }
    expect(new Set(tried.map((c) => c.split('.')[0]))).toEqual(
      new Set(['artifacts', 'documents', 'doc_versions', 'edges', 'events', 'forget_log', 'kv', 'memories', 'memory_contexts', 'memory_history', 'nodes', 'relations']),
    )
  })

  it("redacts the file's secrets on the way in, counts them, and never exports them again", async () => {
    const corpus = secretCorpus(Math.floor(Math.random() * 2 ** 31))
    const aws = corpus.find((s) => s.type === 'aws_access_key_id')
    const github = corpus.find((s) => s.type === 'github_token')
    if (!aws || !github) throw new Error('the corpus lacks an AWS key or a GitHub token')
    await using source = await openTestEngine()
    await populate(source.engine)
    const { write } = await openFile(await source.engine.exportFile())
    const text = `deploy with ${aws.text} and then ${github.text}`
    const file = await write((lines) => {
      first('events', (r) => void (r.content = { text }), message)(lines)
      first('memories', (r) => void (r.content = `The deploy key is ${aws.secret}`))(lines)
    })

    await using target = await openTestEngine()
    const report = await target.engine.importFile(file)
    expect(report.redactions).toEqual(
      expect.arrayContaining([
        { type: 'aws_access_key_id', count: 2 },
        { type: 'github_token', count: 1 },
      ]),
    )
    const again = await target.engine.exportFile()
    const exported = await new Response(new Blob([new Uint8Array(await again.arrayBuffer()).subarray(9)]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
    for (const secret of [aws.secret, github.secret]) {
      expect(exported).not.toContain(secret)
      expect(await target.engine.search(secret, { mode: 'keyword' })).toEqual([])
      const { rows } = await target.db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM events WHERE content::text LIKE '%' || $1 || '%')
              + (SELECT count(*) FROM chunks WHERE text LIKE '%' || $1 || '%')
              + (SELECT count(*) FROM memories WHERE content LIKE '%' || $1 || '%') AS n`,
        [secret],
      )
      expect(Number(rows[0]?.n)).toBe(0)
    }
    const { rows: meta } = await target.db.query<{ meta: { redactions?: unknown } }>(`SELECT meta FROM events WHERE content::text LIKE '%REDACTED%'`)
    expect(meta[0]?.meta.redactions).toEqual(expect.arrayContaining([{ type: 'github_token', count: 1 }]))
  })
})
