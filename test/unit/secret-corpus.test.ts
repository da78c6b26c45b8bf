import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Queryable } from '../../src/core/kernel/db.ts'
import { Memory } from '../../src/adapters/mem0/facade.ts'
import { redact } from '../../src/core/privacy/redact.ts'
import { openTestEngine } from '../support/engine.ts'
import { editedExport } from '../support/export-file.ts'
import {
  NEAR_MISS_KIND_COUNT,
  nearMissCorpus,
  needles,
  randomSeed,
  SECRET_FORMAT_COUNT,
  secretCorpus,
} from '../support/secret-corpus.ts'

const seed = randomSeed()
const secrets = secretCorpus(seed)
const misses = nearMissCorpus(seed)
const at = `(seed ${seed})`

/** Texts joined into writes of at most `max` characters, each text whole. */
function batches(texts: readonly string[], max = 15_000): string[] {
  const out: string[] = []
  let current = ''
  for (const t of texts) {
    if (current !== '' && current.length + t.length + 2 > max) {
      out.push(current)
      current = ''
    }
    current = current === '' ? t : `${current}\n\n${t}`
  }
  if (current !== '') out.push(current)
  return out
}

const escaped = (text: string) => JSON.stringify(text).slice(1, -1)
/** The forms a text can take in a row read as JSON: as is, escaped once (a string), twice (a string in a jsonb). */
const forms = (text: string) => [...new Set([text, escaped(text), escaped(escaped(text))])]

/** Every row of every table, as JSON text, with its tenant where the table has one. */
async function everyRow(db: Queryable): Promise<{ table: string; tenant: string | null; text: string }[]> {
  const { rows: tables } = await db.query<{ name: string; tenant: boolean }>(
    `SELECT c.table_name AS name, bool_or(c.column_name = 'tenant_id') AS tenant
       FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
      GROUP BY c.table_name`,
  )
  const out: { table: string; tenant: string | null; text: string }[] = []
  for (const t of tables) {
    // Table names come from the catalogue, never from input. A version's tenant is its document's.
    const tenant = t.tenant
      ? 'x.tenant_id'
      : t.name === 'doc_versions'
        ? '(SELECT d.tenant_id FROM documents d WHERE d.id = x.document_id)'
        : 'NULL'
    const { rows } = await db.query<{ tenant: string | null; text: string }>(
      `SELECT ${tenant} AS tenant, to_jsonb(x)::text AS text FROM "${t.name}" x`,
    )
    for (const r of rows) out.push({ table: t.name, ...r })
  }
  return out
}

/** Each write path, given the texts to write and the tenant that marks what it wrote. */
type WritePath = (texts: readonly string[], tenantId: string) => Promise<void>

describe(`the secret corpus: ${SECRET_FORMAT_COUNT} formats, ${NEAR_MISS_KIND_COUNT} kinds of look-alike`, () => {
  it(`redact() replaces every secret and leaves every look-alike as it was ${at}`, () => {
    expect(SECRET_FORMAT_COUNT).toBeGreaterThanOrEqual(60)
    expect(NEAR_MISS_KIND_COUNT).toBeGreaterThanOrEqual(40)
    const leaks = secrets.filter((s) => needles(s.secret).some((n) => redact(s.text).text.includes(n)))
    expect(leaks.map((s) => `${s.format}: ${s.text}`)).toEqual([])
    const replaced = misses.filter((m) => redact(m.text).findings.length > 0)
    expect(replaced.map((m) => `${m.kind}: ${m.text} → ${redact(m.text).text}`)).toEqual([])
  })

  describe('written through every write path', () => {
    let rows: { table: string; tenant: string | null; text: string }[] = []
    let exported = ''
    const ran: string[] = []

    let t: Awaited<ReturnType<typeof openTestEngine>> | undefined
    afterAll(async () => {
      await t?.[Symbol.asyncDispose]()
    })

    beforeAll(async () => {
      t = await openTestEngine({ indexing: 'manual' })
      const { engine, db } = t
      const paths: Record<string, WritePath> = {
        turn_text: async (texts, tenantId) => {
          for (const [n, text] of batches(texts).entries()) {
            await engine.recordTurn({ conversationId: `turn-${n}`, scope: { tenantId }, user: text, agent: `Noted: ${text}` })
          }
        },
        tool_arguments_and_output: async (texts, tenantId) => {
          for (const [n, text] of batches(texts).entries()) {
            await engine.recordTurn({
              conversationId: `tools-${n}`,
              scope: { tenantId },
              user: 'run it',
              agent: 'Done.',
              procedures: [
                { tool: 'bash', args: { command: text, lines: text.split('\n\n') }, output: text },
                { tool: 'read_file', args: { path: `/app/${n}.env` }, document: { path: `/app/${n}.env`, content: text, effect: 'read' } },
              ],
            })
          }
        },
        record: async (texts, tenantId) => {
          for (const text of batches(texts)) {
            const scope = { tenantId, conversationId: 'record' }
            await engine.record({ kind: 'message', scope, actor: { type: 'human', id: 'ann' }, content: { text } })
            await engine.record({ kind: 'tool_result', scope, actor: { type: 'tool', id: 'bash' }, content: { tool: 'bash', output: text } })
          }
        },
        remember: async (texts, tenantId) => {
          for (const text of batches(texts)) await engine.remember({ content: text, category: 'fact', tenantId, userId: 'ann' })
        },
        memories_update: async (texts, tenantId) => {
          for (const [n, text] of batches(texts).entries()) {
            const m = await engine.remember({ content: `Placeholder ${n} for an update`, category: 'fact', tenantId, userId: 'ann' })
            await engine.memories.update(m.id, { content: text, metadata: { note: text } }, { tenantId })
          }
        },
        kv_put: async (texts, tenantId) => {
          await engine.kv.put('repo:acme', 'notes', 'all', { texts: [...texts], joined: texts.join('\n') }, { tenantId })
        },
        observe_document: async (texts, tenantId) => {
          for (const [n, text] of batches(texts).entries()) {
            await engine.observeDocument({ path: `/app/observed-${n}.txt`, content: text, conversationId: 'docs', scope: { tenantId } })
          }
        },
        mem0: async (texts, tenantId) => {
          const mem = new Memory(engine, { tenantId })
          for (const [n, text] of batches(texts).entries()) {
            const added = await mem.add(text, { userId: 'ann' })
            const second = await mem.add(`Placeholder ${n} for an update`, { userId: 'ann' })
            await mem.update(second.results[0]?.id ?? (added.results[0]?.id as string), text)
          }
        },
        agent_tools: async (texts, tenantId) => {
          const identity = { tenantId, userId: 'ann' }
          for (const [n, text] of batches(texts).entries()) {
            await engine.callTool('save_memory', { content: text, category: 'fact' }, identity)
            await engine.callTool('record_event', { kind: 'message', conversation_id: `tool-${n}`, text }, identity)
            await engine.callTool(
              'record_event',
              { kind: 'tool_call', conversation_id: `tool-${n}`, tool: 'http', tool_args: { body: text } },
              identity,
            )
            await engine.callTool(
              'record_turn',
              {
                conversation_id: `tool-turn-${n}`,
                user: text,
                agent: text,
                procedures: [{ tool: 'fetch', args: { body: text }, output: text }],
              },
              identity,
            )
          }
        },
      }
      for (const [name, write] of Object.entries(paths)) {
        await write(
          secrets.map((s) => s.text),
          `leak-${name}`,
        )
        await write(
          misses.map((m) => m.text),
          `clean-${name}`,
        )
        ran.push(name)
      }
      rows = await everyRow(db)
      const file = await engine.exportFile()
      exported = await new Response(file.slice(9).stream().pipeThrough(new DecompressionStream('gzip'))).text()
    }, 120_000)

    it('reaches every path', () => {
      expect(ran).toEqual([
        'turn_text',
        'tool_arguments_and_output',
        'record',
        'remember',
        'memories_update',
        'kv_put',
        'observe_document',
        'mem0',
        'agent_tools',
      ])
      for (const name of ran) expect(rows.some((r) => r.tenant === `leak-${name}`), name).toBe(true)
    })

    it(`stores no secret: not in any row of any table, not in the export ${at}`, () => {
      const stored: string[] = []
      const lowered = rows.map((r) => ({ ...r, lower: r.text.toLowerCase() }))
      const exportLower = exported.toLowerCase()
      for (const s of secrets) {
        const parts = needles(s.secret).flatMap(forms)
        for (const r of lowered) {
          if (parts.some((p) => r.lower.includes(p.toLowerCase()))) stored.push(`${s.format} in ${r.table} (${r.tenant ?? 'no tenant'})`)
        }
        if (parts.some((p) => exportLower.includes(p.toLowerCase()))) stored.push(`${s.format} in the export`)
      }
      expect([...new Set(stored)]).toEqual([])
    })

    it(`replaces no look-alike on any path ${at}`, () => {
      const replaced = rows.filter((r) => r.tenant?.startsWith('clean-') && r.text.includes('[REDACTED'))
      expect(replaced.map((r) => `${r.table} (${r.tenant}): ${r.text.slice(0, 300)}`)).toEqual([])
      // And each look-alike is there as it was written, on each path that keeps its text whole.
      const absent: string[] = []
      for (const name of ['turn_text', 'record', 'remember', 'kv_put', 'observe_document', 'agent_tools']) {
        const mine = rows.filter((r) => r.tenant === `clean-${name}`).map((r) => r.text)
        for (const m of misses) if (!forms(m.text).some((f) => mine.some((text) => text.includes(f)))) absent.push(`${m.kind} on ${name}`)
      }
      expect(absent).toEqual([])
    })
  })

  it(`import redacts the secrets a file holds and keeps every look-alike ${at}`, async () => {
    await using t = await openTestEngine({ indexing: 'manual' })
    const { engine, db } = t
    // A file as another writer could make it: rows written with stand-in text, then edited.
    const texts = new Map<string, string>()
    const write = async (tenantId: string, list: readonly string[]) => {
      for (const [n, text] of batches(list).entries()) {
        const stand = `stand-in ${tenantId} ${n}`
        texts.set(stand, text)
        const scope = { tenantId, conversationId: 'import' }
        await engine.record({ kind: 'message', scope, actor: { type: 'human', id: 'ann' }, content: { text: stand } })
        await engine.remember({ content: stand, category: 'fact', tenantId, userId: 'ann' })
      }
    }
    await write('leak-import', secrets.map((s) => s.text))
    await write('clean-import', misses.map((m) => m.text))
    let file = await engine.exportFile()
    file = await editedExport(file, 'events', (row) => {
      const text = texts.get((row.content as { text: string }).text)
      if (text !== undefined) row.content = { text }
    })
    file = await editedExport(file, 'memories', (row) => {
      const text = texts.get(row.content as string)
      if (text !== undefined) row.content = text
    })
    const report = await engine.importFile(file, { mode: 'replace' })
    expect(report.redactions.length).toBeGreaterThan(0)

    const rows = await everyRow(db)
    expect(rows.some((r) => r.tenant === 'leak-import' && r.table === 'events')).toBe(true)
    const stored: string[] = []
    for (const s of secrets) {
      const parts = needles(s.secret).flatMap(forms).map((p) => p.toLowerCase())
      for (const r of rows) if (parts.some((p) => r.text.toLowerCase().includes(p))) stored.push(`${s.format} in ${r.table}`)
    }
    expect([...new Set(stored)]).toEqual([])
    const clean = rows.filter((r) => r.tenant === 'clean-import')
    expect(clean.filter((r) => r.text.includes('[REDACTED')).map((r) => r.text.slice(0, 300))).toEqual([])
    const events = clean.filter((r) => r.table === 'events').map((r) => r.text)
    expect(misses.filter((m) => !forms(m.text).some((f) => events.some((e) => e.includes(f)))).map((m) => m.kind)).toEqual([])
  })
})
