import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { request } from 'node:http'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { describe, expect, it } from 'vitest'
import { anthropicTools, MEMORY_GUIDELINES, TOOL_NAMES } from '../../src/core/tools/agent-tools.ts'
import { runMcpCli } from '../../src/node/mcp-cli.ts'
import { createMcpServer, GUIDELINES_PROMPT, serveMcpOverHttp } from '../../src/adapters/mcp/index.ts'
import { type NodeMemory, openMemory } from '../../src/node/index.ts'
import { createTestEmbedder } from '../support/embedder.ts'
import { openTestMemory } from '../support/memory.ts'
import { codeOf } from '../support/errors.ts'

/** A client connected to a server over `memory`, in this process. */
async function connected(memory: NodeMemory, options: Parameters<typeof createMcpServer>[1] = {}) {
  const server = createMcpServer(memory, options)
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name: 'test', version: '1.0.0' })
  await Promise.all([server.connect(serverSide), client.connect(clientSide)])
  return {
    client,
    server,
    async call(name: string, args: Record<string, unknown>) {
      const result = await client.callTool({ name, arguments: args })
      const text = (result.content as { type: string; text: string }[])[0]?.text ?? ''
      return { isError: result.isError === true, text, value: result.isError ? null : (JSON.parse(text) as unknown) }
    },
    [Symbol.asyncDispose]: () => client.close(),
  }
}

describe('MCP server', () => {
  it('offers the agent tools with their schemas and the guidelines as a prompt and as its instructions', async () => {
    await using memory = await openTestMemory()
    await using mcp = await connected(memory)
    const { tools } = await mcp.client.listTools()
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES)
    const expected = anthropicTools()
    for (const [i, tool] of tools.entries()) {
      expect(tool.description).toBe(expected[i]?.description)
      expect(tool.inputSchema).toEqual(expected[i]?.input_schema)
    }
    expect(mcp.client.getInstructions()).toBe(MEMORY_GUIDELINES)
    expect((await mcp.client.listPrompts()).prompts.map((p) => p.name)).toEqual([GUIDELINES_PROMPT])
    const prompt = await mcp.client.getPrompt({ name: GUIDELINES_PROMPT })
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: MEMORY_GUIDELINES })
    await expect(mcp.client.getPrompt({ name: 'nope' })).rejects.toThrow(/No prompt "nope"/)
    const version = (JSON.parse(await readFile('package.json', 'utf8')) as { version: string }).version
    expect(mcp.client.getServerVersion()).toEqual({ name: 'engram', version })
  })

  it('saves and recalls for the identity it was given, and answers bad calls as tool errors', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    await using alice = await connected(memory, { identity: { userId: 'alice' } })
    await using bob = await connected(memory, { identity: { userId: 'bob' }, tools: ['recall_memories'] })

    const saved = await alice.call('save_memory', { content: 'Alice wants tabs, not spaces', category: 'preference' })
    expect(saved).toMatchObject({ isError: false, value: { action: 'created' } })
    const recalled = await alice.call('recall_memories', { query: 'tabs or spaces' })
    expect((recalled.value as { memories: { content: string }[] }).memories.map((m) => m.content)).toEqual([
      'Alice wants tabs, not spaces',
    ])
    const stored = await memory.memories.list({ userId: 'alice' })
    expect(stored.map((m) => m.content)).toEqual(['Alice wants tabs, not spaces'])
    // Another identity sees none of it, and only the tools it was given.
    expect((await bob.call('recall_memories', { query: 'tabs or spaces' })).value).toEqual({ memories: [] })
    expect((await bob.client.listTools()).tools.map((t) => t.name)).toEqual(['recall_memories'])
    expect(await bob.call('save_memory', { content: 'x y', category: 'fact' })).toMatchObject({
      isError: true,
      text: expect.stringMatching(/^INVALID_INPUT: Unknown tool "save_memory"/),
    })

    // Bad arguments are the engine's own refusals, readable by the model; nothing is written.
    const refused = await alice.call('save_memory', { content: '', category: 'fact' })
    expect(refused).toMatchObject({ isError: true, text: expect.stringMatching(/^INVALID_INPUT: Invalid save_memory arguments/) })
    expect(await alice.call('recall_memories', { query: 'a\u0000b' })).toMatchObject({ isError: true, text: expect.stringMatching(/NUL/) })
    expect((await memory.memories.list({ status: 'any' })).length).toBe(1)

    // The other tools answer through the same path.
    const recorded = await alice.call('record_event', {
      kind: 'decision',
      conversation_id: 'c1',
      text: 'Ship the MCP server: clients ask for it',
    })
    expect(recorded.isError).toBe(false)
    const context = await alice.call('build_context', { query: 'what did we decide about MCP?', conversation_id: 'c1' })
    expect(JSON.stringify(context.value)).toContain('Ship the MCP server')
  })

  it('refuses options it cannot use', async () => {
    await using memory = await openTestMemory()
    expect(await codeOf(Promise.resolve().then(() => createMcpServer(memory, { tools: ['no_such_tool' as never] })))).toBe('INVALID_INPUT')
    expect(await codeOf(Promise.resolve().then(() => createMcpServer(memory, { identity: { userId: '' } })))).toBe('INVALID_INPUT')
  })
})

/** A client transport over a pair of streams, framed as the stdio transport frames them. */
function streamTransport(toServer: PassThrough, fromServer: PassThrough): Transport {
  const buffer = new ReadBuffer()
  const transport: Transport = {
    start() {
      fromServer.on('data', (chunk: Buffer) => {
        buffer.append(chunk)
        for (let message = buffer.readMessage(); message; message = buffer.readMessage()) transport.onmessage?.(message)
      })
      return Promise.resolve()
    },
    send(message: JSONRPCMessage) {
      toServer.write(serializeMessage(message))
      return Promise.resolve()
    },
    close() {
      toServer.end()
      transport.onclose?.()
      return Promise.resolve()
    },
  }
  return transport
}

describe('engram-mcp', () => {
  it('serves a memory in a data folder over stdio; what it saved is there when it serves it again', async () => {
    const dataDir = await import('node:fs/promises').then(({ mkdtemp }) => mkdtemp('/tmp/engram-mcp-'))
    const session = async (work: (client: Client) => Promise<void>) => {
      const stdin = new PassThrough()
      const stdout = new PassThrough()
      const stderr = new PassThrough()
      const logged: string[] = []
      stderr.on('data', (chunk: Buffer) => logged.push(chunk.toString()))
      const served = runMcpCli(['--data-dir', dataDir, '--user', 'ann', '--no-embedder'], { stdin, stdout, stderr })
      const client = new Client({ name: 'test', version: '1.0.0' })
      await client.connect(streamTransport(stdin, stdout))
      await work(client)
      await client.close()
      await served
      return logged.join('')
    }
    const log = await session(async (client) => {
      const saved = await client.callTool({ name: 'save_memory', arguments: { content: 'Ann deploys on Fridays', category: 'convention' } })
      expect(saved.isError).not.toBe(true)
    })
    expect(log).toContain(`serving ${dataDir}`)
    await session(async (client) => {
      const recalled = await client.callTool({ name: 'recall_memories', arguments: { query: 'deploys' } })
      expect((recalled.content as { text: string }[])[0]?.text).toContain('Ann deploys on Fridays')
    })
    // Stopped (SIGINT or SIGTERM abort the signal) instead of closed by the client: it closes
    // the memory and lets go of the folder at once.
    const stop = new AbortController()
    const stopped = runMcpCli(['--data-dir', dataDir, '--no-embedder'], { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough(), signal: stop.signal })
    await new Promise((done) => setTimeout(done, 300))
    stop.abort()
    await stopped
    await session(async (client) => {
      expect((await client.listTools()).tools.length).toBe(TOOL_NAMES.length)
    })
    const help: string[] = []
    const stderr = new PassThrough()
    stderr.on('data', (chunk: Buffer) => help.push(chunk.toString()))
    await runMcpCli(['--help'], { stdin: new PassThrough(), stdout: new PassThrough(), stderr })
    expect(help.join('')).toContain('--data-dir DIR')
    await expect(runMcpCli(['--bogus'], { stdin: new PassThrough(), stdout: new PassThrough(), stderr })).rejects.toThrow(/bogus/)
  }, 60_000)

  it('over HTTP, several clients share one memory, each session acting for its own identity', async () => {
    await using memory = await openTestMemory({ embedder: createTestEmbedder() })
    const http = await serveMcpOverHttp(memory, { port: 0, identity: { userId: 'ann', agentId: 'desktop' } })
    try {
      expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      const client = async (headers: Record<string, string> = {}) => {
        const c = new Client({ name: 'test', version: '1.0.0' })
        await c.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers } }))
        const call = async (name: string, args: Record<string, unknown>) => {
          const r = await c.callTool({ name, arguments: args })
          return JSON.parse((r.content as { text: string }[])[0]?.text ?? 'null') as Record<string, unknown>
        }
        return { c, call }
      }
      const desktop = await client()
      const editor = await client({ 'x-engram-agent': 'editor' })
      const bob = await client({ 'x-engram-user': 'bob' })
      expect(http.sessions()).toBe(3)
      expect((await desktop.c.listTools()).tools.map((t) => t.name)).toEqual(TOOL_NAMES)

      // What one of Ann's clients saves, her other one recalls; Bob's session sees none of it.
      const saved = await desktop.call('save_memory', { content: 'Ann ships on Fridays', category: 'fact' })
      const recalled = (await editor.call('recall_memories', { query: 'ships Fridays' })).memories as { id: string }[]
      expect(recalled.map((m) => m.id)).toEqual([saved.id])
      expect((await bob.call('recall_memories', { query: 'ships Fridays' })).memories).toEqual([])
      expect((await memory.memories.get(saved.id as string))?.agentId).toBe('desktop')

      // Requests that open no session, or name none that exists, or come by another Host, are refused.
      const post = (headers: Record<string, string>, body: unknown) =>
        fetch(http.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
          body: JSON.stringify(body),
        })
      const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
      expect((await post({}, list)).status).toBe(400)
      expect((await post({ 'mcp-session-id': 'nope' }, list)).status).toBe(404)
      expect((await fetch(http.url.replace('/mcp', '/other'))).status).toBe(404)
      const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }
      // (fetch keeps its own Host header: sent by hand.)
      const byHost = await new Promise<number>((done, fail) => {
        const body = JSON.stringify(init)
        const req = request(http.url, {
          method: 'POST',
          headers: { host: 'evil.example', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        }, (res) => {
          res.resume()
          done(res.statusCode ?? 0)
        })
        req.on('error', fail)
        req.end(body)
      })
      expect(byHost).toBe(403)
      expect((await post({ 'x-engram-user': 'x'.repeat(300) }, init)).status).toBe(400)

      await desktop.c.close()
      await editor.c.close()
      await bob.c.close()
    } finally {
      await http.close()
    }
    // Closed: nothing listens any more.
    await expect(fetch(http.url)).rejects.toThrow()
  })

  it('engram-mcp --port serves over HTTP until stopped, then closes the memory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'engram-mcp-http-'))
    try {
      const stop = new AbortController()
      const stderr = new PassThrough()
      let log = ''
      stderr.on('data', (chunk: Buffer) => {
        log += chunk.toString()
      })
      const running = runMcpCli(['--data-dir', dir, '--user', 'ann', '--no-embedder', '--port', '0'], {
        stdin: new PassThrough(),
        stdout: new PassThrough(),
        stderr,
        signal: stop.signal,
      })
      await expect.poll(() => /at (http:\S+)/.exec(log)?.[1], { timeout: 30_000 }).toBeDefined()
      const url = /at (http:\S+)/.exec(log)?.[1] as string
      const c = new Client({ name: 'test', version: '1.0.0' })
      await c.connect(new StreamableHTTPClientTransport(new URL(url)))
      const saved = await c.callTool({ name: 'save_memory', arguments: { content: 'Ann reads the changelog first', category: 'fact' } })
      expect(saved.isError).not.toBe(true)
      await c.close()
      stop.abort()
      await running
      // The folder is free again, and holds what was saved.
      await using reopened = await openMemory({ dataDir: dir })
      expect((await reopened.memories.list({ userId: 'ann' })).map((m) => m.content)).toEqual(['Ann reads the changelog first'])
      const io = () => ({ stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough() })
      for (const port of ['x', '', ' ', '0x1F90', '1e4', '-1', '70000']) {
        await expect(runMcpCli(['--data-dir', dir, '--port', port], io()), port).rejects.toThrow(/--port/)
      }
      // A bad identity is refused before the memory opens (held here: opening it would fail so).
      await reopened.close()
      await using held = await openMemory({ dataDir: dir })
      await expect(runMcpCli(['--data-dir', dir, '--user', ''], io())).rejects.toMatchObject({ code: 'INVALID_INPUT' })
      await expect(serveMcpOverHttp(held, { port: 0, identity: { userId: ' ann' } })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('over HTTP, sessions a client left end after a while idle, and past the most kept a new one is refused', async () => {
    await using memory = await openTestMemory()
    const http = await serveMcpOverHttp(memory, { port: 0, identity: { userId: 'ann' }, idleMs: 300, maxSessions: 2 })
    try {
      const connect = async () => {
        const c = new Client({ name: 'test', version: '1.0.0' })
        await c.connect(new StreamableHTTPClientTransport(new URL(http.url)))
        return c
      }
      const kept = await connect()
      await connect() // left without ending its session
      expect(http.sessions()).toBe(2)
      await expect(connect()).rejects.toThrow(/503|sessions are open/)
      // One used now and then stays; the one left alone ends.
      for (let i = 0; i < 6; i++) {
        await new Promise((resolve) => setTimeout(resolve, 120))
        await kept.listTools()
      }
      expect(http.sessions()).toBe(1)
      expect((await kept.listTools()).tools.length).toBe(TOOL_NAMES.length)
      await (await connect()).close()
      await kept.close()
    } finally {
      await http.close()
    }
  })
})
