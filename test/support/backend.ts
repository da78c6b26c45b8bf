import { it, type TestFunction, TestRunner } from 'vitest'

/**
 * What a test memory runs on. `npm run test:unit` runs every unit test on `pglite`, then the API
 * test files again on a server (vitest.server.config.ts, `ENGRAM_TEST_BACKEND=server`): a test
 * there gets `postgres`, the run's own PostgreSQL server without pgvector (keyword-only), or,
 * when it needs vectors (`itWithVectors`), `wire`: a PGlite with pgvector served over the
 * PostgreSQL protocol (pglite-socket). Both go through the server adapter.
 */
export type TestBackend = 'pglite' | 'postgres' | 'wire'

/** Set while a test that needs vectors runs (the tests of a file run one at a time). */
let needsVectors = false

function onServer(): boolean {
  const run = process.env.ENGRAM_TEST_BACKEND ?? 'pglite'
  if (run !== 'pglite' && run !== 'server') throw new Error(`unknown test backend ${run}`)
  return run === 'server'
}

export function testBackend(): TestBackend {
  if (!onServer()) return 'pglite'
  return needsVectors ? 'wire' : 'postgres'
}

/** A test that needs vector search: on the server run, its memories go over the wire to pgvector. */
export function itWithVectors(name: string, fn: TestFunction, timeout?: number): void {
  it(
    name,
    async (context) => {
      needsVectors = true
      try {
        await fn(context)
      } finally {
        needsVectors = false
      }
    },
    timeout,
  )
}

/**
 * Skips the running test on the server run. For tests that open PGlite themselves (a test
 * engine, a raw database): they ran in the PGlite run already.
 */
export function skipOnServer(): void {
  if (onServer()) TestRunner.getCurrentTest()?.context.skip('opens PGlite itself: it runs in the PGlite run')
}
