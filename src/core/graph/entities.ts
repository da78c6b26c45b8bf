// The entity graph's public methods. Each one lives with its concern: inputs in
// entity-inputs.ts, returned shapes in entity-records.ts, nodes in entity-nodes.ts, edges in
// entity-edges.ts, whole-graph writes in entity-graph-write.ts, links in entity-neighbors.ts,
// relation names in entity-relations.ts, compaction and checks in entity-maintenance.ts.
import type { EngineContext } from '../kernel/engine-context.ts'
import { entityId, relationIds } from './edges.ts'
import { type EdgeWriteResult, putEdge, putEdges, removeEdge } from './entity-edges.ts'
import { putGraph } from './entity-graph-write.ts'
import type {
  EdgeInput,
  EdgeOptions,
  GraphWriteInput,
  NeighborsOptions,
  NodeHistoryOptions,
  NodeInput,
  NodeReadOptions,
  NodesOptions,
  RemoveOptions,
} from './entity-inputs.ts'
import { compact, verify } from './entity-maintenance.ts'
import { neighbors } from './entity-neighbors.ts'
import { getNode, listNodes, nodeHistory, type NodeWrite, putNode, putNodes, removeNode, removeNodes } from './entity-nodes.ts'
import type { GraphVerifyReport, JsonObject, Neighbor, NodeRecord, RelationRecord } from './entity-records.ts'
import { defineRelation, relations } from './entity-relations.ts'

export { entityId, relationIds }
export { type EdgeWriteResult, missingReferences, writeEdges } from './entity-edges.ts'
export {
  type EdgeInput,
  type EdgeOptions,
  entityIds,
  type GraphWriteInput,
  type NeighborsOptions,
  neighborsOptions,
  type NodeHistoryOptions,
  nodeHistoryOptions,
  type NodeInput,
  type NodeReadOptions,
  nodeReadOptions,
  type NodesOptions,
  nodesOptions,
  type RemoveOptions,
} from './entity-inputs.ts'
export {
  corrupt,
  type GraphVerifyReport,
  isJsonObject,
  type JsonObject,
  type Neighbor,
  type NodeRecord,
  type NodeRow,
  type RelationRecord,
  toNode,
} from './entity-records.ts'

/**
 * The entity graph: typed nodes (files, symbols, modules, decisions …) and edges between
 * any two ids under interned relations. Every change is a new row; removal is a tombstone;
 * `compact` is the one operation that really deletes.
 */
export function entityGraphApi(ctx: EngineContext) {
  return {
    /**
     * Creates or revises an entity node. The id is the caller's canonical key; giving an
     * existing id another type is a CONFLICT.
     *
     * @example
     * await memory.graph.putNode({ id: 'file:src/app.ts', type: 'file', payload: { lang: 'ts' } })
     */
    async putNode(input: NodeInput) {
      return putNode(ctx, input)
    },

    /** `putNode` for many nodes in one transaction. */
    putNodes: (inputs: NodeInput[]): Promise<NodeWrite[]> => putNodes(ctx, inputs),

    /**
     * A node as it is now, as it was at `asOf`, or as revision `rev` left it; null when absent
     * or removed (then, or by that revision).
     *
     * @example
     * const node = await memory.graph.getNode('file:src/app.ts', { asOf: yesterday })
     * const first = await memory.graph.getNode('file:src/app.ts', { rev: 1 })
     */
    async getNode(id: string, options: NodeReadOptions = {}): Promise<NodeRecord | null> {
      return getNode(ctx, id, options)
    },

    /**
     * Every revision of a node, oldest first, its removals (`tombstone: true`) among them;
     * each revision's `updatedAt` is when it was written.
     *
     * @example
     * const revisions = await memory.graph.nodeHistory('file:src/app.ts')
     */
    async nodeHistory(id: string, options: NodeHistoryOptions = {}): Promise<(NodeRecord & { tombstone: boolean })[]> {
      return nodeHistory(ctx, id, options)
    },

    /**
     * The tenant's live nodes as they are now, or were at `asOf`: among `ids`, of one `type`
     * and of one `scope` when given (as their latest revision says), by id, at most `limit`.
     *
     * @example
     * const people = await memory.graph.nodes({ type: 'person', scope: 'team:core' })
     */
    async nodes(options: NodesOptions = {}): Promise<NodeRecord[]> {
      return listNodes(ctx, options)
    },

    /** Removes a node (a tombstone revision) and tombstones its live edges. */
    async removeNode(id: string, options: RemoveOptions = {}): Promise<{ removed: boolean; edges: number }> {
      return removeNode(ctx, id, options)
    },

    /**
     * `removeNode` for many nodes in one transaction: the ids of those that were live, and
     * how many live edges to or from them were tombstoned.
     */
    removeNodes: (ids: string[], options: RemoveOptions = {}): Promise<{ removed: string[]; edges: number }> =>
      removeNodes(ctx, ids, options),

    /**
     * Links two ids under a known relation. Re-putting the same link with another payload
     * replaces it (the old one stays visible to as-of reads). Ids need not be entity nodes:
     * memories, events and document versions can be linked too; an id that points at nothing
     * is allowed and reported as a telemetry warning.
     *
     * @example
     * await memory.graph.putEdge('file:src/app.ts', 'defines', 'sym:src/app.ts#main')
     */
    async putEdge(
      src: string,
      rel: string,
      dst: string,
      payload: JsonObject = {},
      options: EdgeOptions = {},
    ) {
      return putEdge(ctx, src, rel, dst, payload, options)
    },

    /** `putEdge` for many edges in one transaction. */
    putEdges: (inputs: EdgeInput[]): Promise<EdgeWriteResult[]> => putEdges(ctx, inputs),

    /**
     * Relations, nodes and edges written in one transaction: all of them, or none when any is
     * refused. A relation is defined when it is not yet (as `defineRelation`), so the edges
     * may use it; nodes and edges are written as `putNodes` and `putEdges` write them.
     *
     * @example
     * await memory.graph.putGraph({
     *   relations: [{ name: 'works_at' }],
     *   nodes: [{ id: 'person:alice', type: 'person' }, { id: 'org:acme', type: 'organization' }],
     *   edges: [{ src: 'person:alice', rel: 'works_at', dst: 'org:acme' }],
     * })
     */
    async putGraph(input: GraphWriteInput): Promise<{ nodes: NodeWrite[]; edges: EdgeWriteResult[] }> {
      return putGraph(ctx, input)
    },

    /** Tombstones the live (src, rel, dst) link; false when there was none. */
    async removeEdge(
      src: string,
      rel: string,
      dst: string,
      options: RemoveOptions = {},
    ): Promise<{ removed: boolean }> {
      return removeEdge(ctx, src, rel, dst, options)
    },

    /**
     * Links of a node, or of several nodes in one read, outgoing, incoming or both,
     * optionally of some relations, as the memory knows them now or knew them at `asOf`, and
     * with `validAt` only those that held at that time in the world. Oldest first, ties by
     * edge id; `limit` counts the links of all the nodes together. With several ids, a link
     * between two of them comes once from each end (`direction` tells which). A link whose
     * relation or payload is damaged fails the read with CORRUPT.
     *
     * @example
     * const defs = await memory.graph.neighbors('file:src/app.ts', { rel: 'defines' })
     * const both = await memory.graph.neighbors(['person:ada', 'person:alan'], { direction: 'both' })
     */
    async neighbors(id: string | readonly string[], options: NeighborsOptions = {}): Promise<Neighbor[]> {
      return neighbors(ctx, id, options)
    },

    /**
     * Registers a relation name (idempotent) so edges may use it.
     *
     * @example
     * await memory.graph.defineRelation('owns', 'team → module')
     */
    async defineRelation(name: string, description?: string): Promise<RelationRecord & { created: boolean }> {
      return defineRelation(ctx, name, description)
    },

    /** Every relation name edges may use, by id. */
    async relations(): Promise<RelationRecord[]> {
      return relations(ctx)
    },

    /**
     * Physically deletes tombstoned edges and removed nodes whose tombstone is older than
     * `before` — the only operation that shrinks the graph. As-of reads before that time
     * lose what was dropped. Reports the rows deleted: edges, and node revisions (a removed
     * node goes with every revision it had).
     *
     * @example
     * await memory.graph.compact({ before: new Date(Date.now() - 7 * 86400_000) })
     */
    async compact(options: { before: Date | string }): Promise<{ edges: number; nodes: number }> {
      return compact(ctx, options)
    },

    /**
     * Checks the graph's integrity: every edge names a known relation and carries an object
     * payload, tombstones never precede creation, node revisions are gapless with object
     * payloads. Throws CORRUPT listing what is wrong; otherwise reports sizes and warns when
     * tombstones pile up.
     */
    async verify(): Promise<GraphVerifyReport> {
      return verify(ctx)
    },
  }
}
