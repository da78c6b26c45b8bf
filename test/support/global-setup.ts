import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { buildTemplate } from '../../src/runtime/template.ts'
import { makeServerTemplate, postgresBinaries, startTestPostgres } from './postgres-server.ts'

/**
 * initdb costs ~4 s; do it once per run. Every test database starts from this migrated
 * template via loadDataDir (~1 s), so tests stay isolated and the suite stays fast.
 *
 * Where PostgreSQL's server programs are installed (`.ci/run` installs Debian's), a cluster of
 * the run's own starts too, with a migrated template database that the server tests copy.
 */
export default async function setup(project: TestProject) {
  // The recipe of the template new memories start from in the browser, uncompressed.
  const dump = await buildTemplate('none')
  const dir = await mkdtemp(join(tmpdir(), 'engram-template-'))
  const file = join(dir, 'template.tar')
  await writeFile(file, new Uint8Array(await dump.arrayBuffer()))
  project.provide('templateDataDir', file)
  const bin = postgresBinaries()
  if (bin === null) {
    if (process.env.CI) throw new Error('CI runs the PostgreSQL tests: install PostgreSQL (apt-get install postgresql)')
    project.provide('postgresUrl', null)
    return
  }
  const server = await startTestPostgres(bin)
  try {
    await makeServerTemplate(server.url)
  } catch (error) {
    await server.stop()
    throw error
  }
  project.provide('postgresUrl', server.url)
  return () => server.stop()
}

declare module 'vitest' {
  export interface ProvidedContext {
    templateDataDir: string
    /** The test cluster's `postgres` database, or null where PostgreSQL is not installed. */
    postgresUrl: string | null
  }
}
