import { availableParallelism } from 'node:os'
import { defineConfig, type ViteUserConfig } from 'vitest/config'

/** How every unit test runs, here and in vitest.server.config.ts. */
export const unitTests = {
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
} satisfies ViteUserConfig['test']

export default defineConfig({ test: { ...unitTests, include: ['test/unit/**/*.test.ts'] } })
