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
console.log('build-lib: dist/lib written')
