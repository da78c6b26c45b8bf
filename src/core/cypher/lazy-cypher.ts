import type { EngineContext } from '../kernel/engine-context.ts'
import type { JsonObject } from '../kernel/json.ts'
import type { OpenGraphDatabase } from './age-graphs.ts'
import type { CypherOptions, CypherResult, createCypher } from './cypher.ts'

export type { CypherNode, CypherOptions, CypherRelationship, CypherResult, CypherValue } from './cypher.ts'

/**
 * `memory.cypher`, with its module loaded on the first query: a memory that never runs
 * Cypher carries none of it in its worker's first script.
 */
export function lazyCypher(ctx: EngineContext, openDatabase: OpenGraphDatabase | undefined) {
  let loaded: Promise<ReturnType<typeof createCypher>> | undefined
  const load = () => (loaded ??= import('./cypher.ts').then((m) => m.createCypher(ctx, openDatabase)))
  return {
    /** See `createCypher` (src/core/cypher/cypher.ts). */
    async cypher(query: string, params?: JsonObject, options?: CypherOptions): Promise<CypherResult> {
      return (await load()).cypher(query, params, options)
    },
    /** Tells the graphs, once Cypher has run, that the memory was written to. */
    nudge(): void {
      // A module that failed to load has nothing to nudge; the next query reports the failure.
      loaded?.then((c) => c.nudge()).catch(() => {})
    },
    async close(): Promise<void> {
      const cypher = await loaded?.catch(() => null)
      await cypher?.close()
    },
  }
}
