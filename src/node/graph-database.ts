import type { GraphDatabase } from '../core/cypher/age-graphs.ts'
import { openPGlite } from '../runtime/pglite.ts'
import { bundledTemplate, pgliteFsBundle } from './template.ts'

/**
 * The database `memory.cypher` keeps its graphs in: an in-memory PGlite with Apache AGE,
 * started from `template` (default: the bundled one) on the first Cypher query. AGE is
 * imported only then, so a memory that never runs Cypher never loads it.
 */
export async function openGraphDatabase(template?: Blob): Promise<GraphDatabase> {
  const [{ age }, loadDataDir, fsBundle] = await Promise.all([
    import('@electric-sql/pglite-age'),
    template ?? bundledTemplate(),
    pgliteFsBundle(),
  ])
  return openPGlite({
    ...(loadDataDir ? { loadDataDir } : {}),
    ...(fsBundle ? { fsBundle } : {}),
    extensions: { age },
  })
}
