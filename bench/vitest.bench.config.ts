import { defineConfig } from 'vitest/config'

/** Load scripts, run one at a time on demand; never part of the unit suite. */
export default defineConfig({
  test: {
    include: ['bench/**/*.bench-run.ts'],
    testTimeout: 3_600_000,
    hookTimeout: 600_000,
    pool: 'forks',
  },
})
