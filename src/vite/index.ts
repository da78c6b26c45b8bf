import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defaultClientConditions, type Plugin } from 'vite'

/** The bundled model's folder name, as the worker looks for it beside itself. */
const MODEL = 'all-MiniLM-L6-v2'
/** onnxruntime-web's runtimes: the WASM-only one, and the larger one WebGPU needs. */
const ORT_FILES = [
  'ort-wasm-simd-threaded.mjs',
  'ort-wasm-simd-threaded.wasm',
  'ort-wasm-simd-threaded.asyncify.mjs',
  'ort-wasm-simd-threaded.asyncify.wasm',
]

const TYPES: Record<string, string> = {
  '.json': 'application/json',
  '.onnx': 'application/octet-stream',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
}

/** The folder of the Engram package this module belongs to (its sources, or its build). */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const manifest = join(dir, 'package.json')
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'engram') return dir
    const up = dirname(dir)
    if (up === dir) throw new Error('engram/vite: the engram package folder was not found')
    dir = up
  }
}

/**
 * onnxruntime-web's runtime files: those the library build ships (`dist/lib/ort`, of the version
 * bundled into its embedding worker), else, running from sources, the ones Transformers.js resolves.
 */
function ortDist(root: string): string {
  const fromEngram = createRequire(join(root, 'package.json'))
  const tries = [
    () => join(fileURLToPath(new URL('../../ort/', import.meta.url)), ORT_FILES[0] as string),
    () => createRequire(fromEngram.resolve('@huggingface/transformers')).resolve('onnxruntime-web'),
    () => fromEngram.resolve('onnxruntime-web'),
  ]
  for (const attempt of tries) {
    try {
      const dir = dirname(attempt())
      if (ORT_FILES.every((f) => existsSync(join(dir, f)))) return dir
    } catch {
      // Not there: the next place.
    }
  }
  throw new Error('engram/vite: onnxruntime-web\'s runtime files were not found (dist/lib/ort, or beside @huggingface/transformers)')
}

/** Each file the worker fetches, by its path under the worker's folder, and where it is on disk. */
function runtimeFiles(): Map<string, string> {
  const root = packageRoot()
  const model = join(root, 'models', MODEL)
  const ort = ortDist(root)
  const files = new Map<string, string>()
  for (const f of readdirSync(model).filter((name) => name.endsWith('.json') && !name.startsWith('.'))) {
    files.set(`models/${MODEL}/${f}`, join(model, f))
  }
  files.set(`models/${MODEL}/onnx/model_quantized.onnx`, join(model, 'onnx', 'model_quantized.onnx'))
  for (const f of ORT_FILES) files.set(`ort/${f}`, join(ort, f))
  return files
}

/**
 * A Vite plugin that serves Engram's bundled model and onnxruntime-web's runtime where the
 * memory worker looks for them, beside its own script, so an app gets semantic search with no
 * request leaving its origin: in a build, emitted into the assets folder the worker is written
 * to; in the dev server, answered for any path that ends as the worker asks. It also makes
 * onnxruntime-web import its runtime from there rather than inline it a second time, builds
 * workers as ES modules, and keeps PGlite out of the dependency pre-bundling.
 *
 * @example
 * // vite.config.ts
 * import { engramAssets } from 'engram/vite'
 * export default defineConfig({ plugins: [engramAssets()] })
 */
export function engramAssets(): Plugin {
  let files: Map<string, string> | undefined
  const all = () => (files ??= runtimeFiles())
  let assetsDir = 'assets'
  return {
    name: 'engram-assets',
    config: () => ({
      resolve: { conditions: ['onnxruntime-web-use-extern-wasm', ...defaultClientConditions] },
      worker: { format: 'es' as const },
      // PGlite loads its WASM and data files by URL from its own package: not pre-bundled.
      optimizeDeps: { exclude: ['@electric-sql/pglite', '@electric-sql/pglite-pgvector', '@electric-sql/pglite-age'] },
    }),
    configResolved(config) {
      assetsDir = config.build.assetsDir
    },
    generateBundle() {
      for (const [path, from] of all()) {
        this.emitFile({ type: 'asset', fileName: `${assetsDir ? `${assetsDir}/` : ''}${path}`, source: readFileSync(from) })
      }
    },
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        const path = (req.url ?? '').split('?')[0] ?? ''
        // Only the files listed, by the end of the path: nothing else on disk is reachable.
        const hit = [...all().keys()].find((p) => path.endsWith(`/${p}`))
        if (!hit) return next()
        const from = all().get(hit) as string
        res.setHeader('Content-Type', TYPES[from.slice(from.lastIndexOf('.'))] ?? 'application/octet-stream')
        res.setHeader('Cross-Origin-Resource-Policy', 'same-origin')
        res.end(readFileSync(from))
      })
    },
  }
}
