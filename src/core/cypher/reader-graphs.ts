import type { EngineContext } from '../kernel/engine-context.ts'
import { AgeGraph, type GraphDatabase } from './age-graphs.ts'
import { drawGraph, type GraphView } from './graph-rows.ts'

/** How many graphs (one per scope, channel and `asOf` asked for) are kept up to date at once. */
const MAX_GRAPHS = 4

interface Drawn {
  view: GraphView
  graph: AgeGraph
  /** The next catch-up reads the rows dated after this. */
  from: Date
  /** The counters as the graph was drawn. */
  writes: string
  resets: string
}

/**
 * The readers' graphs of one engine: each scope, channel and `asOf` a query asks for gets a
 * graph of its own, holding only the rows that reader may see, kept up to date with the
 * memory before each query. The least recently used is dropped when a fifth is drawn.
 */
export class ReaderGraphs {
  readonly #ctx: EngineContext
  readonly #graphs = new Map<string, Drawn>()
  #made = 0

  constructor(ctx: EngineContext) {
    this.#ctx = ctx
  }

  /**
   * The graph of `view`, caught up with every write committed before this call. The rows are
   * read while `database` starts (a first query's thread boots meanwhile).
   */
  async caughtUp(opening: Promise<GraphDatabase>, view: GraphView): Promise<AgeGraph> {
    const key = JSON.stringify(view)
    const drawn = this.#graphs.get(key)
    // The rows are read in one snapshot, and PGlite runs one transaction at a time: every write
    // committed by then is read, up to now. A call still running, or one that starts within
    // this millisecond, may yet commit rows dated from its start on, so the next catch-up reads
    // again from just before it (a row applied twice is applied once). The clock is not moved.
    const now = this.#ctx.now()
    const to = view.asOf !== null && view.asOf < now ? view.asOf : now
    const from = new Date(Math.min(to.getTime(), this.#ctx.earliestCall() ?? Infinity) - 1)
    const read = await this.#ctx.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ writes: string; resets: string; expired: boolean }>(
        `SELECT (SELECT last_value FROM graph_writes)::text AS writes, (SELECT last_value FROM graph_resets)::text AS resets,
                EXISTS (SELECT 1 FROM memories WHERE tenant_id = $1 AND expires_at > $2 AND expires_at <= $3) AS expired`,
        [view.tenantId, drawn?.from ?? to, to],
      )
      const counters = rows[0] as { writes: string; resets: string; expired: boolean }
      const whole = drawn === undefined || drawn.resets !== counters.resets
      if (!whole && !counters.expired && (drawn.writes === counters.writes || drawn.from >= to)) return null
      return { counters, whole, draft: await drawGraph(tx, view, { from: whole ? null : drawn.from, to }) }
    })
    this.#graphs.delete(key)
    if (read === null) {
      // Nothing was committed since: the next catch-up may start at this cut.
      this.#graphs.set(key, { ...(drawn as Drawn), from })
      return (drawn as Drawn).graph
    }
    let graph = drawn?.graph
    try {
      if (read.whole) {
        await graph?.drop()
        graph = await AgeGraph.create(await opening, `engram_graph_${++this.#made}`)
      }
      await (graph as AgeGraph).apply(read.draft)
    } catch (error) {
      // A graph half brought up to date is drawn again whole by the next query.
      await graph?.drop().catch(() => {})
      throw error
    }
    this.#graphs.set(key, { view, graph: graph as AgeGraph, from, writes: read.counters.writes, resets: read.counters.resets })
    for (const [old, { graph: g }] of this.#graphs) {
      if (this.#graphs.size <= MAX_GRAPHS) break
      this.#graphs.delete(old)
      await g.drop()
    }
    return graph as AgeGraph
  }

  /** Brings every graph up to date, as a query of its reader would. */
  async catchUpAll(opening: Promise<GraphDatabase>): Promise<void> {
    for (const { view } of [...this.#graphs.values()]) await this.caughtUp(opening, view)
  }

  /** Forgets every graph (their database stopped, or is to be closed). */
  forget(): void {
    this.#graphs.clear()
  }
}
