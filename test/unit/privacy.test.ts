import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Memory } from '../../src/adapters/mem0/facade.ts'
import { allowedSensitivities, CHANNEL_SENSITIVITIES } from '../../src/core/privacy/channels.ts'
import { countRedactions, redact, redactJson } from '../../src/core/privacy/redact.ts'
import { openTestEngine } from '../support/engine.ts'
import { openTestMemory } from '../support/memory.ts'
import { nearMisses, secretCorpus } from '../support/secrets.ts'

const corpus = secretCorpus()
const misses = nearMisses()
const scope = { tenantId: 'acme', userId: 'ann', agentId: 'coder', conversationId: 'c1' }
const human = { type: 'human' as const, id: 'ann' }

/** The forms a secret can take inside stored text: as is, and JSON-escaped (jsonb columns). */
const forms = (secret: string) => [secret, JSON.stringify(secret).slice(1, -1)]

describe('secret detection', () => {
  it(`replaces each of the ${corpus.length} credentials with its type and reports it without its value`, () => {
    expect(corpus.length).toBeGreaterThanOrEqual(30)
    for (const s of corpus) {
      const r = redact(s.text)
      expect(r.text, s.type).not.toContain(s.secret)
      expect(r.text, s.type).toContain(`[REDACTED:${s.type}]`)
      expect(r.findings.map((f) => f.type), s.text).toEqual([s.type])
      expect(JSON.stringify(r.findings)).not.toContain(s.secret)
      // The finding points at exactly the span that held the secret.
      const [f] = r.findings
      expect(s.text.slice(f?.start, f?.end)).toBe(s.secret)
    }
  })

  it(`leaves ${misses.length} look-alikes untouched: hashes, UUIDs, images, integrity strings, placeholders, prose`, () => {
    expect(misses.length).toBeGreaterThanOrEqual(30)
    for (const text of misses) expect(redact(text), text).toEqual({ text, findings: [] })
  })

  it('finds every secret of a text, counted by type', () => {
    const text = corpus.map((s) => s.text).join('\n---\n')
    const r = redact(text)
    for (const s of corpus) expect(r.text).not.toContain(s.secret)
    expect(countRedactions(r.findings)).toEqual(countRedactions(corpus))
  })

  it('a credential under a credential name in structured JSON is replaced whole', () => {
    const token = `${'Zq'}${'8'.repeat(3)}xT4vLp2${'Qw'}9mRkN7bY3`
    const r = redactJson({ headers: { accessToken: token, tokenCount: 1234 }, path: 'src/auth.ts' })
    expect(r.value).toEqual({
      headers: { accessToken: '[REDACTED:secret]', tokenCount: 1234 },
      path: 'src/auth.ts',
    })
    expect(r.redactions).toEqual([{ type: 'secret', count: 1 }])
  })
})

describe('nothing secret is stored', () => {
  it('event content, chunks, artifacts, document versions, turn arguments, memories and kv hold no secret', async () => {
    await using t = await openTestEngine()
    const { engine, db } = t
    const all = corpus.map((s) => s.text).join('\n')
    const bearer = corpus.find((s) => s.type === 'bearer_token') as (typeof corpus)[number]
    for (const s of corpus) {
      await engine.record({ kind: 'message', scope, actor: human, content: { text: s.text } })
      await engine.remember({ content: `Deploy note: ${s.text}`, category: 'fact', tenantId: 'acme', userId: 'ann' })
    }
    // Long tool output: the event keeps an excerpt, the artifact the whole (redacted) output.
    const output = `${'line of build log\n'.repeat(4000)}${all}\n`
    const result = await engine.record({
      kind: 'tool_result',
      scope,
      actor: { type: 'tool', id: 'bash' },
      content: { tool: 'bash', output },
    })
    expect(result.artifactId).toBeDefined()
    await engine.recordTurn({
      conversationId: 'c1',
      scope: { tenantId: 'acme', userId: 'ann' },
      user: `connect with ${(corpus[0] as (typeof corpus)[number]).text}`,
      agent: 'Connected.',
      procedures: [
        { tool: 'http_get', args: { url: 'https://api.acme.io', headers: { Authorization: bearer.text } }, output: all },
        { tool: 'read_file', args: { path: '/app/.env' }, document: { path: '/app/.env', content: all, effect: 'read' } },
      ],
    })
    await engine.observeDocument({ path: '/app/secrets.txt', content: all, conversationId: 'c1', scope: { tenantId: 'acme' } })
    await engine.kv.put('repo:acme', 'procedures', 'deploy', { steps: corpus.map((s) => s.text) }, { tenantId: 'acme' })
    const first = await engine.remember({ content: 'Rotate keys monthly', category: 'procedure', tenantId: 'acme', userId: 'ann' })
    await engine.memories.update(first.id, { content: `Rotate ${(corpus[5] as (typeof corpus)[number]).text}`, metadata: { key: (corpus[6] as (typeof corpus)[number]).text } }, { tenantId: 'acme' })
    await engine.graph.putNode({ id: 'svc:api', type: 'service', payload: { env: all }, tenantId: 'acme' })

    const { rows } = await db.query<{ place: string; text: string }>(
      `SELECT 'events' AS place, content::text || meta::text AS text FROM events
       UNION ALL SELECT 'chunks', text FROM chunks
       UNION ALL SELECT 'artifacts', content FROM artifacts
       UNION ALL SELECT 'doc_versions', coalesce(content, '') FROM doc_versions
       UNION ALL SELECT 'edges', props::text FROM edges
       UNION ALL SELECT 'memories', content || metadata::text FROM memories
       UNION ALL SELECT 'memory_history', coalesce(old_value, '') || coalesce(new_value, '') || changes::text FROM memory_history
       UNION ALL SELECT 'kv', coalesce(payload::text, '') FROM kv
       UNION ALL SELECT 'nodes', payload::text FROM nodes`,
    )
    const places = new Set(rows.map((r) => r.place))
    expect([...places].sort()).toEqual(
      ['artifacts', 'chunks', 'doc_versions', 'edges', 'events', 'kv', 'memories', 'memory_history', 'nodes'].sort(),
    )
    for (const s of corpus) {
      for (const r of rows) for (const form of forms(s.secret)) expect(r.text.includes(form), `${s.type} in ${r.place}`).toBe(false)
    }
    // What was stored is the redacted text, not nothing.
    const artifact = await engine.artifacts.get(result.artifactId as string, { tenantId: 'acme' })
    expect(artifact.content).toBe(redact(output).text)
  })

  it('an event records which secrets were replaced, by type and count, visible on read', async () => {
    await using memory = await openTestMemory()
    const github = corpus.find((s) => s.type === 'github_token') as (typeof corpus)[number]
    const jwt = corpus.find((s) => s.type === 'jwt') as (typeof corpus)[number]
    const r = await memory.record({
      kind: 'message',
      scope,
      actor: human,
      content: { text: `${github.text}\n${jwt.text}\n${github.text}` },
    })
    const event = await memory.events.get(r.eventId, { tenantId: 'acme' })
    expect(event.meta).toEqual({
      redactions: [
        { type: 'github_token', count: 2 },
        { type: 'jwt', count: 1 },
      ],
    })
    expect(JSON.stringify(event)).not.toContain(github.secret)

    const clean = await memory.record({ kind: 'message', scope, actor: human, content: { text: misses.join('\n') } })
    const stored = await memory.events.get(clean.eventId, { tenantId: 'acme' })
    expect(stored.meta).toEqual({})
    expect(stored.content).toEqual({ text: misses.join('\n') })
  })

  it('a turn records secrets in tool arguments and read documents on the event that stored them', async () => {
    await using memory = await openTestMemory()
    const stripe = corpus.find((s) => s.type === 'stripe_key') as (typeof corpus)[number]
    const pem = corpus.find((s) => s.type === 'private_key') as (typeof corpus)[number]
    const turn = await memory.recordTurn({
      conversationId: 'c1',
      user: 'charge the card',
      agent: 'Charged.',
      procedures: [
        { tool: 'stripe_charge', args: { apiKey: stripe.secret, amount: 100 }, output: 'ok' },
        { tool: 'read_file', args: { path: '/home/ann/.ssh/id_rsa' }, document: { path: '/home/ann/.ssh/id_rsa', content: pem.text, effect: 'read' } },
      ],
    })
    const call = await memory.events.get(turn.toolEventIds[0] as string)
    expect(call.content).toEqual({ tool: 'stripe_charge', args: { apiKey: '[REDACTED:stripe_key]', amount: 100 } })
    expect(call.meta).toEqual({ redactions: [{ type: 'stripe_key', count: 1 }] })
    const reply = await memory.events.get(turn.agentEventId)
    expect(reply.meta).toEqual({ redactions: [{ type: 'private_key', count: 1 }] })
    const version = await memory.documents.version(turn.procedures[1]?.versionId as string)
    expect(version.content).toBe(redact(pem.text).text)
    const observed = await memory.observeDocument({ path: '/home/ann/.ssh/id_rsa.2', content: pem.text, conversationId: 'c1' })
    expect(observed.redactions).toEqual([{ type: 'private_key', count: 1 }])
  })

  it('a remembered secret is replaced and the memory and its history say so', async () => {
    await using memory = await openTestMemory()
    const key = corpus.find((s) => s.type === 'openai_api_key') as (typeof corpus)[number]
    const r = await memory.remember({ content: `The staging key is ${key.secret}`, category: 'fact' })
    expect(r).toMatchObject({ action: 'created', redactions: [{ type: 'openai_api_key', count: 1 }] })
    const m = await memory.memories.get(r.id)
    expect(m?.content).toBe('The staging key is [REDACTED:openai_api_key]')
    const history = await memory.memories.history(r.id)
    expect(history[0]?.changes).toEqual({ redactions: [{ type: 'openai_api_key', count: 1 }] })
    // Remembering it again is the same memory: redaction is deterministic, so dedup still works.
    expect((await memory.remember({ content: `The staging key is ${key.secret}`, category: 'fact' })).action).toBe('unchanged')
  })

  it("sensitivity 'secret' is refused by every write, and nothing is written", async () => {
    await using t = await openTestEngine()
    const { engine, db } = t
    const count = async () =>
      (await db.query<{ n: number }>(`SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM memories) AS n`))
        .rows[0]?.n
    await expect(
      engine.record({ kind: 'message', scope, actor: human, sensitivity: 'secret', content: { text: 'x' } }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(
      engine.recordTurn({ conversationId: 'c1', sensitivity: 'secret', user: 'a', agent: 'b' }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(engine.remember({ content: 'pin 1234', category: 'fact', sensitivity: 'secret' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    })
    expect(Number(await count())).toBe(0)
    const ok = await engine.remember({ content: 'pin hint', category: 'fact' })
    await expect(engine.memories.update(ok.id, { sensitivity: 'secret' })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    expect((await engine.memories.get(ok.id))?.sensitivity).toBe('none')
  })
})

describe('channels', () => {
  it('public shows none; agent none and low; team and private everything stored', () => {
    expect(allowedSensitivities('public')).toEqual(['none'])
    expect(allowedSensitivities('agent')).toEqual(['none', 'low'])
    expect(allowedSensitivities('team')).toEqual(['none', 'low', 'high'])
    expect(allowedSensitivities('private')).toEqual(['none', 'low', 'high'])
    for (const list of Object.values(CHANNEL_SENSITIVITIES)) expect(list).not.toContain('secret')
  })

  it('event reads leave out what the channel may not show', async () => {
    await using memory = await openTestMemory()
    const ids: Record<string, string> = {}
    for (const sensitivity of ['none', 'low', 'high'] as const) {
      const r = await memory.record({ kind: 'message', scope, actor: human, sensitivity, content: { text: sensitivity } })
      ids[sensitivity] = r.eventId
    }
    const list = async (channel: 'public' | 'agent' | 'team' | 'private' | undefined) =>
      (
        await memory.events.list({ tenantId: 'acme', conversationId: 'c1', ...(channel ? { channel } : {}) })
      ).map((e) => e.sensitivity)
    expect(await list('public')).toEqual(['none'])
    expect(await list('agent')).toEqual(['none', 'low'])
    expect(await list('team')).toEqual(['none', 'low', 'high'])
    expect(await list('private')).toEqual(['none', 'low', 'high'])
    expect(await list(undefined)).toEqual(['none', 'low', 'high'])

    await expect(memory.events.get(ids.high as string, { tenantId: 'acme', channel: 'agent' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    })
    await expect(memory.events.get(ids.low as string, { tenantId: 'acme', channel: 'public' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    })
    expect((await memory.events.get(ids.low as string, { tenantId: 'acme', channel: 'agent' })).id).toBe(ids.low)
  })

  it("the conversation graph for a channel drops hidden events, their edges and the versions only they saw", async () => {
    await using memory = await openTestMemory()
    const open = await memory.recordTurn({
      conversationId: 'c1',
      user: 'what does the README say?',
      agent: 'It describes the CLI.',
      procedures: [{ tool: 'read_file', args: { path: '/app/README.md' }, document: { path: '/app/README.md', content: '# CLI', effect: 'read' } }],
    })
    const hidden = await memory.recordTurn({
      conversationId: 'c1',
      sensitivity: 'high',
      user: 'what is in my salary sheet?',
      agent: 'Your salary figures.',
      procedures: [{ tool: 'read_file', args: { path: '/home/ann/salary.csv' }, document: { path: '/home/ann/salary.csv', content: 'ann,100', effect: 'read' } }],
    })
    const full = await memory.graph.conversation('c1')
    expect(full.events).toHaveLength(4)
    const pub = await memory.graph.conversation('c1', { channel: 'public' })
    expect(pub.events.map((e) => e.id)).toEqual([open.userEventId, open.agentEventId])
    const hiddenIds = new Set([hidden.userEventId, hidden.agentEventId])
    for (const e of pub.edges) {
      expect(hiddenIds.has(e.src)).toBe(false)
      expect(hiddenIds.has(e.dst)).toBe(false)
    }
    expect(pub.versions.map((v) => v.id)).toEqual([open.procedures[0]?.versionId])
    expect(pub.documents.map((d) => d.canonicalKey)).toEqual(['/app/README.md'])
  })

  it('memories carry a sensitivity; recall, list, search and get honour the channel', async () => {
    await using memory = await openTestMemory()
    await memory.remember({ content: 'User likes green tea', category: 'preference', userId: 'ann' })
    const low = await memory.remember({ content: 'User drinks tea at night', category: 'preference', userId: 'ann', sensitivity: 'low' })
    const high = await memory.remember({ content: 'User takes tea with medication', category: 'fact', userId: 'ann', sensitivity: 'high' })
    const recall = async (channel: 'public' | 'agent' | 'team') =>
      (await memory.recall('tea', { userId: 'ann', channel })).map((m) => m.content).sort()
    expect(await recall('public')).toEqual(['User likes green tea'])
    expect(await recall('agent')).toEqual(['User drinks tea at night', 'User likes green tea'])
    expect((await recall('team')).length).toBe(3)
    expect((await memory.memories.list({ userId: 'ann', channel: 'public' })).map((m) => m.sensitivity)).toEqual(['none'])
    expect((await memory.memories.search('tea', { userId: 'ann', channel: 'agent' })).map((m) => m.id)).not.toContain(high.id)
    expect(await memory.memories.get(low.id, { channel: 'public' })).toBeNull()
    expect((await memory.memories.get(high.id))?.sensitivity).toBe('high')
    // Restating a memory with another sensitivity supersedes it rather than keeping the old marking.
    const restated = await memory.remember({ content: 'User likes green tea', category: 'preference', userId: 'ann', sensitivity: 'high' })
    expect(restated.action).toBe('superseded')
    expect(await recall('public')).toEqual([])
  })
})

describe('tenant isolation', () => {
  it('reads and changes by id do not cross tenants', async () => {
    await using memory = await openTestMemory()
    const turn = await memory.recordTurn({
      conversationId: 'c1',
      scope: { tenantId: 'acme' },
      user: 'read the README',
      agent: 'Done.',
      procedures: [{ tool: 'read_file', args: { path: '/app/README.md' }, document: { path: '/app/README.md', content: '# acme', effect: 'read' } }],
    })
    const m = await memory.remember({ content: 'acme uses tabs', category: 'convention', tenantId: 'acme' })
    const versionId = turn.procedures[0]?.versionId as string
    const other = { tenantId: 'globex' }

    await expect(memory.events.get(turn.userEventId, other)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(memory.events.get(turn.userEventId)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect((await memory.events.get(turn.userEventId, { tenantId: 'acme' })).id).toBe(turn.userEventId)
    expect(await memory.graph.out(turn.userEventId, other)).toEqual([])
    expect(await memory.graph.out(turn.userEventId, { tenantId: 'acme' })).toHaveLength(1)
    expect((await memory.graph.walk(turn.userEventId, other)).nodes.map((n) => n.id)).toEqual([turn.userEventId])
    await expect(memory.documents.version(versionId, other)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(memory.documents.stalenessOf(versionId, other)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(memory.documents.get({ documentId: turn.procedures[0]?.documentId as string }, other)).rejects.toMatchObject({
      code: 'NOT_FOUND',
    })
    await expect(memory.graph.tombstone(turn.edgeIds[0] as string, other)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(memory.forget({ eventId: turn.userEventId, ...other })).rejects.toMatchObject({ code: 'NOT_FOUND' })

    expect(await memory.memories.get(m.id, other)).toBeNull()
    expect(await memory.memories.history(m.id, other)).toEqual([])
    await expect(memory.memories.update(m.id, { content: 'globex was here' }, other)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(memory.memories.delete(m.id, other)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect((await memory.memories.get(m.id, { tenantId: 'acme' }))?.content).toBe('acme uses tabs')
  })

  it("a tenant's change feed shows only its own rows and forgets", async () => {
    await using memory = await openTestMemory()
    const since = new Date(Date.now() - 60_000).toISOString()
    await memory.record({ kind: 'message', scope: { tenantId: 'acme', conversationId: 'c1' }, actor: human, content: { text: 'a' } })
    const g = await memory.record({ kind: 'message', scope: { tenantId: 'globex', conversationId: 'c1' }, actor: human, content: { text: 'g' } })
    await memory.forget({ eventId: g.eventId, tenantId: 'globex' })
    await memory.forget({ conversationId: 'c9', tenantId: 'globex' })
    const acme = await memory.diffSince(since, { tenantId: 'acme' })
    expect(acme.events.map((e) => e.scope.tenantId)).toEqual(['acme'])
    expect(acme.forgets).toEqual([])
    expect((await memory.diffSince(since, { tenantId: 'globex' })).forgets).toHaveLength(2)
  })

  it('the mem0 facade reads and changes only the memories of its tenant, and stores no secret', async () => {
    await using memory = await openTestMemory()
    const acme = new Memory(memory, { tenantId: 'acme' })
    const globex = new Memory(memory, { tenantId: 'globex' })
    const key = corpus.find((s) => s.type === 'anthropic_api_key') as (typeof corpus)[number]
    const added = await acme.add(`our key is ${key.secret}`, { userId: 'ann' })
    const id = added.results[0]?.id as string
    expect((await acme.get(id))?.memory).toBe('our key is [REDACTED:anthropic_api_key]')
    expect(await globex.get(id)).toBeNull()
    await expect(globex.update(id, 'taken over')).rejects.toMatchObject({ code: 'NOT_FOUND' })
    await expect(globex.delete(id)).rejects.toMatchObject({ code: 'NOT_FOUND' })
    expect(await globex.history(id)).toEqual([])
    await acme.update(id, `rotated to ${key.secret}`)
    expect((await acme.get(id))?.memory).toBe('rotated to [REDACTED:anthropic_api_key]')
  })

  it("reset with a tenant erases that tenant's memories, history, contexts and links only; the facade resets its own tenant", async () => {
    await using memory = await openTestMemory()
    const save = async (tenantId: string, content: string) => {
      const m = await memory.remember({ content, category: 'fact', scope: 'user', userId: 'ann', tenantId, context: 'work' })
      return m.id
    }
    const a = await save('acme', 'acme ships on fridays')
    const g = await save('globex', 'globex ships on mondays')
    const d = await save('default', 'the default tenant ships daily')
    const links = async (tenantId: string) => (await memory.memories.contexts({ tenantId }))[0]?.memories
    expect(await links('acme')).toBe(1)

    expect(await memory.memories.reset({ confirm: true, tenantId: 'acme' })).toEqual({ memories: 1 })
    expect(await memory.memories.get(a, { tenantId: 'acme' })).toBeNull()
    expect(await memory.memories.history(a, { tenantId: 'acme' })).toEqual([])
    expect(await memory.memories.contexts({ tenantId: 'acme' })).toEqual([])
    expect((await memory.memories.get(g, { tenantId: 'globex' }))?.content).toBe('globex ships on mondays')
    expect(await memory.memories.history(g, { tenantId: 'globex' })).toHaveLength(1)
    expect(await links('globex')).toBe(1)

    // The facade without a tenant works in 'default', and so does its reset.
    await new Memory(memory).reset()
    expect(await memory.memories.get(d)).toBeNull()
    expect(await links('globex')).toBe(1)
    await new Memory(memory, { tenantId: 'globex' }).reset()
    expect(await memory.memories.get(g, { tenantId: 'globex' })).toBeNull()
    expect(await memory.memories.contexts({ tenantId: 'globex' })).toEqual([])

    await save('acme', 'acme again')
    await save('globex', 'globex again')
    expect(await memory.memories.reset({ confirm: true })).toEqual({ memories: 2 })
    expect(await memory.memories.list({ status: 'any', tenantId: 'acme' })).toEqual([])
    expect(await memory.memories.list({ status: 'any', tenantId: 'globex' })).toEqual([])
    await expect(memory.memories.reset({ confirm: true, tenantId: '' } as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' })
  })

  it('random writes under random scopes are never read back under another tenant or user', async () => {
    await using memory = await openTestMemory()
    const tenants = ['t0', 't1']
    const users = ['u0', 'u1']
    const conversations = ['c0', 'c1']
    const who = fc.record({
      tenant: fc.constantFrom(...tenants),
      user: fc.constantFrom(...users),
      agent: fc.constantFrom('a0', 'a1'),
      conversation: fc.constantFrom(...conversations),
    })
    const op = fc.record({ kind: fc.constantFrom('record', 'turn', 'remember'), who, n: fc.nat(5) })
    let run = 0
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 6 }), who, async (ops, reader) => {
        run++
        const tenantOf = (t: string) => `r${run}-${t}`
        const events = new Map<string, Set<string>>() // tenant|conversation → event ids
        const memories = new Map<string, Set<string>>() // tenant|user → memory ids
        const add = (map: Map<string, Set<string>>, key: string, ...ids: string[]) => {
          const set = map.get(key) ?? new Set<string>()
          for (const id of ids) set.add(id)
          map.set(key, set)
        }
        for (const o of ops) {
          const tenantId = tenantOf(o.who.tenant)
          const text = `shared note ${o.n} from ${o.who.user}`
          if (o.kind === 'record') {
            const r = await memory.record({
              kind: 'message',
              scope: { tenantId, userId: o.who.user, agentId: o.who.agent, conversationId: o.who.conversation },
              actor: { type: 'human', id: o.who.user },
              content: { text },
            })
            add(events, `${tenantId}|${o.who.conversation}`, r.eventId)
          } else if (o.kind === 'turn') {
            const t = await memory.recordTurn({
              conversationId: o.who.conversation,
              scope: { tenantId, userId: o.who.user, agentId: o.who.agent },
              user: text,
              agent: `reply ${o.n}`,
              procedures: [{ tool: 'note', args: { n: o.n } }],
            })
            add(events, `${tenantId}|${o.who.conversation}`, t.userEventId, t.agentEventId, ...t.toolEventIds)
          } else {
            const r = await memory.remember({ content: text, category: 'fact', tenantId, userId: o.who.user, dedup: 'exact' })
            add(memories, `${tenantId}|${o.who.user}`, r.id)
          }
        }
        const tenantId = tenantOf(reader.tenant)
        const listed = await memory.events.list({ tenantId, conversationId: reader.conversation })
        for (const e of listed) expect(e.scope).toMatchObject({ tenantId, conversationId: reader.conversation })
        expect(new Set(listed.map((e) => e.id))).toEqual(events.get(`${tenantId}|${reader.conversation}`) ?? new Set())

        const graph = await memory.graph.conversation(reader.conversation, { tenantId })
        expect(new Set(graph.events.map((e) => e.id))).toEqual(events.get(`${tenantId}|${reader.conversation}`) ?? new Set())
        for (const e of graph.edges) expect(e.tenantId).toBe(tenantId)

        const mine = memories.get(`${tenantId}|${reader.user}`) ?? new Set()
        const list = await memory.memories.list({ tenantId, userId: reader.user })
        expect(new Set(list.map((m) => m.id))).toEqual(mine)
        const recalled = await memory.recall('shared note', { tenantId, userId: reader.user, limit: 50 })
        for (const m of recalled) expect(m).toMatchObject({ tenantId, userId: reader.user })
        expect(new Set(recalled.map((m) => m.id))).toEqual(mine)

        // Every id written under another tenant is invisible to this one.
        for (const [key, ids] of events) {
          if (key.startsWith(`${tenantId}|`)) continue
          for (const id of ids) await expect(memory.events.get(id, { tenantId })).rejects.toMatchObject({ code: 'NOT_FOUND' })
        }
        for (const [key, ids] of memories) {
          if (key.startsWith(`${tenantId}|`)) continue
          for (const id of ids) expect(await memory.memories.get(id, { tenantId })).toBeNull()
        }
      }),
      { numRuns: 20, seed: 20250209 },
    )
  }, 60_000)
})
