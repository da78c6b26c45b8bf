import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type ContextBundle, FIRST_PASS_TOKENS_PER_HIT, MAX_RETRIEVED, MIN_TOKENS_PER_HIT, SECTION_PRIORITIES, type SectionName } from '../../src/core/retrieval/context.ts'
import type { Db } from '../../src/core/kernel/db.ts'
import { rebuildMissingChunks } from '../../src/core/log/chunks.ts'
import { createEngine } from '../../src/core/engine.ts'
import { estimateTokens } from '../../src/core/kernel/tokens.ts'
import { DAY, testClock } from '../support/clock.ts'
import { createTestEmbedder } from '../support/embedder.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestMemory } from '../support/memory.ts'

const README = '# invoicer\n\nConverts supplier invoices (CSV) into ledger entries for the accounting team.\n'
const PACKAGE = '{\n  "name": "invoicer",\n  "main": "src/index.js",\n  "dependencies": {}\n}\n'
const scope = { tenantId: 't1', userId: 'ann', agentId: 'coder' }

const withoutId = ({ id: _, ...bundle }: ContextBundle) => bundle
const section = (b: ContextBundle, name: string) => {
  const s = b.sections.find((x) => x.name === name)
  if (!s) throw new Error(`no section ${name}`)
  return s
}

type Memory = Awaited<ReturnType<typeof openTestMemory>>

/** `count` messages from Ann a second apart: the n-th in conversation `conversation(n)`, saying `text(n)`. */
async function notes(memory: Memory, clock: ReturnType<typeof testClock>, count: number, conversation: (n: number) => string, text: (n: number) => string) {
  for (let n = 0; n < count; n++) {
    clock.advance(1000)
    await memory.record({ kind: 'message', scope: { ...scope, conversationId: conversation(n) }, actor: { type: 'human', id: 'ann' }, content: { text: text(n) } })
  }
}

async function onboard(memory: Memory, conversationId = 'onboard') {
  const turn = await memory.recordTurn({
    conversationId,
    scope,
    user: 'what this project for?',
    agent: 'It converts supplier invoices (CSV) into ledger entries; the entry point is src/index.js.',
    procedures: [
      { tool: 'list_root', args: {}, output: 'README.md\npackage.json\nsrc/\n' },
      { tool: 'read_file', args: { path: 'README.md' }, document: { path: '/repo/README.md', content: README, effect: 'read' } },
      { tool: 'read_file', args: { path: 'package.json' }, document: { path: '/repo/package.json', content: PACKAGE, effect: 'read' } },
    ],
  })
  const decision = await memory.record({
    kind: 'decision',
    scope: { ...scope, conversationId },
    actor: { type: 'agent', id: 'coder' },
    content: { decision: 'Project purpose hypothesis v0.1: an invoice to ledger converter' },
    refs: [...turn.chunkIds],
  })
  return { turn, decision }
}

describe('buildContext: acceptance scenarios', () => {
  it('onboarding a legacy project: everything is stored, the next session gets the turn, its procedures, documents and the decision within budget', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
    const { turn, decision } = await onboard(memory)
    const events = await memory.events.list({ conversationId: 'onboard', tenantId: 't1' })
    expect(events.map((e) => e.kind).sort()).toEqual(['decision', 'message', 'message', 'tool_call', 'tool_result'])
    const refs = await memory.graph.out(decision.eventId, { rel: 'REFERS_TO', tenantId: 't1' })
    expect(refs).toHaveLength(turn.chunkIds.length)

    clock.advance(DAY)
    const bundle = await memory.buildContext({ ...scope, query: 'what is this project for?', conversationId: 'next' })
    expect(bundle.budgetTokens).toBe(65_000)
    expect(bundle.tokenUsedEst).toBeLessThanOrEqual(65_000)
    const evidence = section(bundle, 'retrieved_evidence')
    expect(evidence.capTokens).toBe(28_000)
    expect(evidence.usedTokens).toBeLessThanOrEqual(28_000)
    const item = evidence.items.find((i) => i.id === turn.userEventId)
    expect(item?.text).toContain('Q: what this project for?')
    expect(item?.text).toContain('Procedures: list_root {}; read_file {"path":"README.md"}; read_file {"path":"package.json"}')
    expect(item?.text).toContain('A: It converts supplier invoices')
    expect(item?.text).toContain('Documents: README.md (v1, current), package.json (v1, current)')
    expect(item?.source.versionIds).toEqual(turn.procedures.flatMap((p) => (p.versionId ? [p.versionId] : [])))
    expect(section(bundle, 'decision_ledger').items.map((i) => i.id)).toEqual([decision.eventId])
    expect(bundle.text).toContain('## Retrieved evidence')
    expect(bundle.provenance.queryTerms).toEqual(['project'])
    expect(bundle.provenance.filters.sensitivityAllowed).toEqual(['none', 'low', 'high'])
  })

  it('an old decision is recalled months later among unrelated chatter', async () => {
    const clock = testClock('2024-01-10T00:00:00Z')
    await using memory = await openTestMemory({ now: clock.now })
    const old = await memory.record({
      kind: 'decision',
      scope: { ...scope, conversationId: 'arch' },
      actor: { type: 'agent', id: 'coder' },
      content: { decision: 'Store money amounts as integer cents, never floats' },
    })
    for (let n = 0; n < 30; n++) {
      clock.advance(5 * DAY)
      await memory.recordTurn({ conversationId: `chat${n}`, scope, user: `weekly sync number ${n}`, agent: 'noted' })
    }
    const bundle = await memory.buildContext({ ...scope, query: 'how should money amounts be stored?', conversationId: 'now' })
    expect(section(bundle, 'decision_ledger').items[0]?.id).toBe(old.eventId)
    // Shown in the ledger, it is no evidence besides: the chatter is.
    expect(section(bundle, 'retrieved_evidence').items.map((i) => i.source.eventId)).not.toContain(old.eventId)
  })

  it('a superseded decision leaves the ledger and is listed as an omission', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    const first = await memory.record({
      kind: 'decision',
      scope: { ...scope, conversationId: 'db' },
      actor: { type: 'agent', id: 'coder' },
      content: { decision: 'Use MySQL for the ledger database' },
    })
    const second = await memory.record({
      kind: 'decision',
      scope: { ...scope, conversationId: 'db2' },
      actor: { type: 'agent', id: 'coder' },
      content: { decision: 'Use Postgres for the ledger database', supersedes: first.eventId },
      refs: [first.eventId],
    })
    const bundle = await memory.buildContext({ ...scope, query: 'which database for the ledger?', conversationId: 'c' })
    expect(section(bundle, 'decision_ledger').items.map((i) => i.id)).toEqual([second.eventId])
    expect(bundle.omissions).toContainEqual({ id: first.eventId, reason: 'superseded', detail: second.eventId })
  })

  it('past context over a changed document is flagged stale and ranked below fresh context', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
    const stale = await memory.recordTurn({
      conversationId: 'a',
      scope,
      user: 'which port does the api server listen on?',
      agent: 'The api server listens on port 8080.',
      procedures: [{ tool: 'read_file', args: { path: 'config.yml' }, document: { path: 'config.yml', content: 'port: 8080\n', effect: 'read' } }],
    })
    clock.advance(1000)
    const fresh = await memory.recordTurn({
      conversationId: 'b',
      scope,
      user: 'which port does the api server listen on now?',
      agent: 'The api server listens on port 9090.',
      procedures: [{ tool: 'read_file', args: { path: 'config.yml' }, document: { path: 'config.yml', content: 'port: 9090\n', effect: 'read' } }],
    })
    const bundle = await memory.buildContext({ ...scope, query: 'which port does the api server listen on?', conversationId: 'c' })
    const items = section(bundle, 'retrieved_evidence').items
    expect(items.map((i) => i.id)).toEqual([fresh.userEventId, stale.userEventId])
    expect(items[1]?.text).toContain('config.yml (seen v1, now v2: 1 newer version)')
    expect(items[1]?.explain?.staleness).toBe(0.5)
    expect(items[0]?.explain?.staleness).toBe(0)
  })

  it('open tasks carry over to a new session; finished ones do not', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now })
    const task = (taskId: string, status: string, text: string) =>
      memory.record({
        kind: 'task_update',
        scope: { ...scope, conversationId: 's1' },
        actor: { type: 'agent', id: 'coder' },
        content: { taskId, status, text },
      })
    await task('T1', 'open', 'Parse EUR invoices')
    clock.advance(1000)
    const t1 = await task('T1', 'doing', 'Parse EUR invoices: date formats left')
    await task('T2', 'open', 'Write README')
    clock.advance(1000)
    await task('T2', 'done', 'Write README')
    const bundle = await memory.buildContext({ ...scope, query: 'continue', conversationId: 's2', retrieval: false })
    const items = section(bundle, 'task_state').items
    expect(items.map((i) => i.id)).toEqual([t1.eventId])
    expect(items[0]?.text).toBe('- [doing] T1: Parse EUR invoices: date formats left')
  })

  it('a handoff note reaches the next agent in a small bundle', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    await memory.recordTurn({ conversationId: 'x', scope, user: 'migrate the invoices table', agent: 'Started: schema drafted.' })
    const note = await memory.record({
      kind: 'message',
      scope: { ...scope, conversationId: 'x' },
      actor: { type: 'agent', id: 'coder' },
      tags: ['handoff'],
      content: { text: 'Schema drafted in migrations/004.sql; backfill not run yet.', to: 'reviewer' },
    })
    const bundle = await memory.buildContext({
      tenantId: 't1',
      userId: 'ann',
      agentId: 'reviewer',
      query: 'review the invoices migration',
      conversationId: 'y',
      maxTokens: 2000,
    })
    expect(section(bundle, 'handoff_packet').items.map((i) => i.id)).toEqual([note.eventId])
    expect(bundle.tokenUsedEst).toBeLessThanOrEqual(2000)
    expect(section(bundle, 'handoff_packet').capTokens).toBe(Math.floor((6000 * 2000) / 65000))
  })

  it("one user's handoff notes and messages stay out of another user's bundle, even in a conversation of the same id", async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    const ann = { tenantId: 't1', userId: 'ann', agentId: 'coder' }
    const bob = { tenantId: 't1', userId: 'bob', agentId: 'coder' }
    await memory.recordTurn({ conversationId: 'daily', scope: ann, user: 'my salary review is on friday', agent: 'Noted.' })
    const annNote = await memory.record({
      kind: 'message',
      scope: { ...ann, conversationId: 'daily' },
      actor: { type: 'agent', id: 'coder' },
      tags: ['handoff'],
      content: { text: 'Ann asked to prepare her salary review figures.' },
    })
    await memory.recordTurn({ conversationId: 'daily', scope: bob, user: 'what is on my plate?', agent: 'The release notes.' })
    const bobNote = await memory.record({
      kind: 'message',
      scope: { ...bob, conversationId: 'daily' },
      actor: { type: 'agent', id: 'coder' },
      tags: ['handoff'],
      content: { text: 'Bob wants the release notes drafted.' },
    })
    const texts = (b: ContextBundle, name: string) => section(b, name).items.map((i) => i.text).join('\n')
    for (const [who, mine, theirs] of [
      [bob, bobNote.eventId, annNote.eventId],
      [ann, annNote.eventId, bobNote.eventId],
    ] as const) {
      const bundle = await memory.buildContext({ ...who, agentId: 'reviewer', query: 'what next', conversationId: 'daily', retrieval: false })
      const handoffs = section(bundle, 'handoff_packet').items.map((i) => i.id)
      expect(handoffs).toContain(mine)
      expect(handoffs).not.toContain(theirs)
      const recent = texts(bundle, 'recent_window')
      expect(recent).toContain(who.userId === 'ann' ? 'salary review' : 'release notes')
      expect(recent).not.toContain(who.userId === 'ann' ? 'release notes' : 'salary review')
    }
  })

  it("policy entries of the project load with it: its rules, and its decisions ahead of the log's in the ledger", async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    await memory.kv.put('project:billing', 'decisions', 'storage', 'Store invoices in PGlite, one database per workspace', { tenantId: 't1' })
    await memory.kv.put('project:billing', 'rules', 'money', 'Amounts are integers in cents', { tenantId: 't1' })
    await memory.kv.put('project:search', 'rules', 'engine', 'Search runs in the worker', { tenantId: 't1' })
    await memory.record({
      kind: 'decision',
      scope: { ...scope, conversationId: 'c1' },
      actor: { type: 'agent', id: 'coder' },
      content: { decision: 'Invoices are exported as CSV' },
    })
    const texts = (b: ContextBundle, name: string) => section(b, name).items.map((i) => i.text)
    const billing = await memory.buildContext({ ...scope, projectId: 'billing', query: 'invoice storage', retrieval: false })
    expect(texts(billing, 'decision_ledger')[0]).toBe('- Store invoices in PGlite, one database per workspace')
    expect(texts(billing, 'decision_ledger')[1]).toMatch(/^- Invoices are exported as CSV/)
    expect(section(billing, 'decision_ledger').items[0]?.source).toMatchObject({ scope: 'project:billing', namespace: 'decisions', key: 'storage' })
    expect(texts(billing, 'rules')).toContain('- Amounts are integers in cents')
    expect(texts(billing, 'rules')).not.toContain('- Search runs in the worker')
    const elsewhere = await memory.buildContext({ ...scope, query: 'invoice storage', retrieval: false })
    expect(texts(elsewhere, 'decision_ledger')).toHaveLength(1)
    expect(texts(elsewhere, 'rules')).toEqual([])
  })

  it('a public channel loads nothing above its sensitivity', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    const base = { scope: { ...scope, conversationId: 'p' }, actor: { type: 'human' as const, id: 'ann' } }
    await memory.record({ ...base, kind: 'message', content: { text: 'salary review notes for ann' }, sensitivity: 'high' })
    await memory.record({ ...base, kind: 'message', content: { text: 'salary band preference of ann' }, sensitivity: 'low' })
    await memory.record({ ...base, kind: 'decision', content: { decision: 'salary reviews happen in march' }, sensitivity: 'high' })
    const open = await memory.record({ ...base, kind: 'message', content: { text: 'salary reviews are announced on the wiki' } })
    const pub = await memory.buildContext({ ...scope, query: 'salary review', conversationId: 'q', channel: 'public' })
    expect(pub.text).not.toContain('notes for ann')
    expect(pub.text).not.toContain('band preference')
    expect(pub.text).not.toContain('happen in march')
    expect(section(pub, 'retrieved_evidence').items.map((i) => i.source.eventId)).toEqual([open.eventId])
    const priv = await memory.buildContext({ ...scope, query: 'salary review', conversationId: 'q', channel: 'private' })
    // The three messages; the decision is in the ledger.
    expect(section(priv, 'retrieved_evidence').items).toHaveLength(3)
    expect(section(priv, 'decision_ledger').items).toHaveLength(1)
  })

  it("curated memories follow the channel's sensitivities and stay in their own project", async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    const save = (content: string, category: 'instruction' | 'decision', more: Record<string, unknown> = {}) =>
      memory.remember({ content, category, scope: 'user', tenantId: 't1', userId: 'ann', ...more })
    await save('always cc the payroll team on salary mail', 'instruction', { sensitivity: 'high' })
    await save('we settled on a march salary review', 'decision', { sensitivity: 'high' })
    await save('prefer short salary summaries', 'instruction', { sensitivity: 'low' })
    await save('write salary tables in euros', 'instruction')
    await save('invoicer tests run with vitest', 'instruction', { scope: 'project', projectId: 'invoicer' })
    await save('invoicer ships from main', 'decision', { scope: 'project', projectId: 'invoicer' })
    await save('ledger tests run with jest', 'instruction', { scope: 'project', projectId: 'ledger' })
    const texts = async (input: Record<string, unknown>) => {
      const b = await memory.buildContext({ ...scope, query: 'salary tests', retrieval: false, ...input })
      return [...section(b, 'rules').items, ...section(b, 'decision_ledger').items].map((i) => i.text.replace(/ \(.*$/, '')).sort()
    }
    expect(await texts({ channel: 'public' })).toEqual(['- write salary tables in euros'])
    expect(await texts({ channel: 'agent' })).toEqual(['- prefer short salary summaries', '- write salary tables in euros'])
    expect(await texts({ channel: 'private' })).toEqual([
      '- always cc the payroll team on salary mail',
      '- prefer short salary summaries',
      '- we settled on a march salary review',
      '- write salary tables in euros',
    ])
    const inInvoicer = await texts({ channel: 'public', projectId: 'invoicer' })
    expect(inInvoicer).toEqual(['- invoicer ships from main', '- invoicer tests run with vitest', '- write salary tables in euros'])
    expect(await texts({ channel: 'public', projectId: 'ledger' })).toEqual(['- ledger tests run with jest', '- write salary tables in euros'])
  })

  it('a secret is refused before anything is stored', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    await expect(
      memory.record({
        kind: 'message',
        scope: { ...scope, conversationId: 's' },
        actor: { type: 'human', id: 'ann' },
        sensitivity: 'secret',
        content: { text: 'the deploy password is hunter2' },
      }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    const bundle = await memory.buildContext({ ...scope, query: 'deploy password', conversationId: 'n' })
    expect(bundle.text).not.toContain('hunter2')
    expect((await memory.stats()).counts.events).toBe(0)
  })

  it('a key pasted into a message never reaches any bundle', async () => {
      await using memory = await openTestMemory({ now: testClock().now })
      await memory.record({
        kind: 'message',
        scope: { ...scope, conversationId: 's' },
        actor: { type: 'human', id: 'ann' },
        content: { text: 'use the aws key AKIAQWERTYUIOPASDFGH for the deploy' },
      })
      for (const channel of ['private', 'team', 'agent', 'public'] as const) {
        const bundle = await memory.buildContext({ ...scope, query: 'aws key deploy', conversationId: 'n', channel })
        expect(bundle.text).not.toContain('AKIAQWERTYUIOPASDFGH')
        expect(bundle.text).toContain('[REDACTED:aws_access_key_id]')
      }
  })

  it('past turns linked through shared documents are bounded by what the evidence section can hold: the newest are kept', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now })
    const read = (conversationId: string, doc: number) =>
      memory.recordTurn({
        conversationId,
        scope,
        user: `look at module ${doc}`,
        agent: `module ${doc} parses dates`,
        procedures: [{ tool: 'read_file', args: { path: `m${doc}.ts` }, document: { path: `/repo/m${doc}.ts`, content: `export const m = ${doc}\n`, effect: 'read' } }],
      })
    const replies: string[] = []
    for (let n = 0; n < 36; n++) {
      clock.advance(1000)
      const turn = await read(`past-${n}`, n % 6)
      replies.push(turn.agentEventId)
    }
    for (let doc = 0; doc < 6; doc++) await read('now', doc)
    // No search hits (no term matches, no embedder): every candidate is document-linked.
    const bundle = await memory.buildContext({ ...scope, query: 'qqqq', conversationId: 'now', maxTokens: 2000 })
    const evidence = section(bundle, 'retrieved_evidence')
    // Five per document would be 30; the section holds at most 20 (its cap over 50 tokens, at least 20).
    expect(bundle.provenance.scored).toBe(20)
    expect(evidence.items.length).toBeGreaterThan(0)
    const oldest = new Set(replies.slice(0, 16))
    for (const item of evidence.items) {
      expect(item.source.via).toMatch(/^document:/)
      expect(oldest.has(String(item.source.eventId))).toBe(false)
    }
  })

  it('the fast sections (tasks, decisions, handoff notes) can each be read by an index of their own events', async () => {
    await using t = await openTestEngine({ now: testClock().now })
    const at = { ...scope, conversationId: 's1' }
    const agent = { type: 'agent', id: 'coder' } as const
    await t.engine.record({ kind: 'task_update', scope: at, actor: agent, content: { taskId: 'T1', status: 'open', text: 'Parse EUR invoices' } })
    await t.engine.record({ kind: 'decision', scope: at, actor: agent, content: { decision: 'Amounts are stored in cents' } })
    await t.engine.record({ kind: 'message', scope: at, actor: agent, tags: ['handoff'], content: { text: 'Parser half done', to: 'reviewer' } })
    const scans = async () => {
      await t.db.query('SELECT pg_stat_force_next_flush()')
      const { rows } = await t.db.query<{ name: string; scans: number }>(
        `SELECT indexrelname AS name, idx_scan::int AS scans FROM pg_stat_user_indexes
         WHERE indexrelname IN ('events_task_updates', 'events_decisions', 'events_handoffs') ORDER BY 1`,
      )
      return Object.fromEntries(rows.map((r) => [r.name, r.scans]))
    }
    const before = await scans()
    // In a memory this small a scan is cheaper; priced out, the planner shows the index fits the query.
    await t.db.exec('SET enable_seqscan = off')
    const bundle = await t.engine.buildContext({ ...scope, agentId: 'reviewer', query: 'continue', conversationId: 's2', retrieval: false })
    await t.db.exec('RESET enable_seqscan')
    const after = await scans()
    for (const name of ['events_decisions', 'events_handoffs', 'events_task_updates']) {
      expect(after[name], name).toBeGreaterThan(before[name] ?? 0)
    }
    expect(section(bundle, 'task_state').items).toHaveLength(1)
    expect(section(bundle, 'decision_ledger').items).toHaveLength(1)
    expect(section(bundle, 'handoff_packet').items).toHaveLength(1)
  })

  it('the fast path skips retrieval and keeps the recent window within its cap', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now })
    for (let n = 0; n < 40; n++) {
      clock.advance(1000)
      await memory.recordTurn({ conversationId: 'live', scope, user: `step ${n}: ${'detail '.repeat(30)}`, agent: `done ${n}` })
    }
    await memory.recordTurn({ conversationId: 'other', scope, user: 'step unrelated history', agent: 'ok' })
    const bundle = await memory.buildContext({ ...scope, query: 'next step', conversationId: 'live', retrieval: false, maxTokens: 4000 })
    expect(section(bundle, 'retrieved_evidence').items).toEqual([])
    expect(bundle.omissions).toContainEqual({ reason: 'retrieval_skipped' })
    expect(bundle.provenance.poolSize).toBe(0)
    const recent = section(bundle, 'recent_window')
    expect(recent.capTokens).toBe(Math.floor((8000 * 4000) / 65000))
    expect(recent.usedTokens).toBeLessThanOrEqual(recent.capTokens)
    expect(recent.items.length).toBeGreaterThan(1)
    expect(recent.items.length).toBeLessThan(80)
    expect(recent.items[0]?.text).toBe('Agent (coder): done 39')
    // Oldest first in the text.
    expect(bundle.text.indexOf('done 38')).toBeLessThan(bundle.text.indexOf('done 39'))
  })

  it('the retrieval path stays within its pool and scoring bounds', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now })
    await notes(memory, clock, 260, (n) => `c${n % 13}`, (n) => `invoice parsing note ${n} about currency ${n % 7}`)
    const bundle = await memory.buildContext({ ...scope, query: 'invoice parsing currency', conversationId: 'new', maxTokens: 3000 })
    // 260 events match; each list is ranked 200 deep (three times the hits asked for, at least 200).
    expect(bundle.provenance.poolSize).toBe(200)
    const evidence = section(bundle, 'retrieved_evidence')
    // Search is asked for as many hits as could fit the section: its cap over the smallest turn.
    const asked = Math.min(MAX_RETRIEVED, Math.max(20, Math.ceil(evidence.capTokens / MIN_TOKENS_PER_HIT)))
    expect(asked).toBe(26)
    // Ten short notes (the first pass: 1,292 / 150 → 9, at least 10) leave the section short,
    // so search is asked again for the most that could fit.
    expect(bundle.provenance.searchPasses).toBe(2)
    expect(bundle.provenance.searchLimit).toBe(asked)
    expect(bundle.provenance.scored).toBe(asked)
    expect(evidence.items.length).toBeGreaterThan(0)
    expect(evidence.usedTokens).toBeLessThanOrEqual(evidence.capTokens)
    expect(bundle.tokenUsedEst).toBeLessThanOrEqual(3000)
    expect(bundle.omissions.filter((o) => o.reason === 'over_section_cap').length).toBe(asked - evidence.items.length)
  })

  it('reads every section and both search passes in one transaction, embedding the query once after one look-up of names', async () => {
    const clock = testClock()
    const embedder = createTestEmbedder()
    await using t = await openTestEngine({ now: clock.now, embedder, indexing: 'manual' })
    // The engine over a Db that notes each call made on it once counting starts.
    const calls = { outside: [] as string[], transactions: [] as string[][] }
    let counting = false
    const inner = t.db as unknown as Db
    const db: Db = {
      query: (sql, params, options) => {
        if (counting) calls.outside.push(sql)
        return inner.query(sql, params, options)
      },
      exec: (sql) => {
        if (counting) calls.outside.push(sql)
        return inner.exec(sql)
      },
      transaction: (fn) => {
        if (!counting) return inner.transaction(fn)
        const statements: string[] = []
        calls.transactions.push(statements)
        return inner.transaction((tx) =>
          fn({
            query: (sql, params, options) => {
              statements.push(sql)
              return tx.query(sql, params, options)
            },
            exec: (sql) => {
              statements.push(sql)
              return tx.exec(sql)
            },
          }),
        )
      },
    }
    const engine = await createEngine({ db, now: clock.now, embedder, indexing: 'manual' })
    await notes(engine as unknown as Memory, clock, 40, (n) => `c${n % 5}`, (n) => `invoice parsing note ${n} about currency ${n % 7}`)
    await engine.indexNow()
    counting = true
    embedder.calls = 0
    const bundle = await engine.buildContext({ ...scope, query: 'invoice parsing currency', conversationId: 'new', maxTokens: 3000 })
    expect(bundle.provenance.searchPasses).toBe(2)
    expect(section(bundle, 'retrieved_evidence').items[0]?.explain?.vector).not.toBeNull()
    // Planning reads, in a transaction of its own before the read, which query words are
    // people's names (left out of the embedded text) and which actors the query names; the
    // sections and both passes read in the one transaction after it.
    expect(calls.outside).toEqual([])
    expect(calls.transactions).toHaveLength(2)
    // The names are read with the statement's generic plan: key look-ups, whatever the query.
    expect(calls.transactions[0]).toHaveLength(2)
    expect(calls.transactions[0]?.[0]).toBe('SET LOCAL plan_cache_mode = force_generic_plan')
    expect(calls.transactions[0]?.[1]).toMatch(/^WITH names AS \(SELECT DISTINCT q\.w/)
    expect(calls.transactions[1]?.length).toBeGreaterThan(10)
    expect(embedder.calls).toBe(1)

    // Over PGlite itself, the sections' statements are kept prepared: parsed once, run again.
    const direct = await createEngine({ db: t.db, now: clock.now, embedder, indexing: 'manual' })
    for (let n = 0; n < 2; n++) await direct.buildContext({ ...scope, query: 'invoice parsing currency', conversationId: `c${n}` })
    const { rows } = await t.db.query<{ statement: string; runs: number }>(
      `SELECT statement, (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements`,
    )
    const runs = (fragment: string) => rows.filter((r) => r.statement.includes(fragment)).map((r) => r.runs)
    expect(runs('FROM kv')).toEqual([4]) // identity, and the rules with the decisions, twice
    expect(runs('m.confidence * (0.5 + coalesce(')).toEqual([2])
    expect(runs('array_agg(DISTINCT lexeme')).toEqual([2])
    expect(runs("WITH msg AS (SELECT id FROM relations WHERE name = 'MESSAGE')")).toEqual([2])
    expect(runs('WITH names AS')).toEqual([2])
    // Every statement of the bundle, the names look-up and the search's two included, was
    // parsed once for both calls.
    expect(rows.every((r) => r.runs === 2 || r.runs === 4)).toBe(true)
    expect(rows.length).toBe(12)
  })

  it('when the first search pass fills the evidence section, no second pass runs: the section holds the best hits search gives', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now })
    const filler = (n: number) => Array.from({ length: 60 }, (_, k) => `ledger${(n * 7 + k) % 97} entry`).join(' ')
    await notes(memory, clock, 80, (n) => `c${n % 8}`, (n) => `invoice parsing note ${n} about currency ${n % 5}: ${filler(n)}`)
    const request = { ...scope, query: 'invoice parsing currency', conversationId: 'new', maxTokens: 8000 }
    const bundle = await memory.buildContext(request)
    const evidence = section(bundle, 'retrieved_evidence')
    const first = Math.max(10, Math.ceil(evidence.capTokens / FIRST_PASS_TOKENS_PER_HIT))
    expect(first).toBe(23)
    expect(first).toBeLessThan(Math.ceil(evidence.capTokens / MIN_TOKENS_PER_HIT))
    expect(bundle.provenance.searchPasses).toBe(1)
    expect(bundle.provenance.searchLimit).toBe(first)
    expect(bundle.provenance.scored).toBe(first)
    expect(evidence.capTokens - evidence.usedTokens).toBeLessThan(MIN_TOKENS_PER_HIT)
    // The packed items are the best hits of the public search with the same reader and clock, in order.
    const hits = await memory.search(request.query, {
      limit: first,
      scope: { tenantId: scope.tenantId, userId: scope.userId },
      channel: 'private',
      excludeConversation: 'new',
      asOf: clock.now(),
    })
    expect(evidence.items.length).toBeGreaterThan(5)
    expect(evidence.items.map((it) => it.source.eventId)).toEqual(hits.slice(0, evidence.items.length).map((h) => h.eventId))
    // Over-cap omissions count the first pass's candidates only.
    const overCap = bundle.omissions.filter((o) => o.reason === 'over_section_cap').length
    expect(overCap).toBe(first - evidence.items.length)
  })

  it('a search that finds fewer hits than the first pass asked for is not repeated', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now })
    await notes(memory, clock, 4, (n) => `c${n}`, (n) => `invoice parsing note ${n}`)
    const bundle = await memory.buildContext({ ...scope, query: 'invoice parsing', conversationId: 'new', maxTokens: 8000 })
    const evidence = section(bundle, 'retrieved_evidence')
    expect(evidence.items).toHaveLength(4)
    expect(evidence.capTokens - evidence.usedTokens).toBeGreaterThan(MIN_TOKENS_PER_HIT)
    expect(bundle.provenance.searchPasses).toBe(1)
    expect(bundle.provenance.searchLimit).toBe(23)
    expect(bundle.provenance.scored).toBe(4)
  })

  it('derived vectors can be dropped and rebuilt: the bundle comes back identical', async () => {
    const embedder = createTestEmbedder()
    const clock = testClock()
    await using t = await openTestEngine({ now: clock.now, embedder, indexing: 'manual', workspace: { mode: 'local', root: '/repo' } })
    await onboard(t.engine as unknown as Memory, 'onboard')
    await t.engine.recordTurn({ conversationId: 'z', scope, user: 'how are ledger entries exported?', agent: 'As CSV.' })
    await t.engine.indexNow()
    const request = { ...scope, query: 'what does the project convert?', conversationId: 'n' }
    const before = await t.engine.buildContext(request)
    expect(section(before, 'retrieved_evidence').items[0]?.explain?.vector).not.toBeNull()

    await t.db.exec('UPDATE chunks SET embedding = NULL, embed_model = NULL')
    const cold = await t.engine.buildContext(request)
    expect(section(cold, 'retrieved_evidence').items.map((i) => i.id)).toContain(section(before, 'retrieved_evidence').items[0]?.id)
    expect(section(cold, 'retrieved_evidence').items.every((i) => i.explain?.vector === null)).toBe(true)

    await t.engine.indexNow()
    expect(withoutId(await t.engine.buildContext(request))).toEqual(withoutId(before))
  })

  it('summary drift guard: every item cites log events showing what it says, and a bundle rebuilt from the log alone is the same', async () => {
    const embedder = createTestEmbedder()
    const clock = testClock()
    await using t = await openTestEngine({ now: clock.now, embedder, indexing: 'manual', workspace: { mode: 'local', root: '/repo' } })
    await onboard(t.engine as unknown as Memory, 'onboard')
    clock.advance(DAY)
    await t.engine.recordTurn({ conversationId: 'z', scope, user: 'how are ledger entries exported?', agent: 'As CSV, one file per supplier.' })
    await t.engine.record({
      kind: 'task_update',
      scope: { ...scope, conversationId: 'z' },
      actor: { type: 'agent', id: 'coder' },
      content: { taskId: 'T-1', title: 'Export ledger entries as CSV', status: 'open' },
    })
    await t.engine.indexNow()
    const request = { ...scope, query: 'what does the project convert and how is it exported?', conversationId: 'n', maxTokens: 6000 }
    const before = await t.engine.buildContext(request)

    // Ground truth: every item that comes from the log names its event, and that event, read
    // back from the log, holds the words the item shows.
    const cited = before.sections.flatMap((sec) => sec.items).filter((item) => typeof item.source.eventId === 'string')
    expect(cited.length).toBeGreaterThan(2)
    for (const item of cited) {
      const event = await t.engine.events.get(item.source.eventId as string, { tenantId: scope.tenantId })
      const said = Object.values(event.content).filter((v): v is string => typeof v === 'string')
      expect(said.some((text) => item.text.includes(text.slice(0, 40))), item.id).toBe(true)
    }

    // Derived views are disposable: drop every chunk (with its vector and keyword counts) and
    // rebuild them from the events; the bundle is the same but for the new chunks' ids.
    await t.db.exec('DELETE FROM chunks')
    expect(section(await t.engine.buildContext(request), 'retrieved_evidence').items).toEqual([])
    await t.db.transaction((tx) => rebuildMissingChunks(tx))
    await t.engine.indexNow()
    const withoutChunkIds = (b: ContextBundle) =>
      b.sections.map((sec) => ({ ...sec, items: sec.items.map(({ source: { chunkId: _, ...source }, ...item }) => ({ ...item, source })) }))
    const after = await t.engine.buildContext(request)
    expect(withoutChunkIds(after)).toEqual(withoutChunkIds(before))
    expect(after.text).toBe(before.text)
  })

  it('the same fact recorded twice appears once, and rebuilding gives the same token count', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    for (const c of ['a', 'b']) {
      await memory.recordTurn({ conversationId: c, scope, user: 'what is the tax rate for invoices?', agent: 'The VAT rate is 21%.' })
    }
    const request = { ...scope, query: 'tax rate for invoices', conversationId: 'n' }
    const bundle = await memory.buildContext(request)
    const items = section(bundle, 'retrieved_evidence').items
    expect(items).toHaveLength(1)
    expect(bundle.omissions.filter((o) => o.reason === 'duplicate')).toHaveLength(1)
    expect((await memory.buildContext(request)).tokenUsedEst).toBe(bundle.tokenUsedEst)
  })
})

describe('buildContext: budget and determinism', () => {
  it('a tool output cut to its excerpt is an omission naming the artifact that holds it whole; a turn cut to fit its section ends with a marker', async () => {
    const clock = testClock()
    await using t = await openTestEngine({ now: clock.now, indexing: 'manual' })
    const output = `${Array.from({ length: 3000 }, (_, n) => `zanzibar frame ${n} at parser.ts:${n}`).join('\n')}\n`
    const big = await t.engine.record({
      kind: 'tool_result',
      scope: { ...scope, conversationId: 'c1' },
      actor: { type: 'tool', id: 'run_tests' },
      content: { tool: 'run_tests', output },
    })
    expect(big.artifactId).toMatch(/^art_/)
    clock.advance(1000)
    const turn = await t.engine.recordTurn({
      conversationId: 'c2',
      scope,
      user: 'why does the quokka importer stall?',
      agent: `The quokka importer stalls because ${'each batch waits for the previous lock and '.repeat(120)}so it never finishes.`,
    })
    const bundle = await t.engine.buildContext({ ...scope, query: 'zanzibar frame quokka importer', conversationId: 'new', maxTokens: 1200 })
    expect(bundle.omissions).toContainEqual({ id: big.eventId, reason: 'truncated_tool_output', detail: big.artifactId })
    const evidence = section(bundle, 'retrieved_evidence')
    const cut = evidence.items.find((item) => item.text.includes('quokka importer stalls'))
    expect(cut?.text.endsWith(' …[truncated]')).toBe(true)
    expect(cut?.tokens).toBeLessThanOrEqual(evidence.capTokens)
    expect(bundle.omissions.filter((o) => o.reason === 'truncated_to_fit').map((o) => o.id)).toContain(turn.userEventId)
    // With room for the whole turn, nothing is cut.
    const roomy = await t.engine.buildContext({ ...scope, query: 'quokka importer', conversationId: 'new', maxTokens: 8000 })
    const whole = section(roomy, 'retrieved_evidence').items.find((item) => item.text.includes('quokka importer stalls'))
    expect(whole?.text.endsWith('so it never finishes.')).toBe(true)
    expect(roomy.omissions.some((o) => o.reason === 'truncated_to_fit')).toBe(false)
  })

  it('a turn cut to fit keeps what it says of the documents it saw: only the answer is shortened', async () => {
    const clock = testClock()
    await using t = await openTestEngine({ now: clock.now, indexing: 'manual', workspace: { mode: 'local', root: '/repo' } })
    const turn = await t.engine.recordTurn({
      conversationId: 'c1',
      scope,
      user: 'why does the quokka importer stall?',
      agent: `The quokka importer stalls because ${'each batch waits for the previous lock and '.repeat(120)}so it never finishes.`,
      procedures: [{ tool: 'read_file', args: { path: 'src/importer.ts' }, document: { path: '/repo/src/importer.ts', content: 'lock()', effect: 'read' } }],
    })
    clock.advance(1000)
    await t.engine.observeDocument({ path: '/repo/src/importer.ts', content: 'lockFree()', conversationId: 'c9', scope })
    const bundle = await t.engine.buildContext({ ...scope, query: 'quokka importer', conversationId: 'new', maxTokens: 1200 })
    const item = section(bundle, 'retrieved_evidence').items.find((i) => i.id === turn.userEventId)
    expect(bundle.omissions.filter((o) => o.reason === 'truncated_to_fit').map((o) => o.id)).toContain(turn.userEventId)
    const lines = item?.text.split('\n') ?? []
    expect(lines[1]).toBe('Q: why does the quokka importer stall?')
    expect(lines.at(-2)?.endsWith(' …[truncated]')).toBe(true)
    expect(lines.at(-1)).toBe('Documents: src/importer.ts (seen v1, now v2: 1 newer version)')
    expect(item?.tokens).toBeLessThanOrEqual(section(bundle, 'retrieved_evidence').capTokens)
  })

  it("standing memories of a context with a higher priority are surfaced first in the rules", async () => {
    const clock = testClock()
    await using t = await openTestEngine({ now: clock.now, indexing: 'manual' })
    const rule = (content: string, context: string) =>
      t.engine.remember({ content, category: 'convention', context, confidence: 0.8, tenantId: 't1', userId: 'ann' })
    // The release rule is older: at equal weight the newer one comes first.
    await rule('Releases are tagged vX.Y.Z from main only', 'Release')
    clock.advance(60_000)
    await rule('Test files sit beside the module they test', 'Layout')
    const rules = async () =>
      section(await t.engine.buildContext({ ...scope, query: 'how do we work', conversationId: 'new', retrieval: false }), 'rules').items.map(
        (item) => item.text,
      )
    expect(await rules()).toEqual(['- Test files sit beside the module they test', '- Releases are tagged vX.Y.Z from main only'])
    await t.engine.memories.defineContext({ name: 'Release', priority: 0.9, tenantId: 't1', userId: 'ann' })
    await t.engine.memories.defineContext({ name: 'Layout', priority: 0.1, tenantId: 't1', userId: 'ann' })
    expect(await rules()).toEqual(['- Releases are tagged vX.Y.Z from main only', '- Test files sit beside the module they test'])
    // A memory in no context weighs as one in a context of the default priority (0.5).
    await t.engine.remember({ content: 'Commits follow the conventional format', category: 'convention', confidence: 0.8, tenantId: 't1', userId: 'ann' })
    expect((await rules())[1]).toBe('- Commits follow the conventional format')
  })

  it('never exceeds maxTokens under the token counter in use', async () => {
    const clock = testClock()
    await using t = await openTestEngine({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
    const words = ['invoice', 'ledger', 'currency', 'export', 'parser', 'deploy', 'review', 'schema']
    for (let n = 0; n < 24; n++) {
      clock.advance(1000)
      await t.engine.recordTurn({
        conversationId: `c${n % 5}`,
        scope,
        user: `${words[n % 8]} question ${n} ${'context '.repeat(n * 3)}`,
        agent: `${words[(n + 3) % 8]} answer ${n} ${'日本語 '.repeat(n)}`,
      })
      await t.engine.kv.put('global', 'rules', `r${n}`, { text: `rule ${n}: ${'be careful '.repeat(n)}` }, { tenantId: 't1' })
    }
    // A tokenizer that is not additive over joined text: every line costs one extra token.
    const lines = (text: string) => estimateTokens(text) + text.split('\n').length
    const counted = await createEngine({ db: t.db, now: clock.now, tokenCounter: lines })
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 64, max: 3000 }),
        fc.constantFrom(...words),
        fc.constantFrom('c0', 'c1', 'c9'),
        fc.boolean(),
        async (maxTokens, query, conversationId, custom) => {
          const engine = custom ? counted : t.engine
          const count = custom ? lines : estimateTokens
          const bundle = await engine.buildContext({ ...scope, query, conversationId, maxTokens })
          expect(count(bundle.text)).toBeLessThanOrEqual(maxTokens)
          expect(bundle.tokenUsedEst).toBe(count(bundle.text))
          for (const s of bundle.sections) expect(s.usedTokens).toBeLessThanOrEqual(s.capTokens)
          // What was dropped to fit came from sections of no higher priority than any kept.
          for (const o of bundle.omissions.filter((x) => x.reason === 'over_budget')) {
            const dropped = SECTION_PRIORITIES[o.detail as SectionName]
            for (const s of bundle.sections.filter((x) => x.items.length > 0)) expect(SECTION_PRIORITIES[s.name]).toBeGreaterThanOrEqual(dropped)
          }
          expect(bundle.provenance.tokenizer).toBe(custom ? 'custom' : 'estimateTokens')
        },
      ),
      { numRuns: 25, seed: 20250209 },
    )
  })

  it('section caps asked for beyond the budget are granted by priority, the lowest getting what is left', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    await onboard(memory)
    const bundle = await memory.buildContext({
      ...scope,
      query: 'what is this project for?',
      conversationId: 'n',
      maxTokens: 4000,
      sections: { retrieved_evidence: 2500, recent_window: 2000 },
    })
    const caps = Object.fromEntries(bundle.sections.map((x) => [x.name, x.capTokens]))
    const scaled = (n: number) => Math.floor((n * 4000) / 65000)
    const before = scaled(1200) + scaled(6000) + scaled(3000) + scaled(4000) + scaled(6000)
    expect(caps).toEqual({
      identity: scaled(1200),
      rules: scaled(6000),
      task_state: scaled(3000),
      decision_ledger: scaled(4000),
      handoff_packet: scaled(6000),
      retrieved_evidence: 2500,
      recent_window: 4000 - before - 2500,
    })
    expect(bundle.tokenUsedEst).toBeLessThanOrEqual(4000)
    expect(SECTION_PRIORITIES.identity).toBeGreaterThan(SECTION_PRIORITIES.recent_window)
  })

  it('gives the same bundle for the same memory and request', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, workspace: { mode: 'local', root: '/repo' } })
    await onboard(memory)
    // Identical times and scores: ties must be broken by id.
    for (const c of ['p', 'q', 'r']) {
      await memory.recordTurn({ conversationId: c, scope, user: 'same words here', agent: `answer ${c}`, createdAt: '2025-01-01T00:00:00Z' })
    }
    const request = { ...scope, query: 'same words project', conversationId: 'n', now: '2025-02-10T00:00:00Z' }
    const a = await memory.buildContext(request)
    const b = await memory.buildContext(request)
    // Each bundle has its own id; everything else is the same.
    expect(b.id).toMatch(/^acb_[0-9a-z]{26}$/)
    expect(b.id).not.toBe(a.id)
    expect(withoutId(b)).toEqual(withoutId(a))
    expect(section(a, 'retrieved_evidence').items.length).toBeGreaterThanOrEqual(4)
  })

  it('built with an earlier `now`, a bundle is the one the memory gave then: later turns, kv entries and changes to curated memories stay out', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, embedder: createTestEmbedder(), workspace: { mode: 'local', root: '/repo' } })
    await onboard(memory)
    const save = (content: string, category: 'instruction' | 'decision') =>
      memory.remember({ content, category, scope: 'user', tenantId: 't1', userId: 'ann' })
    const tabs = await save('indent invoice code with tabs', 'instruction')
    const postgres = await save('keep invoice ledgers in postgres', 'decision')
    const gone = await save('mail invoice reports on fridays', 'instruction')
    await memory.kv.put('global', 'rules', 'currency', 'amounts in cents', { tenantId: 't1' })
    clock.advance(DAY)
    const request = { ...scope, query: 'invoice ledger code', conversationId: 'n', now: clock.now().toISOString() }
    const then = await memory.buildContext(request)

    clock.advance(DAY)
    await memory.memories.update(tabs.id, { content: 'indent invoice code with spaces', category: 'convention' }, { tenantId: 't1' })
    await memory.memories.delete(postgres.id, { tenantId: 't1' })
    await memory.memories.update(gone.id, { expiresAt: new Date(clock.now().getTime() - 60_000) }, { tenantId: 't1' })
    await save('write invoice tests first', 'instruction')
    await memory.kv.put('global', 'rules', 'currency', 'amounts in euros', { tenantId: 't1' })
    await memory.recordTurn({ conversationId: 'later', scope, user: 'where is the invoice ledger code?', agent: 'In src/ledger.js.' })
    await memory.record({ kind: 'decision', scope: { ...scope, conversationId: 'later' }, actor: { type: 'agent', id: 'coder' }, content: { decision: 'Move the invoice ledger code to TypeScript' } })

    const now = await memory.buildContext({ ...request, now: clock.now().toISOString() })
    const texts = (b: ContextBundle) => b.sections.flatMap((s) => s.items.map((i) => i.text))
    expect(texts(now)).toEqual(expect.arrayContaining(['- indent invoice code with spaces', '- write invoice tests first', '- amounts in euros']))
    expect(texts(now).join('\n')).not.toContain('postgres')
    expect(texts(now).join('\n')).not.toContain('fridays')
    // The same request as of then, after all that: the bundle of then.
    const replay = await memory.buildContext(request)
    expect(withoutId(replay)).toEqual(withoutId(then))
    expect(texts(then)).toEqual(expect.arrayContaining(['- indent invoice code with tabs', '- mail invoice reports on fridays', '- amounts in cents']))
    expect(texts(then).some((t) => t.startsWith('- keep invoice ledgers in postgres'))).toBe(true)
  })

  it('an event shown in its own section is no evidence besides, and a superseded decision is in no section', async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, embedder: createTestEmbedder() })
    const at = (conversationId: string, more: Record<string, unknown> = {}) => ({ ...scope, ...more, conversationId })
    const agent = { type: 'agent' as const, id: 'coder' }
    clock.advance(1000)
    const old = await memory.record({ kind: 'decision', scope: at('old'), actor: agent, content: { decision: 'Use cookie domain example.com for login sessions' } })
    clock.advance(1000)
    const decision = await memory.record({
      kind: 'decision',
      scope: at('old'),
      actor: agent,
      content: { decision: 'Use cookie domain .example.com for login sessions', supersedes: old.eventId },
    })
    clock.advance(1000)
    const task = await memory.record({ kind: 'task_update', scope: at('old'), actor: agent, content: { taskId: 'T1', text: 'fix login cookie domain', status: 'open' } })
    clock.advance(1000)
    const handoff = await memory.record({
      kind: 'message',
      tags: ['handoff'],
      scope: at('old', { agentId: 'other' }),
      actor: { type: 'agent', id: 'other' },
      content: { text: 'handoff: login cookie work continues', to: 'coder' },
    })
    clock.advance(1000)
    const chat = await memory.record({ kind: 'message', scope: at('older'), actor: { type: 'human', id: 'ann' }, content: { text: 'the login cookie domain broke staging' } })
    const b = await memory.buildContext({ ...scope, query: 'login cookie domain', conversationId: 'cur', maxTokens: 8000 })
    const where = (id: string) => b.sections.filter((s) => s.items.some((i) => i.source.eventId === id)).map((s) => s.name)
    expect(where(decision.eventId)).toEqual(['decision_ledger'])
    expect(where(task.eventId)).toEqual(['task_state'])
    expect(where(handoff.eventId)).toEqual(['handoff_packet'])
    expect(where(old.eventId)).toEqual([])
    expect(b.omissions).toContainEqual({ id: old.eventId, reason: 'superseded', detail: decision.eventId })
    expect(where(chat.eventId)).toEqual(['retrieved_evidence'])
  })

  it("a hit on a turn's tool call or its output leads to the turn: one evidence item, and turns() gives its question and answer", async () => {
    const clock = testClock()
    await using memory = await openTestMemory({ now: clock.now, embedder: createTestEmbedder() })
    const turn = await memory.recordTurn({
      conversationId: 'old',
      scope,
      user: 'why do the tests fail?',
      agent: 'The parser crashes on dates.',
      procedures: [{ tool: 'run_tests', args: { suite: 'unit' }, output: 'FAIL segfault in dateparse module' }],
    })
    const hits = await memory.search('segfault dateparse unit suite', { scope: { tenantId: 't1' } })
    expect(hits.map((h) => h.kind)).toEqual(expect.arrayContaining(['tool_call', 'tool_result']))
    for (const t of await memory.turns(hits.map((h) => h.eventId), { tenantId: 't1' })) {
      expect(t).toMatchObject({ userEventId: turn.userEventId, userText: 'why do the tests fail?', replyText: 'The parser crashes on dates.' })
      expect(t.procedures.map((p) => p.tool)).toEqual(['run_tests'])
    }
    const b = await memory.buildContext({ ...scope, query: 'segfault dateparse unit suite', conversationId: 'cur' })
    const evidence = section(b, 'retrieved_evidence').items
    expect(evidence.map((i) => [i.kind, i.id])).toEqual([['turn', turn.userEventId]])
    expect(evidence[0]?.text).toContain('Q: why do the tests fail?')
    expect(evidence[0]?.text).toContain('Procedures: run_tests {"suite":"unit"}')
    // The tool event the query matched is in it, with what it said.
    expect(evidence[0]?.text).toMatch(/\n(Output|Call): .*(segfault|suite)/)
    const [output] = await memory.search('segfault dateparse', { scope: { tenantId: 't1' }, kinds: ['tool_result'] })
    const byOutput = await memory.buildContext({ ...scope, query: 'FAIL segfault dateparse module', conversationId: 'cur' })
    expect(output?.kind).toBe('tool_result')
    expect(section(byOutput, 'retrieved_evidence').items[0]?.text).toContain('FAIL segfault in dateparse module')
  })

  it('takes who it is for as scope, as recordTurn and search do; the flat names still work', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    await memory.recordTurn({ conversationId: 'a', scope: { userId: 'ann' }, user: 'where are invoices parsed?', agent: 'In src/parse.ts.' })
    const scoped = await memory.buildContext({ query: 'invoice parsing', conversationId: 'b', scope: { userId: 'ann' } })
    const flat = await memory.buildContext({ query: 'invoice parsing', conversationId: 'b', userId: 'ann' })
    expect(scoped.provenance.filters.userId).toBe('ann')
    expect(withoutId(scoped)).toEqual(withoutId(flat))
    await expect(
      memory.buildContext({ query: 'invoice parsing', scope: { userId: 'ann' }, userId: 'bob' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(memory.buildContext({ query: 'invoice parsing', maxTokens: 63 })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('an agent gets the bundle through the build_context tool', async () => {
    await using memory = await openTestMemory({ now: testClock().now })
    await memory.recordTurn({ conversationId: 'a', scope: { userId: 'ann' }, user: 'where are invoices parsed?', agent: 'In src/parse.ts.' })
    const bundle = (await memory.callTool('build_context', { query: 'invoice parsing', conversation_id: 'b', max_tokens: 500 }, {
      userId: 'ann',
    })) as ContextBundle
    expect(bundle.budgetTokens).toBe(500)
    expect(section(bundle, 'retrieved_evidence').items).toHaveLength(1)
    expect(bundle.provenance.filters.userId).toBe('ann')
  })
})
