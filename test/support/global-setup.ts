import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { buildTemplate } from '../../src/runtime/template.ts'

/**
 * initdb costs ~4 s; do it once per run. Every test database starts from this migrated
 * template via loadDataDir (~1 s), so tests stay isolated and the suite stays fast.
 */
export default async function setup(project: TestProject) {
  // The recipe of the template new memories start from in the browser, uncompressed.
  const dump = await buildTemplate('none')
  const dir = await mkdtemp(join(tmpdir(), 'engram-template-'))
  const file = join(dir, 'template.tar')
  await writeFile(file, new Uint8Array(await dump.arrayBuffer()))
  project.provide('templateDataDir', file)
}

declare module 'vitest' {
  export interface ProvidedContext {
    templateDataDir: string
  }
}
