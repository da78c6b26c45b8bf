// A whole graph in one transaction: new relations first, so that the edges may use them.
import type { EngineContext } from '../kernel/engine-context.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { warnOfTombstones } from './edges.ts'
import { type EdgeWriteResult, reportEdges, writeEdgesChecked } from './entity-edges.ts'
import { edgeInput, type GraphWriteInput, graphWriteInput, type NodeInput } from './entity-inputs.ts'
import { nodeBatch, nodeResults, type NodeWrite, writeNodes } from './entity-nodes.ts'

/** Relations, nodes and edges written in one transaction: all of them, or none. */
export async function putGraph(
  ctx: EngineContext,
  input: GraphWriteInput,
): Promise<{ nodes: NodeWrite[]; edges: EdgeWriteResult[] }> {
  const { db } = ctx
  const o = parseInput(graphWriteInput, input, 'graph write')
  const { nodes, batch } = nodeBatch(o.nodes as NodeInput[])
  const edges = parseInput(z.array(edgeInput).max(200_000), o.edges, 'edges')
  const at = ctx.now()
  const written = await db.transaction(async (tx) => {
    if (o.relations.length > 0) {
      await tx.query(
        `INSERT INTO relations (name, description, builtin, created_at)
         SELECT r.name, r.description, false, $3 FROM unnest($1::text[], $2::text[]) AS r(name, description)
         ON CONFLICT (name) DO NOTHING`,
        [o.relations.map((r) => r.name), o.relations.map((r) => r.description ?? null), at],
      )
    }
    const n = batch.length > 0 ? await writeNodes(tx, batch, at) : { written: [], unchanged: [] }
    return { n, e: await writeEdgesChecked(tx, edges, at) }
  })
  reportEdges(ctx, edges, written.e.written, written.e.missing, at)
  if (written.e.written.some((e) => e.action === 'overwritten')) await warnOfTombstones(ctx, at)
  return { nodes: nodeResults(ctx, nodes, batch, written.n, at), edges: written.e.results }
}
