import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One test file per core, at least two. The default, one fewer than the cores, runs the
    // files one at a time on a two-core machine and leaves a core idle (README, "Development").
    maxWorkers: Math.max(2, availableParallelism()),
  },
})
