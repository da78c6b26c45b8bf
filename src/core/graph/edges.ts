import type { Queryable } from '../kernel/db.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { type IdKind, kindOfId, newId } from '../kernel/ids.ts'
import { type JsonObject, storableText } from '../kernel/json.ts'
import { identifier } from '../kernel/scope.ts'
import { asOfParam, iso, type TimeInput, timeInput, toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'

/** Relations Engram itself writes; a tool may not take one of these names. */
export const BUILTIN_RELATIONS = ['MESSAGE', 'VERSION_OF', 'REFERS_TO', 'RESULT'] as const

/** A relation name: a tool name such as `read_file`, or a builtin such as `VERSION_OF`. */
export const relationName = storableText.pipe(
  z
    .string()
    .min(1, 'must not be empty')
    .max(128, 'must be at most 128 characters')
    .refine((s) => s.trim() === s, 'must not start or end with whitespace'),
)

/** An edge as it is written, inside a transaction of its owner. */
export interface EdgeWrite {
  src: string
  rel: string
  dst: string
  props?: JsonObject
  tenantId: string
  conversationId?: string | undefined
  runId?: string | undefined
  taskId?: string | undefined
  turnIndex?: number | undefined
  createdAt: Date
}

/** An edge as reads return it. Times are ISO strings; absent values are null. */
export interface Edge {
  id: string
  src: string
  rel: string
  dst: string
  props: JsonObject
  tenantId: string
  conversationId: string | null
  runId: string | null
  taskId: string | null
  turnIndex: number | null
  createdAt: string
  tombstonedAt: string | null
  /** When the fact held in the world (the entity graph's `validFrom` / `validTo`), null when open. */
  validFrom: string | null
  validTo: string | null
}

/**
 * Writes edges in one statement, interning their relation names on the way. Use inside the
 * caller's transaction so the edges commit or vanish with the rows they link.
 */
export async function insertEdges(tx: Queryable, edges: readonly EdgeWrite[]): Promise<string[]> {
  if (edges.length === 0) return []
  const ids = edges.map(() => newId('edge'))
  await tx.query(
    `WITH new_rels AS (
       INSERT INTO relations (name)
       SELECT DISTINCT unnest($3::text[])
       ON CONFLICT (name) DO NOTHING
       RETURNING id, name
     ), rels AS (
       SELECT id, name FROM new_rels
       UNION ALL
       SELECT id, name FROM relations WHERE name = ANY($3::text[])
     )
     INSERT INTO edges (id, src, rel, dst, props, tenant_id, conversation_id, run_id, task_id, turn_index, created_at)
     SELECT u.id, u.src, r.id, u.dst, ($5::jsonb) -> (u.ord - 1)::int, u.tenant_id, u.conversation_id,
            u.run_id, u.task_id, u.turn_index, u.created_at::timestamptz
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $6::text[], $7::text[], $8::text[],
                 $9::text[], $10::int[], $11::text[])
          WITH ORDINALITY AS u(id, src, rel, dst, tenant_id, conversation_id, run_id, task_id, turn_index,
                               created_at, ord)
     JOIN rels r ON r.name = u.rel`,
    [
      ids,
      edges.map((e) => e.src),
      edges.map((e) => e.rel),
      edges.map((e) => e.dst),
      JSON.stringify(edges.map((e) => e.props ?? {})),
      edges.map((e) => e.tenantId),
      edges.map((e) => e.conversationId ?? null),
      edges.map((e) => e.runId ?? null),
      edges.map((e) => e.taskId ?? null),
      edges.map((e) => e.turnIndex ?? null),
      edges.map((e) => e.createdAt.toISOString()),
    ],
    { prepare: true },
  )
  return ids
}

/** Columns of an edge row, joined to its relation name, for every read below. */
export const EDGE_COLUMNS = `e.id, e.src, r.name AS rel, e.dst, e.props, e.tenant_id, e.conversation_id, e.run_id,
  e.task_id, e.turn_index, e.created_at, e.tombstoned_at, e.valid_from, e.valid_to`

/**
 * The visibility of edge `e` at time $n: without asOf, live edges; with asOf, edges created
 * by then and not yet tombstoned then.
 */
export function edgeVisibleAt(param: string, alias = 'e'): string {
  return `(CASE WHEN ${param}::timestamptz IS NULL THEN ${alias}.tombstoned_at IS NULL
     ELSE ${alias}.created_at <= ${param}::timestamptz
          AND (${alias}.tombstoned_at IS NULL OR ${alias}.tombstoned_at > ${param}::timestamptz) END)`
}

/**
 * Whether edge `e` held in the world at time $n (its `valid_from` ≤ it < `valid_to`, an open
 * end holding); every edge when $n is null.
 */
export function edgeHeldAt(param: string, alias = 'e'): string {
  return `(${param}::timestamptz IS NULL
     OR ((${alias}.valid_from IS NULL OR ${alias}.valid_from <= ${param}::timestamptz)
         AND (${alias}.valid_to IS NULL OR ${alias}.valid_to > ${param}::timestamptz)))`
}

export interface EdgeRow {
  id: string
  src: string
  rel: string
  dst: string
  props: JsonObject
  tenant_id: string
  conversation_id: string | null
  run_id: string | null
  task_id: string | null
  turn_index: number | null
  created_at: Date | string
  tombstoned_at: Date | string | null
  valid_from: Date | string | null
  valid_to: Date | string | null
}

/**
 * An edge as its row has it; `asOf`, the edge as read at that time: a tombstone laid after it
 * was not there yet (`tombstonedAt` null).
 */
export function toEdge(row: EdgeRow, asOf: Date | null = null): Edge {
  const ended = row.tombstoned_at === null || (asOf !== null && new Date(row.tombstoned_at) > asOf) ? null : row.tombstoned_at
  return {
    id: row.id,
    src: row.src,
    rel: row.rel,
    dst: row.dst,
    props: row.props,
    tenantId: row.tenant_id,
    conversationId: row.conversation_id,
    runId: row.run_id,
    taskId: row.task_id,
    turnIndex: row.turn_index,
    createdAt: iso(row.created_at),
    tombstonedAt: ended === null ? null : iso(ended),
    validFrom: row.valid_from === null ? null : iso(row.valid_from),
    validTo: row.valid_to === null ? null : iso(row.valid_to),
  }
}

export interface EdgeQuery {
  /** The tenant whose edges are read (default 'default'). */
  tenantId?: string
  /** Only edges of this relation. */
  rel?: string
  /** See the graph as it was then. */
  asOf?: TimeInput
  /** Only edges whose fact held at this time in the world (see `Edge.validFrom`). */
  validAt?: TimeInput
  /** The run and task the read belongs to, for its telemetry event. */
  runId?: string
  taskId?: string
}

export interface WalkOptions {
  /** The tenant whose graph is walked (default 'default'). */
  tenantId?: string
  /** How many hops from the start (1–10). Default 2. */
  depth?: number
  /** Follow only these relations. */
  rels?: string[]
  asOf?: TimeInput
  /** Cross only edges whose fact held at this time in the world. */
  validAt?: TimeInput
  /** The most nodes returned, nearest first. Default 1000. */
  limit?: number
  /** The run and task the read belongs to, for its telemetry event. */
  runId?: string
  taskId?: string
}

export interface WalkNode {
  id: string
  /** What the id points at (event, version, document, …), or null for a foreign id. */
  kind: IdKind | null
  depth: number
}

export interface Walk {
  nodes: WalkNode[]
  edges: Edge[]
  /** True when more nodes were reachable than `limit`. */
  truncated: boolean
}

/** Above this share of tombstoned edges, `verify()` suggests a compaction and removals warn. */
export const TOMBSTONE_WARNING_RATIO = 0.3

/**
 * After edges are tombstoned: a telemetry warning when more than TOMBSTONE_WARNING_RATIO of
 * all edges are, time for `graph.compact()`. Counted only while someone listens; the total
 * is the planner's estimate, the tombstones are read from their partial index.
 */
export async function warnOfTombstones(ctx: EngineContext, at: Date): Promise<void> {
const { db, telemetry } = ctx
  if (telemetry.listeners.size === 0) return
  const { rows } = await db.query<{ tombstoned: number; edges: number }>(
    `SELECT (SELECT count(*)::int FROM edges WHERE tombstoned_at IS NOT NULL) AS tombstoned,
            greatest((SELECT reltuples FROM pg_class WHERE oid = 'edges'::regclass), 0)::float8 AS edges`,
  )
  const { tombstoned, edges } = rows[0] as { tombstoned: number; edges: number }
  // An estimate below the tombstones counted (statistics not refreshed yet) counts them as all.
  const ratio = tombstoned / Math.max(edges, tombstoned, 1)
  if (ratio <= TOMBSTONE_WARNING_RATIO) return
  telemetry.emit({
    op: 'warning',
    memoryId: null,
    entityType: 'edge',
    scope: null,
    runId: null,
    taskId: null,
    at,
    detail: { warning: 'tombstones', tombstoned, edges: Math.round(Math.max(edges, tombstoned)), ratio, advice: 'run graph.compact()' },
  })
}

/** An entity's or any other graph end's id, as the entity graph takes it. */
/** Text stored as given and up to `max` characters: a node's id, type or scope, a policy key's names. */
export const storedName = (max: number) => storableText.pipe(z.string().min(1).max(max))

/** An entity's id (a node, an event, a version…). Text Postgres would store altered (half a surrogate pair, NUL) is refused: two ids would become one. */
export const entityId = storedName(1000)

/** Resolves relation names to their interned ids; an unknown name is a hard error. */
export async function relationIds(q: Queryable, names: readonly string[]): Promise<Map<string, number>> {
  const unique = [...new Set(names)]
  const { rows } = await q.query<{ id: number; name: string }>(
    'SELECT id, name FROM relations WHERE name = ANY($1::text[])',
    [unique],
  )
  const ids = new Map(rows.map((r) => [r.name, r.id]))
  const missing = unique.filter((n) => !ids.has(n))
  if (missing.length > 0) {
    throw new MemoryError('UNKNOWN_RELATION', `Unknown relation "${missing[0]}": define it first`, {
      details: { relations: missing },
    })
  }
  return ids
}

/** The run and task a read belongs to, for its telemetry event. */
const readProvenance = { runId: identifier.optional(), taskId: identifier.optional() }

const edgeQuery = z
  .object({
    tenantId: identifier.default('default'),
    rel: relationName.optional(),
    asOf: timeInput.optional(),
    validAt: timeInput.optional(),
    ...readProvenance,
  })
  .strict()
const walkOptions = z
  .object({
    tenantId: identifier.default('default'),
    depth: z.number().int().min(1).max(10).default(2),
    rels: z.array(relationName).max(100).optional(),
    asOf: timeInput.optional(),
    validAt: timeInput.optional(),
    limit: z.number().int().min(1).max(100_000).default(1000),
    ...readProvenance,
  })
  .strict()
function parseEdgeQuery(relOrOptions: string | EdgeQuery | undefined, options: EdgeQuery | undefined) {
  const merged = typeof relOrOptions === 'string' ? { ...options, rel: relOrOptions } : (relOrOptions ?? {})
  return parseInput(edgeQuery, merged, 'edge query')
}

/** The graph namespace: neighbours, traversal and explicit links over the `edges` table. */
export function createGraph(ctx: EngineContext) {
  async function neighbours(direction: 'out' | 'in', id: string, query: z.output<typeof edgeQuery>) {
    parseInput(entityId, id, 'node id')
    if (query.rel !== undefined) await relationIds(ctx.db, [query.rel])
    const column = direction === 'out' ? 'e.src' : 'e.dst'
    const { rows } = await ctx.db.query<EdgeRow>(
      `SELECT ${EDGE_COLUMNS}
       FROM edges e JOIN relations r ON r.id = e.rel
       WHERE ${column} = $1 AND e.tenant_id = $4 AND ($2::text IS NULL OR r.name = $2) AND ${edgeVisibleAt('$3')}
         AND ${edgeHeldAt('$5')}
       ORDER BY e.created_at, e.id`,
      [id, query.rel ?? null, asOfParam(query.asOf), query.tenantId, query.validAt === undefined ? null : toDate(query.validAt)],
    )
    ctx.telemetry.emit({
      op: 'query',
      memoryId: id,
      entityType: 'edge',
      scope: null,
      runId: query.runId ?? null,
      taskId: query.taskId ?? null,
      detail: { direction, results: rows.length },
    })
    const at = query.asOf === undefined ? null : toDate(query.asOf)
    return rows.map((r) => toEdge(r, at))
  }

  return {
    /**
     * Edges leaving a node, oldest first.
     *
     * @example
     * await memory.graph.out(replyId, 'read_file') // the versions the reply read
     */
    out(id: string, relOrOptions?: string | EdgeQuery, options?: EdgeQuery): Promise<Edge[]> {
      return neighbours('out', id, parseEdgeQuery(relOrOptions, options))
    },

    /**
     * Edges arriving at a node, oldest first.
     *
     * @example
     * await memory.graph.in(documentId, 'VERSION_OF') // the document's versions
     */
    in(id: string, relOrOptions?: string | EdgeQuery, options?: EdgeQuery): Promise<Edge[]> {
      return neighbours('in', id, parseEdgeQuery(relOrOptions, options))
    },

    /**
     * Everything within `depth` hops of a node, following edges both ways and never looping.
     * Each node comes with its shortest distance; `edges` are the edges the walk crossed.
     *
     * @example
     * const { nodes, edges } = await memory.graph.walk(userEventId, { depth: 3 })
     */
    async walk(id: string, options: WalkOptions = {}): Promise<Walk> {
      parseInput(entityId, id, 'node id')
      const o = parseInput(walkOptions, options, 'walk options')
      if (o.rels !== undefined) await relationIds(ctx.db, o.rels)
      const { rows } = await ctx.db.query<{
        nodes: { id: string; depth: number }[]
        edges: EdgeRow[] | null
        truncated: boolean
      }>(
        `WITH RECURSIVE rel_filter AS (
           SELECT id FROM relations WHERE name = ANY($3::text[])
         ), walk(node, depth, via) AS (
           SELECT $1::text, 0, NULL::text
           UNION
           SELECT n.node, w.depth + 1, n.edge
           FROM walk w
           CROSS JOIN LATERAL (
             SELECT e.dst AS node, e.id AS edge FROM edges e
             WHERE e.src = w.node AND e.tenant_id = $6 AND ${edgeVisibleAt('$2')} AND ${edgeHeldAt('$7')}
               AND ($3::text[] IS NULL OR e.rel IN (SELECT id FROM rel_filter))
             UNION ALL
             SELECT e.src, e.id FROM edges e
             WHERE e.dst = w.node AND e.tenant_id = $6 AND ${edgeVisibleAt('$2')} AND ${edgeHeldAt('$7')}
               AND ($3::text[] IS NULL OR e.rel IN (SELECT id FROM rel_filter))
           ) n
           WHERE w.depth < $4 AND n.edge IS DISTINCT FROM w.via
         ), nearest AS (
           SELECT node, min(depth) AS depth FROM walk GROUP BY node
           ORDER BY min(depth), node
           LIMIT $5 + 1
         ), kept AS (
           SELECT node, depth FROM nearest ORDER BY depth, node LIMIT $5
         )
         SELECT
           (SELECT coalesce(jsonb_agg(jsonb_build_object('id', node, 'depth', depth) ORDER BY depth, node), '[]')
              FROM kept) AS nodes,
           (SELECT count(*) FROM nearest) > $5 AS truncated,
           (SELECT jsonb_agg(to_jsonb(x) ORDER BY x.created_at, x.id) FROM (
              SELECT ${EDGE_COLUMNS} FROM edges e JOIN relations r ON r.id = e.rel
              WHERE e.id IN (SELECT via FROM walk WHERE via IS NOT NULL)
                AND e.src IN (SELECT node FROM kept) AND e.dst IN (SELECT node FROM kept)
            ) x) AS edges`,
        [id, asOfParam(o.asOf), o.rels ?? null, o.depth, o.limit, o.tenantId, o.validAt === undefined ? null : toDate(o.validAt)],
      )
      const row = rows[0]
      if (!row) throw new MemoryError('INTERNAL', 'graph walk returned no row')
      ctx.telemetry.emit({
        op: 'query',
        memoryId: id,
        entityType: 'edge',
        scope: null,
        runId: o.runId ?? null,
        taskId: o.taskId ?? null,
        detail: { walk: o.depth, nodes: row.nodes.length, edges: row.edges?.length ?? 0 },
      })
      return {
        nodes: row.nodes.map((n) => ({ id: n.id, kind: kindOfId(n.id) ?? null, depth: n.depth })),
        edges: (row.edges ?? []).map((r) => toEdge(r, o.asOf === undefined ? null : toDate(o.asOf))),
        truncated: row.truncated,
      }
    },

    /**
     * Ends an edge's life without erasing it: reads see it before `at` (default now) and not
     * after. An edge is tombstoned once.
     *
     * @example
     * await memory.graph.tombstone(edgeId)
     */
    async tombstone(edgeId: string, options: { at?: TimeInput; tenantId?: string } = {}): Promise<Edge> {
      parseInput(identifier, edgeId, 'edge id')
      const o = parseInput(
        z.object({ at: timeInput.optional(), tenantId: identifier.default('default') }).strict(),
        options,
        'tombstone options',
      )
      const now = ctx.now()
      const at = o.at === undefined ? now : toDate(o.at)
      // An end to come would be an edge both live and ended: reads without a time see only
      // edges with no end, and a link put again meanwhile would be live twice.
      if (at > now) {
        throw new MemoryError('INVALID_INPUT', `An edge cannot be tombstoned at a time to come (${at.toISOString()}); end it then, or set validTo`, {
          details: { field: 'at' },
        })
      }
      const { rows } = await ctx.db.query<{ id: string; tombstoned_at: Date | null }>(
        `UPDATE edges SET tombstoned_at = $2
         WHERE id = $1 AND tenant_id = $3 AND tombstoned_at IS NULL AND created_at <= $2 RETURNING id`,
        [edgeId, at, o.tenantId],
      )
      if (rows.length === 0) {
        const existing = await getEdge(ctx, edgeId, o.tenantId)
        if (existing.tombstonedAt !== null) {
          throw new MemoryError('CONFLICT', `Edge ${edgeId} was already tombstoned at ${existing.tombstonedAt}`)
        }
        // An edge cannot end before it began: verify() would call the graph damaged.
        throw new MemoryError('INVALID_INPUT', `Edge ${edgeId} was created at ${existing.createdAt}; it cannot end before, at ${at.toISOString()}`, {
          details: { field: 'at' },
        })
      }
      const edge = await getEdge(ctx, edgeId, o.tenantId)
      ctx.telemetry.emit({
        op: 'delete',
        memoryId: edge.id,
        entityType: 'edge',
        scope: null,
        runId: edge.runId,
        taskId: edge.taskId,
        at,
        detail: { src: edge.src, rel: edge.rel, dst: edge.dst },
      })
      await warnOfTombstones(ctx, at)
      return edge
    },
  }
}

async function getEdge(ctx: EngineContext, id: string, tenantId: string): Promise<Edge> {
  const { rows } = await ctx.db.query<EdgeRow>(
    `SELECT ${EDGE_COLUMNS} FROM edges e JOIN relations r ON r.id = e.rel WHERE e.id = $1 AND e.tenant_id = $2`,
    [id, tenantId],
  )
  const row = rows[0]
  if (!row) throw new MemoryError('NOT_FOUND', `No edge ${id}`)
  return toEdge(row)
}
