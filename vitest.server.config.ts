import { defineConfig } from 'vitest/config'
import { unitTests } from './vitest.config.ts'

/**
 * The API test files again, through the server adapter (test/support/backend.ts): every public
 * method on a PostgreSQL server, and the tests that need vectors over the wire to a PGlite with
 * pgvector. Each file opens its memories with `openTestMemory`, which picks the backend. A run
 * of its own after the unit suite's: as projects of one run, the unit suite ran a quarter slower.
 */
const ON_SERVER = [
  'api-sweep', 'context', 'documents', 'entity-graph', 'events', 'graph', 'input-edge',
  'kv', 'memories', 'privacy', 'search', 'sync', 'tools', 'turns', 'validation',
].map((name) => `test/unit/${name}.test.ts`)

export default defineConfig({ test: { ...unitTests, include: ON_SERVER, env: { ENGRAM_TEST_BACKEND: 'server' } } })
