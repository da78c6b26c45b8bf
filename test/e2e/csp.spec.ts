import { expect, type Page, test } from '@playwright/test'
import { openHarness } from './support.ts'

/** The policy a VS Code webview imposes, plus what PGlite needs. Documented in the README. */
const STRICT_CSP =
  "default-src 'none'; script-src 'self' 'wasm-unsafe-eval' blob:; worker-src 'self' blob:; connect-src 'self'; style-src 'self' 'unsafe-inline'"

async function serveHarnessWithCsp(page: Page, csp: string) {
  await page.route('**/harness.html', async (route) => {
    const response = await route.fetch()
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': csp } })
  })
  await openHarness(page)
}

async function bootFromBlobWorker(page: Page, bootTimeoutMs: number) {
  return page.evaluate(async (bootTimeoutMs) => {
    const source = `import ${JSON.stringify(window.engramWorkerUrl)}`
    const blobUrl = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }))
    const worker = new Worker(blobUrl, { type: 'module' })
    const started = performance.now()
    try {
      const memory = await window.engram.createMemory({ storage: 'memory', worker, bootTimeoutMs })
      const ping = await memory.ping()
      await memory.close()
      return { ok: true, schemaVersion: ping.schemaVersion }
    } catch (error) {
      return { ok: false, code: (error as { code?: string }).code, message: String(error), ms: performance.now() - started }
    }
  }, bootTimeoutMs)
}

test('runs under a strict webview-like CSP from a blob: worker', async ({ page }) => {
  const violations: string[] = []
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text())
  })
  await serveHarnessWithCsp(page, STRICT_CSP)
  const outcome = await bootFromBlobWorker(page, 30_000)
  expect(outcome).toMatchObject({ ok: true })
  expect(violations).toEqual([])
})

test("without 'wasm-unsafe-eval' the boot fails at once with a clear code instead of waiting for its timeout", async ({ page }) => {
  await serveHarnessWithCsp(page, STRICT_CSP.replace(" 'wasm-unsafe-eval'", ''))
  const outcome = await bootFromBlobWorker(page, 30_000)
  expect(outcome).toMatchObject({ ok: false, code: 'WORKER_TERMINATED' })
  expect(outcome.message).toContain('wasm-unsafe-eval')
  // Far from the 30 s boot timeout: the WebAssembly failure ends the boot itself.
  expect(outcome.ms).toBeLessThan(15_000)
})
