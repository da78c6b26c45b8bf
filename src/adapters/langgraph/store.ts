import {
  BaseStore,
  getTextAtPath,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  validateNamespace,
} from '@langchain/langgraph-checkpoint'
import { MemoryError } from '../../core/kernel/errors.ts'
import type { KvEntry } from '../../core/kv/kv.ts'

/** What the store needs of a memory: one from `createMemory` or `openMemory` has it. */
export interface StoreMemory {
  kv: {
    get(scope: string, namespace: string, key: string, options?: { tenantId?: string }): Promise<KvEntry | null>
    put(scope: string, namespace: string, key: string, payload: unknown, options?: { tenantId?: string }): Promise<KvEntry>
    delete(scope: string, namespace: string, key: string, options?: { tenantId?: string }): Promise<unknown>
    list(scope: string, namespace: string, options?: { tenantId?: string }): Promise<KvEntry[]>
    namespaces(scope: string, options?: { tenantId?: string }): Promise<string[]>
  }
  /** The memory's own model; without one, a search ignores its query, as an unindexed store does. */
  embed(texts: string[]): Promise<Float32Array[]>
}

export interface EngramStoreOptions {
  /** The kv scope the store's items live in. Default `langgraph`. */
  scope?: string
  tenantId?: string
  /**
   * Which parts of a value a query is matched against, as LangGraph's paths (`$` is the whole
   * value, `text`, `facts[*].text`). Default `['$']`. `false` keeps no vectors: a query is ignored.
   */
  index?: { fields?: string[] } | false
}

/** An item as kept in the kv store: its value, when it was first put, and its vectors. */
interface Stored {
  value: Record<string, unknown>
  createdAt: string
  vectors?: number[][]
}

/**
 * LangGraph's long-term memory store (`BaseStore`) over the memory's kv store. Namespaces and
 * keys are kept as kv entries with every revision; a query is matched by meaning with the
 * memory's own model against the fields `index` names. Works with a memory from `createMemory`
 * or `openMemory`.
 *
 * @example
 * import { EngramStore } from 'engram/langgraph'
 * const store = new EngramStore(memory)
 * await store.put(['memories', 'alice'], 'tabs', { text: 'Alice prefers tabs' })
 * const hits = await store.search(['memories', 'alice'], { query: 'indentation' })
 */
export class EngramStore extends BaseStore {
  readonly #memory: StoreMemory
  readonly #scope: string
  readonly #tenant: { tenantId?: string }
  readonly #fields: string[] | undefined

  constructor(memory: StoreMemory, options: EngramStoreOptions = {}) {
    super()
    this.#memory = memory
    this.#scope = options.scope ?? 'langgraph'
    this.#tenant = options.tenantId ? { tenantId: options.tenantId } : {}
    this.#fields = options.index === false ? undefined : (options.index?.fields ?? ['$'])
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = []
    for (const op of operations) {
      if ('namespacePrefix' in op) results.push(await this.#search(op))
      else if ('value' in op) results.push(await this.#put(op))
      else if ('namespace' in op) results.push(await this.#get(op.namespace, op.key))
      else results.push(await this.#listNamespaces(op))
    }
    return results as OperationResults<Op>
  }

  async #get(namespace: string[], key: string): Promise<Item | null> {
    validateNamespace(namespace)
    const entry = await this.#memory.kv.get(this.#scope, encode(namespace), key, this.#tenant)
    return entry ? itemOf(entry) : null
  }

  async #put(op: PutOperation): Promise<void> {
    validateNamespace(op.namespace)
    const ns = encode(op.namespace)
    if (op.value === null) {
      if (await this.#memory.kv.get(this.#scope, ns, op.key, this.#tenant)) await this.#memory.kv.delete(this.#scope, ns, op.key, this.#tenant)
      return
    }
    const before = await this.#memory.kv.get(this.#scope, ns, op.key, this.#tenant)
    const createdAt = before ? (before.payload as Stored).createdAt : new Date().toISOString()
    const vectors = await this.#vectors(op)
    const stored: Stored = { value: op.value, createdAt, ...(vectors ? { vectors } : {}) }
    await this.#memory.kv.put(this.#scope, ns, op.key, stored, this.#tenant)
  }

  async #search(op: SearchOperation): Promise<SearchItem[]> {
    const namespaces = (await this.#memory.kv.namespaces(this.#scope, this.#tenant)).map(decode)
    const inPrefix = namespaces.filter((ns) => op.namespacePrefix.every((label, i) => ns[i] === label))
    const entries = (await Promise.all(inPrefix.map((ns) => this.#memory.kv.list(this.#scope, encode(ns), this.#tenant)))).flat()
    const items = entries.filter((e) => matches((e.payload as Stored).value, op.filter))
    const offset = op.offset ?? 0
    const limit = op.limit ?? 10
    const query = op.query ? (await this.#embed([op.query]))?.[0] : undefined
    if (!query) return items.slice(offset, offset + limit).map((e) => itemOf(e))
    const scored = items.map((e) => ({ entry: e, score: bestCosine(query, (e.payload as Stored).vectors) }))
    scored.sort((a, b) => (b.score ?? -Infinity) - (a.score ?? -Infinity))
    return scored.slice(offset, offset + limit).map(({ entry, score }) => ({ ...itemOf(entry), ...(score === undefined ? {} : { score }) }))
  }

  /** LangGraph's own rules: conditions all hold, `maxDepth` cuts, sorted, then paginated. */
  async #listNamespaces(op: ListNamespacesOperation): Promise<string[][]> {
    let namespaces = (await this.#memory.kv.namespaces(this.#scope, this.#tenant)).map(decode)
    const conditions = op.matchConditions ?? []
    namespaces = namespaces.filter((ns) => conditions.every((c) => holds(c, ns)))
    if (op.maxDepth !== undefined) {
      namespaces = [...new Set(namespaces.map((ns) => encode(ns.slice(0, op.maxDepth))))].map(decode)
    }
    namespaces.sort((a, b) => a.join(':').localeCompare(b.join(':')))
    return namespaces.slice(op.offset, op.offset + op.limit)
  }

  async #vectors(op: PutOperation): Promise<number[][] | undefined> {
    if (op.index === false || !this.#fields || op.value === null) return undefined
    const fields = op.index ?? this.#fields
    const texts = fields.flatMap((path) => getTextAtPath(op.value, path))
    if (texts.length === 0) return undefined
    const vectors = await this.#embed(texts)
    return vectors?.map((v) => Array.from(v, (x) => Math.round(x * 1e6) / 1e6))
  }

  /** The texts' vectors, or undefined while the memory has no model (none, or still loading). */
  async #embed(texts: string[]): Promise<Float32Array[] | undefined> {
    try {
      return await this.#memory.embed(texts)
    } catch (error) {
      if (MemoryError.is(error) && (error.code === 'MODEL_UNAVAILABLE' || error.code === 'MODEL_LOADING')) return undefined
      throw error
    }
  }
}

/** A namespace as one kv namespace name: its labels as a JSON array. */
function encode(namespace: string[]): string {
  return JSON.stringify(namespace)
}

function decode(name: string): string[] {
  const parsed: unknown = JSON.parse(name)
  return Array.isArray(parsed) ? parsed.map(String) : [name]
}

function itemOf(entry: KvEntry): Item {
  const stored = entry.payload as Stored
  return {
    value: stored.value,
    key: entry.key,
    namespace: decode(entry.namespace),
    createdAt: new Date(stored.createdAt),
    updatedAt: entry.createdAt,
  }
}

/** LangGraph's filter: each field equal, or passing its operators ($eq, $ne, $gt, $gte, $lt, $lte, $in, $nin). */
function matches(value: Record<string, unknown>, filter: Record<string, unknown> | undefined): boolean {
  if (!filter) return true
  return Object.entries(filter).every(([field, wanted]) => compare(value[field], wanted))
}

function compare(actual: unknown, wanted: unknown): boolean {
  if (typeof wanted !== 'object' || wanted === null || Array.isArray(wanted) || !Object.keys(wanted).some((k) => k.startsWith('$'))) {
    return actual === wanted
  }
  return Object.entries(wanted as Record<string, unknown>)
    .filter(([op]) => op.startsWith('$'))
    .every(([op, v]) => {
      switch (op) {
        case '$eq':
          return actual === v
        case '$ne':
          return actual !== v
        case '$gt':
          return Number(actual) > Number(v)
        case '$gte':
          return Number(actual) >= Number(v)
        case '$lt':
          return Number(actual) < Number(v)
        case '$lte':
          return Number(actual) <= Number(v)
        case '$in':
          return Array.isArray(v) && v.includes(actual)
        case '$nin':
          return !Array.isArray(v) || !v.includes(actual)
        default:
          return false
      }
    })
}

function holds(condition: MatchCondition, namespace: string[]): boolean {
  const { matchType, path } = condition
  if (path.length > namespace.length) return false
  const start = matchType === 'prefix' ? 0 : namespace.length - path.length
  return path.every((label, i) => label === '*' || namespace[start + i] === label)
}

function bestCosine(query: Float32Array, vectors: number[][] | undefined): number | undefined {
  if (!vectors?.length) return undefined
  let best = -Infinity
  for (const v of vectors) {
    let dot = 0
    let a = 0
    let b = 0
    for (let i = 0; i < query.length; i++) {
      const q = query[i] ?? 0
      const x = v[i] ?? 0
      dot += q * x
      a += q * q
      b += x * x
    }
    best = Math.max(best, a && b ? dot / Math.sqrt(a * b) : 0)
  }
  return best
}
