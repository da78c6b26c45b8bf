// Compiles the library to dist/lib (ES modules + declarations). The client refers to its
// worker with `new URL('…/memory.worker.ts', import.meta.url)` so Vite serves the source in
// development; the published JavaScript must point at the compiled `.js` instead, which a
// consumer's bundler (Vite, webpack 5, esbuild) then bundles as a module worker.
import { execFileSync } from 'node:child_process'
import { readFile, rm, writeFile } from 'node:fs/promises'

await rm('dist/lib', { recursive: true, force: true })
execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' })

const client = 'dist/lib/src/client/create-memory.js'
const source = await readFile(client, 'utf8')
// The compiled client sits one folder deeper (dist/lib/src/client) than its source.
const rewritten = source
  .replace("'../../workers/memory.worker.ts'", "'../../workers/memory.worker.js'")
  .replace("'../../assets/pgdata-template.tar.gz'", "'../../../../assets/pgdata-template.tar.gz'")
if (!rewritten.includes('memory.worker.js') || !rewritten.includes('../../../../assets/')) {
  throw new Error(`build-lib: worker or template URL not found in ${client}`)
}
await writeFile(client, rewritten)

// The memory worker starts the embedding worker the same way.
const host = 'dist/lib/src/worker/embed-remote.js'
const hostSource = await readFile(host, 'utf8')
if (!hostSource.includes("'../../workers/embed.worker.ts'")) throw new Error(`build-lib: embedding worker URL not found in ${host}`)
await writeFile(host, hostSource.replace("'../../workers/embed.worker.ts'", "'../../workers/embed.worker.js'"))

// The embedder finds the bundled model folder the same way, relative to its own module.
const embedder = 'dist/lib/src/embed/transformers-embedder.js'
const embedderSource = await readFile(embedder, 'utf8')
if (!embedderSource.includes("'../../models/'")) {
  throw new Error(`build-lib: models folder URL not found in ${embedder}`)
}
await writeFile(embedder, embedderSource.replace("'../../models/'", "'../../../../models/'"))
console.log('build-lib: dist/lib written')
