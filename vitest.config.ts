import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

/**
 * The API tests that run again through the server adapter (test/support/backend.ts): on a
 * PostgreSQL server, every public method; over the wire to a PGlite with pgvector, the
 * vector path. Each file opens its memories with `openTestMemory`, which picks the backend.
 */
const ON_POSTGRES = [
  'api-sweep', 'context', 'documents', 'entity-graph', 'events', 'foundation', 'graph', 'input-edge',
  'kv', 'memories', 'privacy', 'search', 'tools', 'turns', 'validation',
].map((name) => `test/unit/${name}.test.ts`)
const OVER_THE_WIRE = ['search'].map((name) => `test/unit/${name}.test.ts`)

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Each worker imports the engine once and runs its files one after another, instead of
    // importing it again for every file (about 1.7 s each). No test mocks modules or globals,
    // so files cannot see each other's changes. Every test gets a database of its own at the
    // template's state: a new one, or one a finished test handed back, wiped and checked
    // (test/support/database-pool.ts).
    isolate: false,
    // One test file per core, at least two. The default, one fewer than the cores, runs the
    // files one at a time on a two-core machine and leaves a core idle (README, "Development").
    maxWorkers: Math.max(2, availableParallelism()),
    projects: [
      { extends: true, test: { name: 'pglite', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: { name: 'postgres', include: ON_POSTGRES, env: { ENGRAM_TEST_BACKEND: 'postgres' } },
      },
      { extends: true, test: { name: 'wire', include: OVER_THE_WIRE, env: { ENGRAM_TEST_BACKEND: 'wire' } } },
    ],
  },
})
