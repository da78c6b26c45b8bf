import { readdirSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { defaultClientConditions, defineConfig, type Plugin } from 'vite'

const root = resolve(import.meta.dirname, 'demo')

/**
 * Serves the embedding model and onnxruntime-web's WASM runtime from the build itself, next
 * to the worker script (the worker looks for `./models/` and `./ort/` beside itself), so no
 * request ever leaves the page's origin. Transformers.js 4.3 asks onnxruntime-web for
 * `ort-wasm-simd-threaded.asyncify.{mjs,wasm}`: one runtime for both WASM and WebGPU.
 */
function engramRuntimeAssets(): Plugin {
  const model = resolve(import.meta.dirname, 'models/all-MiniLM-L6-v2')
  const ort = resolve(import.meta.dirname, 'node_modules/onnxruntime-web/dist')
  const files: [from: string, to: string][] = [
    ...readdirSync(model)
      .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
      .map((f): [string, string] => [resolve(model, f), `assets/models/all-MiniLM-L6-v2/${f}`]),
    [resolve(model, 'onnx/model_quantized.onnx'), 'assets/models/all-MiniLM-L6-v2/onnx/model_quantized.onnx'],
    ...['ort-wasm-simd-threaded.asyncify.mjs', 'ort-wasm-simd-threaded.asyncify.wasm'].map(
      (f): [string, string] => [resolve(ort, f), `assets/ort/${f}`],
    ),
  ]
  return {
    name: 'engram-runtime-assets',
    apply: 'build',
    generateBundle() {
      for (const [from, fileName] of files) this.emitFile({ type: 'asset', fileName, source: readFileSync(from) })
    },
  }
}

/**
 * The demo's pages are cross-origin isolated, so the embedding worker's WASM model runs on
 * several threads (SharedArrayBuffer). Everything they load comes from their own origin, which
 * `require-corp` allows.
 */
const CROSS_ORIGIN_ISOLATION = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
}

/** Builds the offline demo and the browser test harness; both serve only from 127.0.0.1. */
export default defineConfig({
  root,
  base: './',
  publicDir: false,
  plugins: [engramRuntimeAssets()],
  resolve: {
    // onnxruntime-web's build without the WASM factory inlined: it imports
    // `ort/ort-wasm-simd-threaded.asyncify.mjs` from `wasmPaths` instead, so the 27 MB runtime
    // is emitted once, by the plugin above, rather than a second time under a hashed name.
    conditions: ['onnxruntime-web-use-extern-wasm', ...defaultClientConditions],
  },
  build: {
    outDir: resolve(import.meta.dirname, 'dist/demo'),
    emptyOutDir: true,
    target: 'es2022',
    rollupOptions: {
      input: {
        main: resolve(root, 'index.html'),
        harness: resolve(root, 'harness.html'),
      },
    },
  },
  worker: { format: 'es' },
  optimizeDeps: {
    exclude: ['@electric-sql/pglite', '@electric-sql/pglite-pgvector'],
  },
  server: { host: '127.0.0.1', port: 5173, strictPort: true, headers: CROSS_ORIGIN_ISOLATION },
  preview: { host: '127.0.0.1', port: 4173, strictPort: true, headers: CROSS_ORIGIN_ISOLATION },
})
