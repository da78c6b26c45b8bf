import { execFile, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { expect, test } from '@playwright/test'

/**
 * The built `engram-mcp` as an MCP client starts it: `node dist/lib/src/node/mcp-bin.js`, with the
 * bundled model loaded from the built package. No browser.
 */
test('engram-mcp, as built, serves a memory over stdio and recalls by meaning with the bundled model', async () => {
  test.setTimeout(120_000)
  const dataDir = await mkdtemp(join(tmpdir(), 'engram-mcp-e2e-'))
  const client = new Client({ name: 'e2e', version: '1.0.0' })
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['dist/lib/src/node/mcp-bin.js', '--data-dir', dataDir, '--user', 'ann'],
    stderr: 'pipe',
  })
  const logged: string[] = []
  transport.stderr?.on('data', (chunk: Buffer) => logged.push(chunk.toString()))
  try {
    await client.connect(transport)
    expect(logged.join('')).toContain(`serving ${dataDir}`)
    const save = (content: string, category: string) => client.callTool({ name: 'save_memory', arguments: { content, category } })
    await save('Ann ships the application to production every Friday afternoon', 'convention')
    await save("Ann's cat is called Miso", 'fact')
    // No word in common with the convention: only the model's vectors can find it. The model
    // loads beside the server, so ask until both memories have their vectors.
    await expect
      .poll(
        async () => {
          const result = await client.callTool({ name: 'recall_memories', arguments: { query: 'which weekday is the release deployed?' } })
          const { memories } = JSON.parse((result.content as { text: string }[])[0]?.text ?? '{}') as {
            memories: { content: string; similarity?: number | null }[]
          }
          return memories.map((m) => m.content)
        },
        { timeout: 60_000, intervals: [500] },
      )
      .toEqual(['Ann ships the application to production every Friday afternoon', "Ann's cat is called Miso"])
    const prompt = await client.getPrompt({ name: 'memory_guidelines' })
    expect(JSON.stringify(prompt.messages)).toContain('save_memory')
    // A second server on the same folder (another client window) is refused, not let to write over it.
    const second = await new Promise<{ code: number | null; stderr: string }>((done) => {
      const child = execFile(process.execPath, ['dist/lib/src/node/mcp-bin.js', '--data-dir', dataDir, '--no-embedder'], (_, __, stderr) =>
        done({ code: child.exitCode, stderr }),
      )
    })
    expect(second.code).toBe(1)
    expect(second.stderr).toContain(`engram-mcp: The memory at ${dataDir} is open elsewhere`)
  } finally {
    await client.close()
    await rm(dataDir, { recursive: true, force: true })
    await rm(`${dataDir}.lock`, { recursive: true, force: true })
  }
  // It reported nothing but where it serves from (a failure would say `engram-mcp: <why>`).
  expect(logged.join('').match(/engram-mcp: .*/g)).toEqual([`engram-mcp: serving ${dataDir}`])
})

test('engram-mcp stopped with SIGTERM closes its memory and lets go of the folder at once', async () => {
  test.setTimeout(60_000)
  const dataDir = await mkdtemp(join(tmpdir(), 'engram-mcp-e2e-'))
  /** Starts the command, waits until it serves, stops it with SIGTERM: its exit code and what it said. */
  const serveAndStop = () =>
    new Promise<{ code: number | null; stderr: string }>((done, fail) => {
      const child = spawn(process.execPath, ['dist/lib/src/node/mcp-bin.js', '--data-dir', dataDir, '--no-embedder'], {
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      let stderr = ''
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
        if (stderr.includes('serving')) child.kill('SIGTERM')
      })
      child.on('error', fail)
      child.on('exit', (code) => done({ code, stderr }))
    })
  try {
    const first = await serveAndStop()
    expect(first).toEqual({ code: 0, stderr: `engram-mcp: serving ${dataDir}\n` })
    // Started again at once: a lock left behind would refuse it for 10 s.
    expect((await serveAndStop()).code).toBe(0)
  } finally {
    await rm(dataDir, { recursive: true, force: true })
    await rm(`${dataDir}.lock`, { recursive: true, force: true })
  }
})
