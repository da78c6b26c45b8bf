import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer } from 'vite'
import { describe, expect, it } from 'vitest'
import { engramAssets } from '../../src/vite/index.ts'

describe('engram/vite', () => {
  it("the dev server answers the model and runtime files wherever the worker asks for them, and nothing else of the package's", async () => {
    const root = await mkdtemp(join(tmpdir(), 'engram-vite-'))
    await writeFile(join(root, 'index.html'), '<!doctype html><title>app</title>')
    const server = await createServer({ root, configFile: false, logLevel: 'silent', plugins: [engramAssets()], server: { host: '127.0.0.1', port: 0 } })
    try {
      await server.listen()
      const { port } = server.httpServer?.address() as AddressInfo
      const get = (path: string) => fetch(`http://127.0.0.1:${port}${path}`)
      // Beside the worker script, as the worker looks for them (wherever the dev server put it).
      const config = await get('/node_modules/engram/workers/models/all-MiniLM-L6-v2/config.json')
      expect(config.status).toBe(200)
      expect(config.headers.get('content-type')).toBe('application/json')
      expect(((await config.json()) as { model_type?: string }).model_type).toBe('bert')
      const model = await get('/assets/models/all-MiniLM-L6-v2/onnx/model_quantized.onnx?import')
      expect(model.status).toBe(200)
      expect((await model.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000)
      for (const file of ['ort-wasm-simd-threaded.wasm', 'ort-wasm-simd-threaded.asyncify.wasm']) {
        const wasm = await get(`/anywhere/ort/${file}`)
        expect(wasm.headers.get('content-type')).toBe('application/wasm')
      }
      // Only the listed files: a path reaching out of the model folder, or another file of it,
      // gets what the dev server gives any unknown path (its page, or a 404), never the file.
      for (const path of ['/x/models/all-MiniLM-L6-v2/..%2F..%2Fpackage.json', '/x/models/all-MiniLM-L6-v2/onnx/model.onnx']) {
        const other = await get(path)
        const body = await other.text()
        expect(other.status === 404 || body.startsWith('<!doctype html>'), path).toBe(true)
        expect(body).not.toContain('"name": "engram"')
      }
      // Its settings: onnxruntime-web's runtime imported, not inlined, and ES-module workers.
      expect(server.config.resolve.conditions).toContain('onnxruntime-web-use-extern-wasm')
      expect(server.config.worker.format).toBe('es')
      expect(server.config.optimizeDeps.exclude).toEqual(expect.arrayContaining(['@electric-sql/pglite', '@electric-sql/pglite-pgvector']))
    } finally {
      await server.close()
      await rm(root, { recursive: true, force: true })
    }
  })
})
