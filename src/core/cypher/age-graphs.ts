import type { QueryResult } from '../kernel/db.ts'
import type { GraphDraft, LinkDraft, NodeDraft } from './graph-rows.ts'
import { NODE_LABELS } from './graph-rows.ts'

/**
 * The database the Cypher graphs live in: a PGlite with Apache AGE, apart from the memory's
 * own (AGE must be loaded when a PGlite starts, and the memory's starts without it).
 */
export interface GraphDatabase {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>
  exec(sql: string): Promise<unknown>
  close(): Promise<void>
  /**
   * Stops the database at once, with the query running in it (one in a thread of its own).
   * Without it, `cypher` cannot hold a query to its time limit.
   */
  terminate?(): void
}

/** Opens an empty graph database (`openMemory` gives one that loads AGE on first use). */
export type OpenGraphDatabase = () => Promise<GraphDatabase>

/** The label of a relationship whose relation name is no AGE label; its `rel` property keeps the name. */
export const FALLBACK_REL_LABEL = 'RELATION'

const LABEL = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/
const NODE_LABEL_SET = new Set<string>(NODE_LABELS)

/**
 * The relationship label of relation `rel`: its own name when AGE takes it as a label (a
 * letter or `_`, then letters, digits and `_`, at most 63), else `RELATION`. A name a node
 * label already has (`Memory`) takes `RELATION` too: AGE keeps one namespace of labels.
 */
export function relLabel(rel: string): string {
  return LABEL.test(rel) && !NODE_LABEL_SET.has(rel) && !rel.startsWith('_ag') && rel !== FALLBACK_REL_LABEL
    ? rel
    : FALLBACK_REL_LABEL
}

/** Makes the database ready for graphs: AGE created and loaded, its catalog on the path. */
export async function prepareGraphDatabase(db: GraphDatabase): Promise<void> {
  await db.exec(`CREATE EXTENSION IF NOT EXISTS age; LOAD 'age'; SET search_path = ag_catalog, "$user", public;`)
}

/**
 * One graph in the database, named `name` (ours, never input): AGE's label tables, and
 * `engram_ids`, which maps each node's and relationship's memory id to its graph id.
 */
export class AgeGraph {
  readonly #db: GraphDatabase
  readonly name: string
  /** The graph's labels, each a node (`v`) or relationship (`e`) label. */
  readonly #kinds = new Map<string, 'v' | 'e'>()
  /** Whether the label tables have their indexes: made once the first drawing is in. */
  #indexed = false

  private constructor(db: GraphDatabase, name: string) {
    this.#db = db
    this.name = name
  }

  static async create(db: GraphDatabase, name: string): Promise<AgeGraph> {
    const graph = new AgeGraph(db, name)
    await db.query('SELECT create_graph($1)', [name])
    await db.exec(`CREATE TABLE "${name}".engram_ids (kind text NOT NULL, id text NOT NULL, gid graphid NOT NULL,
                     PRIMARY KEY (kind, id));
                   CREATE INDEX ON "${name}".engram_ids (gid);`)
    for (const label of NODE_LABELS) await graph.#label(label, 'v')
    await graph.#label(FALLBACK_REL_LABEL, 'e')
    return graph
  }

  async drop(): Promise<void> {
    await this.#db.query('SELECT drop_graph($1, true)', [this.name])
  }

  async #label(label: string, kind: 'v' | 'e'): Promise<void> {
    if (this.#kinds.has(label)) return
    await this.#db.query(kind === 'v' ? 'SELECT create_vlabel($1, $2)' : 'SELECT create_elabel($1, $2)', [this.name, label])
    this.#kinds.set(label, kind)
    if (this.#indexed) await this.#db.exec(indexesOf(this.name, label, kind))
  }

  /**
   * Indexes every label table: ids and properties of nodes (a match on `{id: $id}` reads the
   * GIN index), and both ends of relationships. AGE makes none; without them each step of a
   * pattern reads a whole table. Made after the first drawing, which is quicker than keeping
   * them up while it loads; the planner's statistics are refreshed with them.
   */
  async #index(): Promise<void> {
    await this.#db.exec([...this.#kinds].map(([label, kind]) => indexesOf(this.name, label, kind)).join('\n'))
    await this.#db.exec(`ANALYZE ${[...this.#kinds.keys()].map((label) => `"${this.name}"."${label}"`).join(', ')}`)
    this.#indexed = true
  }

  /**
   * Brings the graph in line with `draft`: visible nodes written (new ones added, known ones
   * given their new properties), invisible ones taken out with their relationships, then the
   * same for relationships. A relationship whose two ends are not both in the graph is left out.
   */
  async apply(draft: GraphDraft): Promise<void> {
    await this.#removeNodes(draft.nodes.filter((n) => !n.visible).map((n) => n.id))
    for (const [label, nodes] of groupBy(draft.nodes.filter((n) => n.visible), (n) => n.label)) {
      await this.#writeNodes(label, nodes)
    }
    await this.#removeLinks(draft.links.filter((l) => !l.visible).map((l) => l.id))
    for (const [label, links] of groupBy(draft.links.filter((l) => l.visible), (l) => relLabel(l.rel))) {
      await this.#label(label, 'e')
      await this.#writeLinks(label, links)
    }
    if (!this.#indexed) await this.#index()
  }

  async #writeNodes(label: string, nodes: NodeDraft[]): Promise<void> {
    const g = `"${this.name}"`
    await this.#db.query(
      `WITH x AS (SELECT r.id, (r.p::text)::agtype AS p FROM json_to_recordset($1::json) AS r(id text, p json)),
            changed AS (UPDATE ${g}."${label}" t SET properties = x.p
                        FROM x JOIN ${g}.engram_ids i ON i.kind = 'node' AND i.id = x.id WHERE t.id = i.gid),
            fresh AS (SELECT x.id, x.p, _graphid(_label_id($2, $3)::int, nextval('${g}."${label}_id_seq"')) AS gid
                      FROM x WHERE NOT EXISTS (SELECT 1 FROM ${g}.engram_ids i WHERE i.kind = 'node' AND i.id = x.id)),
            added AS (INSERT INTO ${g}."${label}" (id, properties) SELECT gid, p FROM fresh)
       INSERT INTO ${g}.engram_ids (kind, id, gid) SELECT 'node', id, gid FROM fresh`,
      [JSON.stringify(nodes.map((n) => ({ id: n.id, p: n.properties }))), this.name, label],
    )
  }

  async #writeLinks(label: string, links: LinkDraft[]): Promise<void> {
    const g = `"${this.name}"`
    await this.#db.query(
      `WITH x AS (SELECT r.id, r.src, r.dst, (r.p::text)::agtype AS p
                  FROM json_to_recordset($1::json) AS r(id text, src text, dst text, p json)),
            fresh AS (SELECT x.id, x.p, s.gid AS s, d.gid AS d,
                             _graphid(_label_id($2, $3)::int, nextval('${g}."${label}_id_seq"')) AS gid
                      FROM x JOIN ${g}.engram_ids s ON s.kind = 'node' AND s.id = x.src
                             JOIN ${g}.engram_ids d ON d.kind = 'node' AND d.id = x.dst
                      WHERE NOT EXISTS (SELECT 1 FROM ${g}.engram_ids i WHERE i.kind = 'edge' AND i.id = x.id)),
            added AS (INSERT INTO ${g}."${label}" (id, start_id, end_id, properties) SELECT gid, s, d, p FROM fresh)
       INSERT INTO ${g}.engram_ids (kind, id, gid) SELECT 'edge', id, gid FROM fresh`,
      [JSON.stringify(links.map((l) => ({ id: l.id, src: l.src, dst: l.dst, p: l.properties }))), this.name, label],
    )
  }

  async #removeNodes(ids: string[]): Promise<void> {
    if (ids.length === 0) return
    const g = `"${this.name}"`
    await this.#db.query(
      `WITH gone AS (DELETE FROM ${g}.engram_ids WHERE kind = 'node' AND id = ANY($1::text[]) RETURNING gid),
            links AS (DELETE FROM ${g}._ag_label_edge
                      WHERE start_id IN (SELECT gid FROM gone) OR end_id IN (SELECT gid FROM gone) RETURNING id),
            link_ids AS (DELETE FROM ${g}.engram_ids WHERE kind = 'edge' AND gid IN (SELECT id FROM links))
       DELETE FROM ${g}._ag_label_vertex WHERE id IN (SELECT gid FROM gone)`,
      [ids],
    )
  }

  async #removeLinks(ids: string[]): Promise<void> {
    if (ids.length === 0) return
    const g = `"${this.name}"`
    await this.#db.query(
      `WITH gone AS (DELETE FROM ${g}.engram_ids WHERE kind = 'edge' AND id = ANY($1::text[]) RETURNING gid)
       DELETE FROM ${g}._ag_label_edge WHERE id IN (SELECT gid FROM gone)`,
      [ids],
    )
  }

  /** The memory ids of graph ids (as text), for the ends of the relationships a query returns. */
  async memoryIds(gids: readonly string[]): Promise<Map<string, string>> {
    if (gids.length === 0) return new Map()
    const { rows } = await this.#db.query<{ id: string; gid: string }>(
      // Compared as graph ids (text reaches graphid only through agtype), so the index on gid serves.
      `SELECT id, gid::text AS gid FROM "${this.name}".engram_ids
       WHERE kind = 'node' AND gid IN (SELECT (x::agtype)::graphid FROM unnest($1::text[]) AS x)`,
      [gids],
    )
    return new Map(rows.map((r) => [r.gid, r.id]))
  }
}

/** The indexes of one label table (see `#index`). */
function indexesOf(graph: string, label: string, kind: 'v' | 'e'): string {
  const table = `"${graph}"."${label}"`
  return kind === 'v'
    ? `CREATE INDEX ON ${table} (id); CREATE INDEX ON ${table} USING gin (properties);`
    : `CREATE INDEX ON ${table} (id); CREATE INDEX ON ${table} (start_id); CREATE INDEX ON ${table} (end_id);`
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const item of items) {
    const k = key(item)
    const group = groups.get(k)
    if (group) group.push(item)
    else groups.set(k, [item])
  }
  return groups
}
