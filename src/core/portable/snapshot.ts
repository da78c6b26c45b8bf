import {
  corrupt,
  entityId,
  entityIds,
  isJsonObject,
  type JsonObject,
  type Neighbor,
  type NeighborsOptions,
  neighborsOptions,
  type NodeHistoryOptions,
  nodeHistoryOptions,
  type NodeReadOptions,
  type NodeRecord,
  nodeReadOptions,
  type NodesOptions,
  nodesOptions,
  type RelationRecord,
} from '../graph/entities.ts'
import { MemoryError } from '../kernel/errors.ts'
import { eventReadOptions, type EventRow, type MemoryEvent, type ReadByIdOptions, toEvent } from '../log/events.ts'
import { type KvEntry, type KvGetOptions, type KvListOptions, kvGetOptions, kvHistoryOptions, kvListOptions, kvName } from '../kv/kv.ts'
import { corrupt as damagedFile, type ExportManifest, readExportFile } from './portable.ts'
import { allowedSensitivities } from '../privacy/channels.ts'
import { identifier } from '../kernel/scope.ts'
import { parseInput, z } from '../kernel/validate.ts'

/**
 * A read-only view of an export file (`exportFile()`), read without a database:
 * the file is checked whole (signature, passphrase, every table's count and checksum) and its
 * graph, policy entries and events are indexed in memory. A node's links are found in one map
 * look-up and read in order, as the engine reads them from its adjacency indexes; the answers
 * are the engine's for the memory the file was written from (test/unit/snapshot.test.ts).
 *
 * It suits the places where opening a memory is too much: a build step or a test comparing a
 * graph against a known snapshot, a page showing a file before importing it, a tool that
 * inspects a memory a user sent.
 */
export interface Snapshot {
  readonly manifest: ExportManifest
  /**
   * An exported table's rows as the file holds them (JSON values; times as ISO text), by key;
   * `@vectors` lists the vectors (`source_id`, `ord`, `model`, `v`: base64 little-endian float32).
   */
  rows(table: string): readonly Readonly<Record<string, unknown>>[]
  readonly graph: {
    /** Every relation name the file's edges may use, by id. */
    relations(): RelationRecord[]
    /** A node as it was when the file was written, at `asOf`, or as revision `rev` left it. */
    getNode(id: string, options?: NodeReadOptions): NodeRecord | null
    /** Every revision of a node, oldest first, its removals among them. */
    nodeHistory(id: string, options?: NodeHistoryOptions): (NodeRecord & { tombstone: boolean })[]
    /** Live nodes, by id, as `memory.graph.nodes` reads them. */
    nodes(options?: NodesOptions): NodeRecord[]
    /** A node's (or several nodes') links, oldest first, as `memory.graph.neighbors` reads them. */
    neighbors(id: string | readonly string[], options?: NeighborsOptions): Neighbor[]
  }
  readonly kv: {
    get(scope: string, namespace: string, key: string, options?: KvGetOptions): KvEntry | null
    list(scope: string, namespace: string, options?: KvListOptions): KvEntry[]
    history(scope: string, namespace: string, key: string, options?: { tenantId?: string }): KvEntry[]
  }
  readonly events: {
    /** One event, if the channel may show it (NOT_FOUND otherwise, as `memory.events.get`). */
    get(eventId: string, options?: ReadByIdOptions): MemoryEvent
  }
}

export interface SnapshotOptions {
  /** The passphrase of an encrypted file. */
  passphrase?: string
}

type Row = Record<string, unknown>

interface NodeRev {
  record: NodeRecord
  /** Microseconds since the epoch, as Postgres keeps the time. */
  at: number
  tombstone: boolean
}

interface EdgeRow {
  id: string
  src: string
  dst: string
  rel: number
  props: unknown
  tenantId: string
  runId: string | null
  taskId: string | null
  at: number
  createdAt: Date
  tombstonedAt: number | null
  validFrom: number | null
  validTo: number | null
}

interface KvRev {
  entry: KvEntry
  at: number
}

const optionsSchema = z.strictObject({ passphrase: z.string().min(1).optional() })
const fileSchema = z.union([z.instanceof(Blob), z.instanceof(ArrayBuffer), z.instanceof(Uint8Array)], {
  error: 'expected a Blob, an ArrayBuffer or a Uint8Array holding an export file',
})

/** Microseconds since the epoch of a time as Postgres writes it into JSON (six fraction digits at most). */
function micros(value: unknown, what: string): number {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN
  if (Number.isNaN(ms)) throw damagedFile(`${what} is not a time`)
  const fraction = /\.(\d+)/.exec(value as string)?.[1] ?? ''
  return ms * 1000 + Number(fraction.padEnd(6, '0').slice(3, 6))
}

function optionalMicros(value: unknown, what: string): number | null {
  return value === null || value === undefined ? null : micros(value, what)
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null)
const toMicros = (date: Date | undefined): number | null => (date === undefined ? null : date.getTime() * 1000)
const dateOf = (at: number): Date => new Date(Math.floor(at / 1000))
const key = (...parts: string[]) => parts.join('\u0000')

function push<K, V>(map: Map<K, V[]>, k: K, v: V): void {
  const list = map.get(k)
  if (list) list.push(v)
  else map.set(k, [v])
}

/**
 * Text in the database's order: its collation is C, which orders by UTF-8 bytes, that is by
 * code point. JavaScript's `<` orders by UTF-16 unit, which differs past U+FFFF.
 */
function compareText(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    // A surrogate (U+D800–DFFF) starts a code point above U+FFFF, above every other unit.
    const hx = x >= 0xd800 && x <= 0xdfff ? x + 0x10000 : x
    const hy = y >= 0xd800 && y <= 0xdfff ? y + 0x10000 : y
    return hx - hy
  }
  return a.length - b.length
}

/** Oldest first, ties by id: the order the engine reads links in. */
const byTimeThenId = (a: EdgeRow, b: EdgeRow) => a.at - b.at || compareText(a.id, b.id)

/**
 * Opens an export file as a read-only snapshot, without a database or a worker.
 *
 * @example
 * const snap = await openSnapshot(await memory.exportFile())
 * const links = snap.graph.neighbors('file:src/app.ts', { rel: 'defines' })
 */
export async function openSnapshot(
  file: Blob | ArrayBuffer | Uint8Array,
  options: SnapshotOptions = {},
): Promise<Snapshot> {
  const input = parseInput(fileSchema, file, 'snapshot file')
  const o = parseInput(optionsSchema, options, 'snapshot options')
  const blob = input instanceof Blob ? input : new Blob([input])
  const { manifest, rows, vectors } = await readExportFile(blob, o.passphrase)
  const table = (name: string): Row[] => rows.get(name) ?? []

  const relations = new Map<number, RelationRecord>()
  const relationIds = new Map<string, number>()
  for (const r of table('relations')) {
    const relation: RelationRecord = {
      id: Number(r.id),
      name: String(r.name),
      description: text(r.description),
      builtin: r.builtin === true,
    }
    relations.set(relation.id, relation)
    relationIds.set(relation.name, relation.id)
  }

  // Each (tenant, id)'s revisions in order: the "node table" and its offset index in one map.
  const nodes = new Map<string, Map<string, NodeRev[]>>()
  for (const r of table('nodes')) {
    const at = micros(r.created_at, `node "${String(r.id)}"'s time`)
    const record: NodeRecord = {
      id: String(r.id),
      type: String(r.type),
      payload: r.payload as JsonObject,
      rev: Number(r.rev),
      scope: text(r.scope),
      runId: text(r.run_id),
      taskId: text(r.task_id),
      tenantId: String(r.tenant_id),
      updatedAt: dateOf(at),
    }
    const byId = nodes.get(record.tenantId) ?? new Map<string, NodeRev[]>()
    nodes.set(record.tenantId, byId)
    push(byId, record.id, { record, at, tombstone: r.tombstone === true })
  }
  for (const byId of nodes.values()) for (const revs of byId.values()) revs.sort((a, b) => a.record.rev - b.record.rev)

  // Adjacency: each (tenant, node)'s outgoing and incoming links, oldest first.
  const outgoing = new Map<string, EdgeRow[]>()
  const incoming = new Map<string, EdgeRow[]>()
  for (const r of table('edges')) {
    const at = micros(r.created_at, `edge "${String(r.id)}"'s time`)
    const edge: EdgeRow = {
      id: String(r.id),
      src: String(r.src),
      dst: String(r.dst),
      rel: Number(r.rel),
      props: r.props,
      tenantId: String(r.tenant_id),
      runId: text(r.run_id),
      taskId: text(r.task_id),
      at,
      createdAt: dateOf(at),
      tombstonedAt: optionalMicros(r.tombstoned_at, `edge "${String(r.id)}"'s removal`),
      validFrom: optionalMicros(r.valid_from, `edge "${String(r.id)}"'s start`),
      validTo: optionalMicros(r.valid_to, `edge "${String(r.id)}"'s end`),
    }
    push(outgoing, key(edge.tenantId, edge.src), edge)
    push(incoming, key(edge.tenantId, edge.dst), edge)
  }
  for (const list of outgoing.values()) list.sort(byTimeThenId)
  for (const list of incoming.values()) list.sort(byTimeThenId)

  const kv = new Map<string, Map<string, KvRev[]>>()
  for (const r of table('kv')) {
    const at = micros(r.created_at, `policy entry "${String(r.id)}"'s time`)
    const entry: KvEntry = {
      scope: String(r.scope),
      namespace: String(r.namespace),
      key: String(r.key),
      rev: Number(r.rev),
      payload: r.payload,
      deleted: r.deleted === true,
      runId: text(r.run_id),
      taskId: text(r.task_id),
      createdAt: dateOf(at),
    }
    const space = key(String(r.tenant_id), entry.scope, entry.namespace)
    const keys = kv.get(space) ?? new Map<string, KvRev[]>()
    kv.set(space, keys)
    push(keys, entry.key, { entry, at })
  }
  for (const keys of kv.values()) for (const revs of keys.values()) revs.sort((a, b) => a.entry.rev - b.entry.rev)

  const events = new Map<string, Row>(table('events').map((r) => [String(r.id), r]))

  /** The revision of a node in force at `asOf` (µs), or the latest. */
  function latest(revs: NodeRev[] | undefined, asOf: number | null): NodeRev | undefined {
    if (!revs) return undefined
    for (let i = revs.length - 1; i >= 0; i--) {
      const rev = revs[i] as NodeRev
      if (asOf === null || rev.at <= asOf) return rev
    }
    return undefined
  }

  function checked(rev: NodeRev): NodeRecord {
    if (!isJsonObject(rev.record.payload)) {
      throw corrupt(`Node "${rev.record.id}" rev ${rev.record.rev} has a payload that is not an object`, {
        id: rev.record.id,
      })
    }
    return { ...rev.record }
  }

  const graph: Snapshot['graph'] = {
    relations: () => [...relations.values()].sort((a, b) => a.id - b.id).map((r) => ({ ...r })),

    getNode(id, options = {}) {
      const nodeId = parseInput(entityId, id, 'node id')
      const opts = parseInput(nodeReadOptions, options, 'node read options')
      const revs = nodes.get(opts.tenantId)?.get(nodeId)
      const found =
        opts.rev === undefined
          ? latest(revs, toMicros(opts.asOf))
          : revs?.find((r) => r.record.rev === opts.rev)
      return found && !found.tombstone ? checked(found) : null
    },

    nodeHistory(id, options = {}) {
      const nodeId = parseInput(entityId, id, 'node id')
      const opts = parseInput(nodeHistoryOptions, options, 'node history options')
      return (nodes.get(opts.tenantId)?.get(nodeId) ?? []).map((r) => ({ ...checked(r), tombstone: r.tombstone }))
    },

    nodes(options = {}) {
      const opts = parseInput(nodesOptions, options, 'nodes options')
      const byId = nodes.get(opts.tenantId)
      if (!byId) return []
      const asOf = toMicros(opts.asOf)
      const ids = opts.ids ? [...new Set(opts.ids)].filter((id) => byId.has(id)) : [...byId.keys()]
      const out: NodeRecord[] = []
      for (const id of ids.sort(compareText)) {
        const rev = latest(byId.get(id), asOf)
        if (!rev || rev.tombstone) continue
        if (opts.type !== undefined && rev.record.type !== opts.type) continue
        if (opts.scope !== undefined && rev.record.scope !== opts.scope) continue
        out.push(checked(rev))
        if (out.length === opts.limit) break
      }
      return out
    },

    neighbors(id, options = {}) {
      const ids = typeof id === 'string' ? [parseInput(entityId, id, 'node id')] : parseInput(entityIds, id, 'node ids')
      const opts = parseInput(neighborsOptions, options, 'neighbor options')
      let rels: Set<number> | null = null
      if (opts.rel !== undefined) {
        const names = typeof opts.rel === 'string' ? [opts.rel] : opts.rel
        const missing = names.filter((n) => !relationIds.has(n))
        if (missing.length > 0) {
          throw new MemoryError('UNKNOWN_RELATION', `Unknown relation "${missing[0]}": define it first`, {
            details: { relations: [...new Set(missing)] },
          })
        }
        rels = new Set(names.map((n) => relationIds.get(n) as number))
      }
      const asOf = toMicros(opts.asOf)
      const validAt = toMicros(opts.validAt)
      const visible = (e: EdgeRow) =>
        (rels === null || rels.has(e.rel)) &&
        (asOf === null ? e.tombstonedAt === null : e.at <= asOf && (e.tombstonedAt === null || e.tombstonedAt > asOf)) &&
        (validAt === null || ((e.validFrom === null || e.validFrom <= validAt) && (e.validTo === null || e.validTo > validAt)))
      const hits: { edge: EdgeRow; direction: 'out' | 'in' }[] = []
      for (const nodeId of new Set(ids)) {
        if (opts.direction !== 'in') {
          for (const edge of outgoing.get(key(opts.tenantId, nodeId)) ?? []) if (visible(edge)) hits.push({ edge, direction: 'out' })
        }
        if (opts.direction !== 'out') {
          for (const edge of incoming.get(key(opts.tenantId, nodeId)) ?? []) if (visible(edge)) hits.push({ edge, direction: 'in' })
        }
      }
      hits.sort((a, b) => byTimeThenId(a.edge, b.edge) || (a.direction < b.direction ? -1 : a.direction > b.direction ? 1 : 0))
      const byId = nodes.get(opts.tenantId)
      return hits.slice(0, opts.limit).map(({ edge, direction }): Neighbor => {
        const relation = relations.get(edge.rel)
        if (!relation) {
          throw corrupt(`Edge "${edge.id}" points at relation id ${edge.rel}, which does not exist`, {
            edgeId: edge.id,
            relId: edge.rel,
          })
        }
        if (!isJsonObject(edge.props)) throw corrupt(`Edge "${edge.id}" has a payload that is not an object`, { edgeId: edge.id })
        const neighbor = direction === 'out' ? edge.dst : edge.src
        const node = latest(byId?.get(neighbor), asOf)
        return {
          edgeId: edge.id,
          src: edge.src,
          rel: relation.name,
          dst: edge.dst,
          neighbor,
          direction,
          payload: edge.props,
          neighborType: node && !node.tombstone ? node.record.type : null,
          validFrom: edge.validFrom === null ? null : dateOf(edge.validFrom),
          validTo: edge.validTo === null ? null : dateOf(edge.validTo),
          runId: edge.runId,
          taskId: edge.taskId,
          createdAt: edge.createdAt,
        }
      })
    },
  }

  const kvKey = z.tuple([kvName, kvName, kvName])
  const kvReads: Snapshot['kv'] = {
    get(scope, namespace, k, options = {}) {
      const [s, n, name] = parseInput(kvKey, [scope, namespace, k], 'kv key')
      const opts = parseInput(kvGetOptions, options, 'kv read options')
      const revs = kv.get(key(opts.tenantId, s, n))?.get(name) ?? []
      const rev = typeof opts.asOf === 'number' ? opts.asOf : null
      const time = opts.asOf instanceof Date ? toMicros(opts.asOf) : null
      const found = revs.findLast((r) => (rev === null || r.entry.rev <= rev) && (time === null || r.at <= time))
      return found && !found.entry.deleted ? { ...found.entry } : null
    },
    list(scope, namespace, options = {}) {
      const [s, n] = parseInput(z.tuple([kvName, kvName]), [scope, namespace], 'kv namespace')
      const opts = parseInput(kvListOptions, options, 'kv list options')
      const time = toMicros(opts.asOf)
      const keys = kv.get(key(opts.tenantId, s, n))
      if (!keys) return []
      return [...keys.keys()]
        .sort(compareText)
        .map((k) => (keys.get(k) as KvRev[]).findLast((r) => time === null || r.at <= time))
        .filter((r): r is KvRev => r !== undefined && !r.entry.deleted)
        .map((r) => ({ ...r.entry }))
    },
    history(scope, namespace, k, options = {}) {
      const [s, n, name] = parseInput(kvKey, [scope, namespace, k], 'kv key')
      const opts = parseInput(kvHistoryOptions, options, 'kv options')
      return (kv.get(key(opts.tenantId, s, n))?.get(name) ?? []).map((r) => ({ ...r.entry }))
    },
  }

  /** A row the checks let through that cannot be read (a time that is none, a payload nested past the stack): the file is damaged. */
  const readable = <T>(read: () => T): T => {
    try {
      return read()
    } catch (error) {
      if (MemoryError.is(error)) throw error
      throw damagedFile(`a row cannot be read (${error instanceof Error ? error.message : String(error)})`, error)
    }
  }

  const eventReads: Snapshot['events'] = {
    get(eventId, options = {}) {
      parseInput(identifier, eventId, 'event id')
      const opts = parseInput(eventReadOptions, options, 'event read options')
      const row = events.get(eventId)
      if (!row || row.tenant_id !== opts.tenantId || !(allowedSensitivities(opts.channel) as string[]).includes(String(row.sensitivity))) {
        throw new MemoryError('NOT_FOUND', `No event ${eventId}`)
      }
      return readable(() => toEvent(structuredClone(row) as unknown as EventRow))
    },
  }

  return {
    manifest,
    rows(name) {
      const t = parseInput(z.string().min(1), name, 'table name')
      if (!Object.hasOwn(manifest.tables, t)) {
        throw new MemoryError('INVALID_INPUT', `The file has no table "${t}"; it has ${Object.keys(manifest.tables).join(', ')}`)
      }
      return readable(() => structuredClone(t === '@vectors' ? (vectors as unknown as Row[]) : table(t)))
    },
    graph,
    kv: kvReads,
    events: eventReads,
  }
}
