import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { jsonObject, type JsonObject } from '../kernel/json.ts'
import { identifier } from '../kernel/scope.ts'
import { timeInput, toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { allowedSensitivities, readChannel } from '../privacy/channels.ts'
import { type AgeGraph, type GraphDatabase, type OpenGraphDatabase, prepareGraphDatabase } from './age-graphs.ts'
import { dollarTag, type GraphEdge, type GraphNode, KIND_KEY, parseAgtype, returnedNames, UnreadableQuery } from './cypher-text.ts'
import type { GraphView } from './graph-rows.ts'
import { ReaderGraphs } from './reader-graphs.ts'

/** The most rows one query returns (`limit`). */
export const MAX_CYPHER_ROWS = 10_000
/** How long writes must pause before the graphs catch up in the background (ms). */
export const CATCH_UP_QUIET_MS = 1000
/** How long a query may run by default, and at most, once its graph is up to date (ms). */
export const DEFAULT_CYPHER_TIMEOUT_MS = 10_000
export const MAX_CYPHER_TIMEOUT_MS = 600_000

const cypherOptions = z
  .object({
    scope: z
      .object({
        tenantId: identifier.default('default'),
        userId: identifier.optional(),
        agentId: identifier.optional(),
        projectId: identifier.optional(),
      })
      .strict()
      .default({ tenantId: 'default' }),
    channel: readChannel,
    asOf: timeInput.optional(),
    limit: z.number().int().min(1).max(MAX_CYPHER_ROWS).default(1000),
    timeoutMs: z.number().int().min(1).max(MAX_CYPHER_TIMEOUT_MS).default(DEFAULT_CYPHER_TIMEOUT_MS),
  })
  .strict()

export type CypherOptions = z.input<typeof cypherOptions>

/** A node in a result: its memory id, its label and its properties. */
export interface CypherNode {
  kind: 'node'
  id: string
  label: string
  properties: JsonObject
}

/** A relationship in a result: `type` is its relation name (a tool's name, `VERSION_OF`, …). */
export interface CypherRelationship {
  kind: 'relationship'
  id: string
  type: string
  start: string
  end: string
  properties: JsonObject
}

export type CypherValue =
  | string
  | number
  | boolean
  | null
  | CypherNode
  | CypherRelationship
  | CypherValue[]
  | { [key: string]: CypherValue }

export interface CypherResult {
  /** The names of the returned values, in order: an alias, or the expression's text. */
  columns: string[]
  rows: Record<string, CypherValue>[]
  /** True when the query had more rows than `limit`; `rows` holds the first `limit`. */
  truncated: boolean
}

/** A query as checked: its text, the names of its columns, its parameters. */
interface Query {
  text: string
  names: string[]
  params: JsonObject
  /** Set when the reader could not make the query out; AGE's parser then names the error. */
  unreadable: UnreadableQuery | null
}

/**
 * `memory.cypher`: read-only openCypher over the memory graph. Each scope, channel and
 * `asOf` a query asks for gets a graph of its own in a separate AGE database, holding only the
 * rows that reader may see, so no query can reach past them. A graph catches up with the
 * memory before each query (src/core/cypher/graph-rows.ts says what it draws).
 */
export function createCypher(ctx: EngineContext, openDatabase: OpenGraphDatabase | undefined) {
  let database: Promise<GraphDatabase> | undefined
  const graphs = new ReaderGraphs(ctx)
  let queue: Promise<unknown> = Promise.resolve()
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work)
    queue = next.catch(() => {})
    return next
  }

  const open = (): Promise<GraphDatabase> => {
    if (!openDatabase) {
      return Promise.reject(new MemoryError('NOT_SUPPORTED', 'This memory has no graph database for Cypher queries.'))
    }
    database ??= (async () => {
      const db = await openDatabase()
      try {
        await prepareGraphDatabase(db)
      } catch (error) {
        await db.close()
        throw error
      }
      return db
    })().catch((error: unknown) => {
      database = undefined
      throw error
    })
    return database
  }

  /**
   * Runs `query` in a read-only transaction. Past `timeoutMs` the database is stopped with
   * the query in it (PGlite cannot cancel a statement), and every graph is drawn again, in a
   * new database, by the next query.
   */
  async function run(db: GraphDatabase, graph: AgeGraph, q: Query, o: { limit: number; timeoutMs: number }) {
    const tag = dollarTag(q.text)
    const columns = q.names.map((_, i) => `c${i} agtype`).join(', ')
    let timedOut = false
    const stop = db.terminate?.bind(db)
    const timer = stop
      ? setTimeout(() => {
          timedOut = true
          database = undefined
          graphs.forget()
          stop()
        }, o.timeoutMs)
      : undefined
    await db.exec('BEGIN READ ONLY')
    try {
      const { rows } = await db.query<Record<string, string | null>>(
        `SELECT * FROM cypher('${graph.name}', ${tag}${q.text}${tag}, $1) AS (${columns}) LIMIT ${o.limit === 0 ? 0 : o.limit + 1}`,
        [JSON.stringify(q.params)],
      )
      return rows
    } catch (error) {
      if (timedOut) {
        throw new MemoryError('TIMEOUT', `The Cypher query ran past its time limit of ${o.timeoutMs} ms and was stopped.`, {
          details: { timeoutMs: o.timeoutMs },
        })
      }
      throw queryError(error)
    } finally {
      clearTimeout(timer)
      if (!timedOut) await db.exec('ROLLBACK')
    }
  }

  /**
   * Catches the reader's graph up, then runs the query. A graph database that stopped (its
   * thread died) is started again by the next query.
   */
  async function answer(view: GraphView, q: Query, o: { limit: number; timeoutMs: number }): Promise<CypherResult> {
    try {
      const opening = open()
      // A failed open is thrown below, after the rows are read.
      opening.catch(() => {})
      const graph = await graphs.caughtUp(opening, view)
      const rows = await run(await opening, graph, q, { limit: q.unreadable ? 0 : o.limit, timeoutMs: o.timeoutMs })
      if (q.unreadable) throw q.unreadable
      const kept = rows.slice(0, o.limit).map((row) => q.names.map((_, i) => parseAgtype(row[`c${i}`] ?? 'null')))
      const ends = await graph.memoryIds(relationshipEnds(kept))
      return {
        columns: q.names,
        rows: kept.map((row) => Object.fromEntries(q.names.map((name, i) => [name, toCypherValue(row[i], ends)]))),
        truncated: rows.length > o.limit,
      }
    } catch (error) {
      if (MemoryError.is(error, 'CLOSED')) {
        database = undefined
        graphs.forget()
      }
      throw error
    }
  }

  // After writes pause, the graphs drawn so far catch up in the background, so the next query
  // finds little to do. A failure here is left to that query, which catches up again.
  let quiet: ReturnType<typeof setTimeout> | undefined
  const nudge = () => {
    const opening = database
    if (!opening) return
    clearTimeout(quiet)
    const timer = setTimeout(() => void serial(() => graphs.catchUpAll(opening)).catch(() => {}), CATCH_UP_QUIET_MS)
    // A pending catch-up does not keep Node running.
    if (typeof timer === 'object' && 'unref' in timer) timer.unref()
    quiet = timer
  }

  return {
    nudge,

    /**
     * Runs a read-only openCypher query over the memory graph, as the reader `options` names
     * sees it (scope, channel, `asOf`). Parameters are bound, never spliced into the text:
     * write `$name` in the query and pass `{ name }`. A query that writes, or is not valid
     * Cypher, fails with `INVALID_INPUT`; one that runs past `timeoutMs` (default 10 s) is
     * stopped and fails with `TIMEOUT`. Labels and properties: docs/cypher.md.
     *
     * @example
     * const { rows } = await memory.cypher(
     *   'MATCH (m:Message)-[r]->(:Version)-[:VERSION_OF]->(d:Document) WHERE m.id = $id RETURN d.key AS path',
     *   { id: turn.agentEventId },
     * )
     */
    cypher(query: string, params?: JsonObject, options?: CypherOptions): Promise<CypherResult> {
      const text = parseInput(z.string().trim().min(1).max(100_000), query, 'Cypher query')
      const values = parseInput(jsonObject.optional(), params, 'Cypher parameters') ?? {}
      const o = parseInput(cypherOptions, options ?? {}, 'Cypher options')
      const view: GraphView = {
        tenantId: o.scope.tenantId,
        userId: o.scope.userId ?? null,
        agentId: o.scope.agentId ?? null,
        projectId: o.scope.projectId ?? null,
        sensitivities: allowedSensitivities(o.channel),
        asOf: o.asOf === undefined ? null : toDate(o.asOf),
      }
      return serial(() => answer(view, { text, params: values, ...columnsOf(text) }, o))
    },

    /** Drops every graph and closes the graph database (the memory is closing). */
    close(): Promise<void> {
      clearTimeout(quiet)
      return serial(async () => {
        const db = database
        database = undefined
        graphs.forget()
        if (db) await (await db.catch(() => null))?.close()
      })
    },
  }
}

/**
 * The names of a query's columns, refusing a query that writes or returns two values by one
 * name. A query the reader cannot make out gets one column, and is `unreadable`: AGE parses it
 * then, and names a syntax error more precisely.
 */
function columnsOf(text: string): Pick<Query, 'names' | 'unreadable'> {
  let names: string[]
  try {
    names = returnedNames(text)
  } catch (error) {
    if (!(error instanceof UnreadableQuery)) throw error
    return { names: ['value'], unreadable: error }
  }
  const twice = names.find((n, i) => names.indexOf(n) !== i)
  if (twice !== undefined) {
    throw new MemoryError('INVALID_INPUT', `Invalid Cypher query: two values are returned as "${twice}"; give one an alias with AS.`)
  }
  return { names, unreadable: null }
}

/** An error of the query itself (syntax, an unknown function, a bad value) as `INVALID_INPUT`. */
function queryError(error: unknown): unknown {
  const code = (error as { code?: unknown }).code
  if (typeof code !== 'string' || !/^(42|22|2F|25006)/.test(code)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new MemoryError('INVALID_INPUT', `Invalid Cypher query: ${message}.`, { cause: error, details: { sqlstate: code } })
}

const isMarked = (value: unknown, kind: 'vertex' | 'edge'): boolean =>
  value !== null && typeof value === 'object' && (value as Record<string, unknown>)[KIND_KEY] === kind

/** The graph ids, as text, of the ends of every relationship in `values`. */
function relationshipEnds(values: unknown): string[] {
  const ends: string[] = []
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk)
    else if (isMarked(v, 'edge')) ends.push(String((v as GraphEdge).start_id), String((v as GraphEdge).end_id))
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk)
  }
  walk(values)
  return [...new Set(ends)]
}

/** A parsed agtype value with its nodes and relationships named by memory ids. */
function toCypherValue(value: unknown, ends: Map<string, string>): CypherValue {
  if (Array.isArray(value)) return value.map((v) => toCypherValue(v, ends))
  if (isMarked(value, 'vertex')) {
    const node = value as GraphNode
    return { kind: 'node', id: String(node.properties.id), label: node.label, properties: node.properties as JsonObject }
  }
  if (isMarked(value, 'edge')) {
    const edge = value as GraphEdge
    return {
      kind: 'relationship',
      id: String(edge.properties.id),
      type: String(edge.properties.rel),
      start: ends.get(String(edge.start_id)) ?? '',
      end: ends.get(String(edge.end_id)) ?? '',
      properties: edge.properties as JsonObject,
    }
  }
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCypherValue(v, ends)]))
  }
  return value as CypherValue
}
