import { resolve } from 'node:path'
import { defineConfig } from 'vite'
import { engramAssets } from './src/vite/index.ts'

const root = resolve(import.meta.dirname, 'demo')

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
  // The model and onnxruntime-web's runtime beside the worker (what apps use: `engram/vite`).
  plugins: [engramAssets()],
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
  server: { host: '127.0.0.1', port: 5173, strictPort: true, headers: CROSS_ORIGIN_ISOLATION },
  preview: { host: '127.0.0.1', port: 4173, strictPort: true, headers: CROSS_ORIGIN_ISOLATION },
})
