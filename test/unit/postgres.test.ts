import { PassThrough } from 'node:stream'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { openMemory } from '../../src/node/index.ts'
import { runMcpCli } from '../../src/node/mcp-cli.ts'
import { SCHEMA_VERSION } from '../../src/core/db/schema/migrations.ts'
import { createTestEmbedder } from '../support/embedder.ts'
import { codeOf } from '../support/errors.ts'
import { startHolder } from '../support/holder.ts'
import { templateBlob } from '../support/memory.ts'
import { databaseUrl } from '../support/postgres-server.ts'
import { makeServerDatabase, testPostgresUrl } from '../support/server-memory.ts'

// The API tests run on the server too (vitest.server.config.ts); these test what only a server
// has: its connections, its write lock, and a database without pgvector.
describe.skipIf(testPostgresUrl() === null)('a memory on a PostgreSQL server', () => {
  let database: Awaited<ReturnType<typeof makeServerDatabase>>
  beforeEach(async () => {
    database = await makeServerDatabase()
  })
  afterEach(async () => {
    await database.drop()
  })

  it('says it is on a server without pgvector: keyword search, an embedder set aside with a warning', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      await using memory = await openMemory({ postgres: database.url, embedder: createTestEmbedder() })
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('no pgvector'))
      const stats = await memory.stats()
      expect(stats).toMatchObject({ backend: 'postgres', vectorSearch: false, schemaVersion: SCHEMA_VERSION })
      expect((await memory.ping()).vector).toBe('')
      await memory.recordTurn({ conversationId: 'c', scope: { userId: 'ann' }, user: 'We deploy on Fridays', agent: 'Noted' })
      const hits = await memory.search('deploy', { scope: { userId: 'ann' } })
      expect(hits[0]?.text).toBe('We deploy on Fridays')
      expect(await codeOf(memory.search('deploy', { mode: 'vector', scope: { userId: 'ann' } }))).toBe('MODEL_UNAVAILABLE')
    } finally {
      warn.mockRestore()
    }
  })

  it('two memories on one database take turns: each sees the other, and a clock behind is raised', async () => {
    const hourAgo = () => new Date(Date.now() - 3_600_000)
    await using ahead = await openMemory({ postgres: database.url })
    await using behind = await openMemory({ postgres: database.url, now: hourAgo })
    for (let n = 0; n < 5; n++) {
      await Promise.all([ahead.kv.put('user:ann', 'prefs', 'tea', { n, by: 'ahead' }), behind.kv.put('user:ann', 'prefs', 'tea', { n, by: 'behind' })])
    }
    const history = await behind.kv.history('user:ann', 'prefs', 'tea')
    expect(history.map((h) => h.rev).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    const byRev = [...history].sort((x, y) => x.rev - y.rev).map((h) => h.createdAt.getTime())
    // The clock an hour behind dates its writes after the other's, never before.
    expect(byRev).toEqual([...byRev].sort((x, y) => x - y))
    expect((await ahead.kv.get('user:ann', 'prefs', 'tea'))?.rev).toBe(10)
  })

  it('opens started at once on a fresh database all open, and migrate it once', async () => {
    const fresh = new pg.Client(testPostgresUrl() ?? '')
    await fresh.connect()
    const name = `engram_fresh_${process.pid}`
    await fresh.query(`CREATE DATABASE ${name}`)
    const url = databaseUrl(testPostgresUrl() ?? '', name)
    try {
      const opened = await Promise.all([1, 2, 3].map(() => openMemory({ postgres: url })))
      await Promise.all(opened.map((m, i) => m.remember({ content: `Fact ${i} from one of three`, category: 'fact', userId: 'ann' })))
      expect(await opened[0]?.memories.list({ userId: 'ann' })).toHaveLength(3)
      await Promise.all(opened.map((m) => m.close()))
      const check = new pg.Client(url)
      await check.connect()
      const { rows } = await check.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')
      await check.end()
      expect(rows.map((r) => r.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1))
    } finally {
      await fresh.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await fresh.end()
    }
  })

  it('many agents writing at once in one process: turn numbers contiguous, no write lost or doubled', async () => {
    await using memory = await openMemory({ postgres: database.url, indexing: 'manual' })
    const agents = Array.from({ length: 10 }, (_, a) => a)
    await Promise.all(
      agents.map(async (a) => {
        for (let n = 0; n < 6; n++) {
          const conversationId = `c${(a + n) % 3}`
          await memory.recordTurn({ conversationId, scope: { userId: 'ann', agentId: `agent-${a}` }, user: `agent ${a} turn ${n}`, agent: 'ok' })
          await memory.kv.put('user:ann', 'progress', `agent-${a}`, { n })
        }
      }),
    )
    for (const conversationId of ['c0', 'c1', 'c2']) {
      const { events } = await memory.graph.conversation(conversationId)
      const turns = [...new Set(events.map((e) => e.turnIndex))]
      expect(turns).toEqual(Array.from({ length: turns.length }, (_, i) => i))
    }
    expect((await memory.stats()).counts.events).toBe(10 * 6 * 2)
    const progress = await Promise.all(agents.map((a) => memory.kv.get('user:ann', 'progress', `agent-${a}`)))
    expect(progress.map((p) => [p?.rev, p?.payload])).toEqual(agents.map(() => [6, { n: 5 }]))
  })

  it('takes a node-postgres Pool, and gives its connections back on close', async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 2 })
    // The database is dropped after the test, ending any connection the pool is still closing.
    pool.on('error', () => {})
    try {
      const memory = await openMemory({ postgres: pool })
      // One for its statements, one for the write lock.
      expect(pool.totalCount - pool.idleCount).toBe(2)
      await memory.remember({ content: 'Ann prefers tea', category: 'preference', userId: 'ann' })
      await memory.close()
      expect(pool.totalCount - pool.idleCount).toBe(0)
      expect(await codeOf(memory.memories.list())).toBe('CLOSED')
      // The connections went back without the memory's lock: the next open through the pool writes.
      await using again = await openMemory({ postgres: pool })
      await again.remember({ content: 'Ann walks to work', category: 'fact', userId: 'ann' })
      expect((await again.memories.list({ userId: 'ann' })).map((m) => m.content).sort()).toEqual(['Ann prefers tea', 'Ann walks to work'])
      await again.close()
      // Each memory stopped watching the connections it gave back: none gathers listeners.
      const listeners = async () => {
        const client = await pool.connect()
        const n = client.listenerCount('error')
        client.release()
        return n
      }
      const before = await listeners()
      for (let n = 0; n < 3; n++) await (await openMemory({ postgres: pool })).close()
      expect(await listeners()).toBe(before)
    } finally {
      await pool.end()
    }
  })

  it('a connection the server ends fails the calls after it with STORAGE_UNAVAILABLE', async () => {
    const memory = await openMemory({ postgres: database.url })
    await memory.remember({ content: 'Ann prefers tea', category: 'preference', userId: 'ann' })
    const admin = new pg.Client(testPostgresUrl() ?? '')
    await admin.connect()
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [new URL(database.url).pathname.slice(1)])
    await admin.end()
    await expect.poll(() => codeOf(memory.memories.list({ userId: 'ann' }))).toBe('STORAGE_UNAVAILABLE')
    // A write fails the same way: its turn's lock went with the other connection.
    expect(await codeOf(memory.kv.put('user:ann', 'prefs', 'tea', { n: 1 }))).toBe('STORAGE_UNAVAILABLE')
    await memory.close()
  })

  it('a server it cannot reach is STORAGE_UNAVAILABLE', async () => {
    const url = new URL(database.url)
    url.port = '1'
    expect(await codeOf(openMemory({ postgres: url.toString() }))).toBe('STORAGE_UNAVAILABLE')
  })

  it('a process writing back to back leaves others their turns, and one killed in its turn frees it at once', async () => {
    const holder = startHolder({ ENGRAM_POSTGRES: database.url })
    await using memory = await openMemory({ postgres: database.url })
    let killed: number
    try {
      await holder.writing
      for (let n = 1; n <= 10; n++) await memory.kv.put('user:ann', 'prefs', 'tea', { n })
    } finally {
      killed = await holder.kill()
    }
    const seen = holder.acknowledged()
    // The server ends the dead process's session when its socket closes, and its lock with it.
    await memory.kv.put('user:ann', 'prefs', 'tea', { n: 11 })
    expect(performance.now() - killed).toBeLessThan(2_000)
    expect((await memory.kv.get('user:ann', 'prefs', 'tea'))?.rev).toBe(11)
    expect((await memory.stats()).counts.memories).toBeGreaterThanOrEqual(seen)
  })

  it('engram-mcp --postgres serves the server memory to several clients over HTTP', async () => {
    const stop = new AbortController()
    let log = ''
    const stderr = new PassThrough().on('data', (chunk: Buffer) => {
      log += chunk.toString()
    })
    const url = new URL(database.url)
    url.password = 'secret'
    const running = runMcpCli(['--postgres', url.toString(), '--user', 'ann', '--no-embedder', '--port', '0'], {
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      stderr,
      signal: stop.signal,
    })
    await expect.poll(() => /at (http:\S+)/.exec(log)?.[1], { timeout: 20_000 }).toBeDefined()
    expect(log).not.toContain('secret')
    const endpoint = new URL(/at (http:\S+)/.exec(log)?.[1] as string)
    const clients = await Promise.all(
      ['Ann reads the changelog first', 'Ann deploys on Fridays'].map(async (content) => {
        const c = new Client({ name: 'test', version: '1.0.0' })
        await c.connect(new StreamableHTTPClientTransport(endpoint))
        const saved = await c.callTool({ name: 'save_memory', arguments: { content, category: 'fact' } })
        expect(saved.isError).not.toBe(true)
        return c
      }),
    )
    for (const c of clients) await c.close()
    stop.abort()
    await running
    await using reopened = await openMemory({ postgres: database.url })
    expect((await reopened.memories.list({ userId: 'ann' })).map((m) => m.content).sort()).toEqual([
      'Ann deploys on Fridays',
      'Ann reads the changelog first',
    ])
    await expect(runMcpCli(['--postgres', database.url, '--data-dir', '/tmp/x'], { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough() })).rejects.toThrow(/two places/)
  })

  it('a file moves between PGlite and the server both ways; the server, keyword-only, leaves the vectors out', async () => {
    await using local = await openMemory({ loadDataDir: await templateBlob(), cacheMB: 4, embedder: createTestEmbedder() })
    await local.recordTurn({ conversationId: 'c', scope: { userId: 'ann' }, user: 'We deploy on Fridays', agent: 'Noted' })
    await local.remember({ content: 'Ann prefers tea', category: 'preference', userId: 'ann' })
    await local.kv.put('user:ann', 'rules', 'tone', { text: 'short' })
    await local.waitForIndex()
    await using server = await openMemory({ postgres: database.url })
    const report = await server.importFile(await local.exportFile())
    expect(report.vectorsRestored).toBe(0)
    expect((await server.search('deploy', { scope: { userId: 'ann' } }))[0]?.text).toBe('We deploy on Fridays')
    expect((await server.recall('tea', { userId: 'ann' })).map((m) => m.content)).toEqual(['Ann prefers tea'])
    await using back = await openMemory({ loadDataDir: await templateBlob(), cacheMB: 4, embedder: createTestEmbedder() })
    await back.importFile(await server.exportFile())
    expect((await back.kv.get('user:ann', 'rules', 'tone'))?.payload).toEqual({ text: 'short' })
    expect((await back.stats()).counts).toMatchObject({ events: 2, memories: 1 })
  })
})
