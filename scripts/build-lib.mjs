// Compiles the library to dist/lib (ES modules + declarations). The client refers to its
// worker with `new URL('…/memory.worker.ts', import.meta.url)` so Vite serves the source in
// development; the published JavaScript must point at the compiled `.js` instead, which a
// consumer's bundler (Vite, webpack 5, esbuild) then bundles as a module worker.
import { execFileSync } from 'node:child_process'
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { build } from 'rolldown'

await rm('dist/lib', { recursive: true, force: true })
execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' })

/** Points the relative URLs of a compiled module at the compiled layout; each must be found. */
async function rewriteUrls(file, replacements) {
  let text = await readFile(file, 'utf8')
  for (const [from, to] of replacements) {
    if (!text.includes(from)) throw new Error(`build-lib: ${from} not found in ${file}`)
    text = text.replace(from, to)
  }
  await writeFile(file, text)
}

// The compiled client sits two folders deeper (dist/lib/src/browser/client) than its source.
await rewriteUrls('dist/lib/src/browser/client/create-memory.js', [
  ["'../../../workers/memory.worker.ts'", "'../../../workers/memory.worker.js'"],
  ["'../../../assets/pgdata-template.tar.gz'", "'../../../../../assets/pgdata-template.tar.gz'"],
])
// The Cypher graphs' worker, compiled beside the memory worker.
await rewriteUrls('dist/lib/src/browser/host/graph-module.js', [["'../../../workers/graph.worker.ts'", "'../../../workers/graph.worker.js'"]])
// Node's graph and background-embedding threads are plain JavaScript, copied as they are.
await copyFile('src/node/graph-worker.mjs', 'dist/lib/src/node/graph-worker.mjs')
await copyFile('src/node/embed-worker.mjs', 'dist/lib/src/node/embed-worker.mjs')
// The same template for Node's new memories; that module sits two folders deeper too.
await rewriteUrls('dist/lib/src/node/template.js', [["'../../assets/pgdata-template.tar.gz'", "'../../../../assets/pgdata-template.tar.gz'"]])

// The embedding worker is published as one file holding Transformers.js (its web build) and
// onnxruntime-web's JavaScript, so a browser app needs neither package installed, and neither
// brings its Node runtime. The memory worker loads that file by URL, as a worker or into its
// own thread (src/browser/host/embed-module.published.ts), so an app's build holds it once.
const embedWorker = 'dist/lib/workers/embed.worker.js'
const bundle = await build({
  input: 'workers/embed.worker.ts',
  platform: 'browser',
  // onnxruntime-web's build that imports its WASM runtime from `wasmPaths`, not an inlined copy.
  resolve: { conditionNames: ['onnxruntime-web-use-extern-wasm', 'browser', 'import', 'module', 'default'] },
  output: { file: embedWorker, format: 'esm', minify: true, codeSplitting: false },
  logLevel: 'warn',
})
await rm(`${embedWorker}.map`, { force: true })
const bundled = bundle.output.flatMap((chunk) => (chunk.type === 'chunk' ? chunk.moduleIds : []))
if (bundled.some((id) => /[\\/]onnxruntime-node[\\/]|[\\/]sharp[\\/]/.test(id))) {
  throw new Error('build-lib: a Node runtime found its way into the embedding worker')
}
await writeFile(`${embedWorker}.LICENSES.txt`, await licenses(bundled))

// onnxruntime-web's WASM runtime, of the very version bundled above; `engram/vite` serves it.
const ortModule = bundled.find((id) => /[\\/]onnxruntime-web[\\/]dist[\\/]/.test(id))
if (!ortModule) throw new Error('build-lib: onnxruntime-web is not in the embedding worker')
await mkdir('dist/lib/ort', { recursive: true })
// The WASM-only runtime for the WASM device, and the larger one that WebGPU needs.
for (const f of ['ort-wasm-simd-threaded.mjs', 'ort-wasm-simd-threaded.wasm', 'ort-wasm-simd-threaded.asyncify.mjs', 'ort-wasm-simd-threaded.asyncify.wasm']) {
  await copyFile(join(dirname(ortModule), f), join('dist/lib/ort', f))
}
await writeFile('dist/lib/ort/LICENSES.txt', await licenses([ortModule]))

// The published module that starts the embedding worker (see its source for why).
const embedModule = 'dist/lib/src/browser/host/embed-module'
// tsc wraps the import of a computed URL in a helper that hides the bundlers' ignore comments.
const load = '/* @vite-ignore */ /* webpackIgnore: true */ EMBED_WORKER.href'
const published = (await readFile(`${embedModule}.published.js`, 'utf8'))
  .replace(/^var __rewriteRelativeImportExtension[\s\S]*?\n};\n/, '')
  .replace(`__rewriteRelativeImportExtension(${load})`, load)
  .replace('embed-module.published.js.map', 'embed-module.js.map')
if (!published.includes("'../../../workers/embed.worker.js'") || published.includes('__rewriteRelativeImportExtension')) {
  throw new Error(`build-lib: ${embedModule}.published.js is not as expected`)
}
await writeFile(`${embedModule}.js`, published)
await rename(`${embedModule}.published.js.map`, `${embedModule}.js.map`)
await rm(`${embedModule}.published.js`)
await rm(`${embedModule}.published.d.ts`)

// The embedder finds the bundled model folder the same way, relative to its own module.
const embedder = 'dist/lib/src/embed/transformers-embedder.js'
const embedderSource = await readFile(embedder, 'utf8')
if (!embedderSource.includes("'../../models/'")) {
  throw new Error(`build-lib: models folder URL not found in ${embedder}`)
}
await writeFile(embedder, embedderSource.replace("'../../models/'", "'../../../../models/'"))
console.log('build-lib: dist/lib written')

/** The license of each package bundled into a file, from the modules that went in. */
async function licenses(moduleIds) {
  const roots = new Set()
  for (const id of moduleIds) {
    const at = id.lastIndexOf('node_modules')
    if (at < 0) continue
    const [scope, name] = id.slice(at + 'node_modules/'.length).split(/[\\/]/)
    roots.add(id.slice(0, at) + join('node_modules', scope.startsWith('@') ? join(scope, name) : scope))
  }
  const parts = []
  for (const root of [...roots].sort()) {
    const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'))
    const file = ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license'].map((f) => join(root, f))
    const author = typeof manifest.author === 'string' ? manifest.author : manifest.author?.name
    let text = `License: ${manifest.license}${author ? `, ${author}` : ''}`
    for (const f of file) text = await readFile(f, 'utf8').catch(() => text)
    parts.push(`${manifest.name} ${manifest.version}\n\n${text.trim()}\n`)
  }
  return `The packages this folder's files are built from, with their licenses.\n\n${parts.join('\n---\n\n')}`
}
