import { it } from 'vitest'
import { getCurrentTest } from 'vitest/suite'

/**
 * What the test memories run on (vitest.config.ts runs the API tests on each): `pglite` in
 * this process; `postgres`, the run's own PostgreSQL server (without pgvector: keyword-only);
 * `wire`, a PGlite with pgvector served over the PostgreSQL protocol (pglite-socket), for the
 * vector path through the server adapter.
 */
export type TestBackend = 'pglite' | 'postgres' | 'wire'

export function testBackend(): TestBackend {
  const backend = process.env.ENGRAM_TEST_BACKEND ?? 'pglite'
  if (backend !== 'pglite' && backend !== 'postgres' && backend !== 'wire') throw new Error(`unknown test backend ${backend}`)
  return backend
}

/** A test that needs vector search: skipped on the test server, which has no pgvector. */
export const itWithVectors = it.skipIf(testBackend() === 'postgres')

/**
 * Skips the running test on a server backend. For tests that open PGlite themselves (a test
 * engine, a raw database): they run in the `pglite` project already.
 */
export function skipOnServer(): void {
  if (testBackend() !== 'pglite') getCurrentTest()?.context.skip('opens PGlite itself: it runs in the pglite project')
}
