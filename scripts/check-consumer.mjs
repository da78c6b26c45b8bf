// Installs the packed library into a new browser app, as a user would, and checks what they
// get: the install needs no network beyond the registry and brings no Node runtime (no
// onnxruntime-node, no sharp), the published types check with `moduleResolution` "bundler" and
// "node", and `vite build` with `engramAssets()` emits the embedding worker's code once. The
// built app then loads the model in Chromium, in a worker of its own and in the memory worker.
// Run after `npm run build`.
/* global document, setTimeout -- the page's own, in page.evaluate */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const repo = join(import.meta.dirname, '..')
const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'))
const dir = await mkdtemp(join(tmpdir(), 'engram-consumer-'))
// The app's npm runs as a user's would: none of this npm's own settings leak into it.
const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)))
const sh = (command, args, cwd = dir) => execFileSync(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })

const APP = {
  'package.json': JSON.stringify({ name: 'engram-consumer', private: true, type: 'module' }),
  'index.html': '<!doctype html><meta charset="utf-8"><title>app</title><pre id="out"></pre><script type="module" src="/src/main.ts"></script>',
  'vite.config.ts': "import { defineConfig } from 'vite'\nimport { engramAssets } from 'engram/vite'\n\nexport default defineConfig({ plugins: [engramAssets()], build: { target: 'es2022' } })\n",
  'src/main.ts': `import { createMemory, MemoryError, type Memory } from 'engram'
import type { WorkerApi } from 'engram/worker'

export type Api = WorkerApi
const out = document.getElementById('out') as HTMLElement
const dedicatedWorker = new URLSearchParams(location.search).get('dedicated') !== 'false'
try {
  const memory: Memory = await createMemory({ storage: 'memory', embedder: { kind: 'bundled', device: 'wasm', dedicatedWorker } })
  ;(globalThis as { memory?: Memory }).memory = memory
  out.textContent = 'ready'
} catch (error) {
  out.textContent = error instanceof MemoryError ? error.code : String(error)
}
`,
}
const tsconfig = (moduleResolution) =>
  JSON.stringify({
    compilerOptions: {
      target: 'es2022',
      module: 'esnext',
      moduleResolution,
      lib: ['esnext', 'dom', 'dom.iterable'],
      strict: true,
      esModuleInterop: true,
      noEmit: true,
      // The published declarations are checked too, not only the app's use of them.
      skipLibCheck: false,
      types: [],
    },
    include: ['src'],
  })

/** Bytes under a folder, links not followed. */
function sizeOf(path) {
  const stat = statSync(path, { throwIfNoEntry: false })
  if (!stat || stat.isSymbolicLink()) return 0
  if (!stat.isDirectory()) return stat.size
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0)
}

function check(ok, what) {
  if (!ok) throw new Error(`check-consumer: ${what}`)
  console.log(`check-consumer: ${what}`)
}

try {
  const tarball = join(dir, sh('npm', ['pack', '--silent', '--pack-destination', dir], repo).trim().split('\n').at(-1))
  for (const [file, text] of Object.entries(APP)) {
    await mkdir(join(dir, file, '..'), { recursive: true })
    await writeFile(join(dir, file), text)
  }
  await writeFile(join(dir, 'tsconfig.bundler.json'), tsconfig('bundler'))
  await writeFile(join(dir, 'tsconfig.node.json'), tsconfig('node'))
  const { vite, typescript } = manifest.devDependencies
  sh('npm', ['install', '--no-audit', '--no-fund', tarball, `vite@${vite}`, `typescript@${typescript}`])
  const modules = join(dir, 'node_modules')
  for (const name of ['onnxruntime-node', 'onnxruntime-web', 'sharp', '@huggingface/transformers']) {
    check(!existsSync(join(modules, name)), `the install brings no ${name}`)
  }
  console.log(`check-consumer: node_modules holds ${(sizeOf(modules) / 2 ** 20).toFixed(0)} MiB`)
  for (const resolution of ['bundler', 'node']) {
    sh(join(modules, '.bin', 'tsc'), ['-p', `tsconfig.${resolution}.json`])
    check(true, `the app type-checks with moduleResolution "${resolution}"`)
  }
  sh(join(modules, '.bin', 'vite'), ['build', '--logLevel', 'error'])
  const assets = join(dir, 'dist', 'assets')
  const scripts = readdirSync(assets).filter((f) => f.endsWith('.js'))
  const withModel = scripts.filter((f) => readFileSync(join(assets, f), 'utf8').includes('feature-extraction'))
  check(withModel.length === 1 && withModel[0]?.startsWith('embed.worker'), `Transformers.js is in one emitted script (${withModel.join(', ')})`)
  const runtimes = ['ort-wasm-simd-threaded.wasm', 'ort-wasm-simd-threaded.asyncify.wasm']
  check(runtimes.every((f) => existsSync(join(assets, 'ort', f))), "onnxruntime-web's runtimes are beside the worker")
  await loadModel(dir)
  checkNodeMemory(dir)
  await checkFramework(tarball)
} finally {
  await rm(dir, { recursive: true, force: true })
}

/**
 * A Node project that installs the library and one framework (the AI SDK) and type-checks code
 * that uses `engram/ai-sdk`, with `moduleResolution` "bundler" and "nodenext".
 */
async function checkFramework(tarball) {
  const app = await mkdtemp(join(tmpdir(), 'engram-ai-sdk-'))
  try {
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'engram-ai-sdk-consumer', private: true, type: 'module' }))
    await mkdir(join(app, 'src'))
    await writeFile(
      join(app, 'src/agent.ts'),
      `import { wrapLanguageModel, type LanguageModel } from 'ai'
import { memoryMiddleware, memoryTools, type ContextMemory, type ToolMemory } from 'engram/ai-sdk'

export function withMemory(model: Exclude<LanguageModel, string>, memory: ContextMemory & ToolMemory) {
  const wrapped = wrapLanguageModel({ model, middleware: memoryMiddleware(memory, { conversationId: 'c1' }) })
  return { model: wrapped, tools: memoryTools(memory, { userId: 'alice' }) }
}
`,
    )
    // A Node project has Node's types; the AI SDK's own declarations need them and JSON Schema's.
    // The AI SDK's declarations need package exports: "node" (node10) resolution cannot read them.
    const nodeConfig = (resolution) => {
      const config = JSON.parse(tsconfig(resolution))
      const module = resolution === 'nodenext' ? 'nodenext' : 'esnext'
      return JSON.stringify({ ...config, compilerOptions: { ...config.compilerOptions, module, types: ['node'] } })
    }
    await writeFile(join(app, 'tsconfig.bundler.json'), nodeConfig('bundler'))
    await writeFile(join(app, 'tsconfig.nodenext.json'), nodeConfig('nodenext'))
    const { ai, typescript, '@types/node': nodeTypes } = manifest.devDependencies
    const packages = [tarball, `ai@${ai}`, `typescript@${typescript}`, `@types/node@${nodeTypes}`, '@types/json-schema@7']
    sh('npm', ['install', '--no-audit', '--no-fund', ...packages], app)
    for (const resolution of ['bundler', 'nodenext']) {
      sh(join(app, 'node_modules', '.bin', 'tsc'), ['-p', `tsconfig.${resolution}.json`], app)
      check(true, `a project with the AI SDK type-checks engram/ai-sdk with moduleResolution "${resolution}"`)
    }
  } finally {
    await rm(app, { recursive: true, force: true })
  }
}

/**
 * A new memory in Node, from the installed package: it starts from the bundled template (whose
 * page cache is 64 MiB; initdb's is 128), and what it wrote is there when it opens again.
 */
function checkNodeMemory(root) {
  const script = `
    import { openMemory } from 'engram/node'
    const dataDir = process.argv[1]
    const first = await openMemory({ dataDir })
    await first.recordTurn({ conversationId: 'c', user: 'hello', agent: 'hi' })
    const { rows } = await first.cypher('MATCH (m:Message) RETURN count(m) AS n')
    const { cacheMB } = await first.stats()
    await first.close()
    const again = await openMemory({ dataDir })
    const events = (await again.events.list({ conversationId: 'c' })).length
    await again.close()
    console.log(JSON.stringify({ cacheMB, events, messages: rows[0].n }))
  `
  const out = JSON.parse(execFileSync('node', ['--input-type=module', '-e', script, join(root, 'node-memory')], { cwd: root, encoding: 'utf8' }).trim().split('\n').at(-1))
  check(out.cacheMB === 64 && out.events === 2, `a new memory in Node starts from the bundled template and keeps its writes (${JSON.stringify(out)})`)
  check(out.messages === 2, `a Cypher query in Node runs in the package's graph thread (${JSON.stringify(out)})`)
}

/** The built app in Chromium: the model gets ready both in its own worker and in the memory worker. */
async function loadModel(root) {
  const { chromium } = await import('@playwright/test')
  const { preview } = await import('vite')
  const server = await preview({ root, logLevel: 'error', preview: { host: '127.0.0.1', port: 0 } })
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] })
  try {
    for (const dedicated of [true, false]) {
      const page = await browser.newPage()
      await page.goto(`${server.resolvedUrls.local[0]}?dedicated=${dedicated}`)
      await page.waitForFunction(() => document.getElementById('out')?.textContent, null, { timeout: 60_000 })
      const info = await page.evaluate(async () => {
        const { memory } = globalThis
        if (!memory) return { state: document.getElementById('out')?.textContent }
        for (const until = Date.now() + 240_000; Date.now() < until; ) {
          const info = await memory.embedderInfo()
          if (info.state !== 'loading') return info
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        return { state: 'still loading after 240 s' }
      })
      check(info.state === 'ready' && info.dedicatedWorker === dedicated, `the model loads ${dedicated ? 'in its own worker' : 'in the memory worker'} (${JSON.stringify(info)})`)
      if (dedicated) {
        const graph = await page.evaluate(() => globalThis.memory.cypher('MATCH (d:Document) RETURN count(d) AS n').then((r) => r.rows, (e) => String(e)))
        check(JSON.stringify(graph) === '[{"n":0}]', `a Cypher query runs in the app's graph worker (${JSON.stringify(graph)})`)
      }
      await page.close()
    }
  } finally {
    await browser.close()
    await server.close()
  }
}
