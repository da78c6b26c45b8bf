import { resolve } from 'node:path'
import { defineConfig } from 'vite'

const root = resolve(import.meta.dirname, 'demo')

/** Builds the offline demo and the browser test harness; both serve only from 127.0.0.1. */
export default defineConfig({
  root,
  base: './',
  publicDir: false,
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
  server: { host: '127.0.0.1', port: 5173, strictPort: true },
  preview: { host: '127.0.0.1', port: 4173, strictPort: true },
})
