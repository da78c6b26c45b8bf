import { Embeddings } from '@langchain/core/embeddings'
import { InMemoryStore, type Item } from '@langchain/langgraph-checkpoint'
import { describe, expect, it } from 'vitest'
import { EngramStore } from '../../src/adapters/langgraph/index.ts'
import { createTestEmbedder } from '../support/embedder.ts'
import { openTestMemory } from '../support/memory.ts'

const embedder = createTestEmbedder()
/** The same model for LangGraph's in-memory store, as its `Embeddings`. */
class SameModel extends Embeddings {
  constructor() {
    super({})
  }
  async embedDocuments(texts: string[]): Promise<number[][]> {
    return (await embedder.embed(texts)).map((v) => Array.from(v))
  }
  async embedQuery(text: string): Promise<number[]> {
    return Array.from((await embedder.embed([text]))[0] ?? [])
  }
}
const embeddings = new SameModel()

const ITEMS: [string[], string, Record<string, unknown>][] = [
  [['memories', 'alice'], 'tabs', { text: 'Alice prefers tabs over spaces', kind: 'preference', weight: 3 }],
  [['memories', 'alice'], 'editor', { text: 'Alice edits in Neovim with a dark theme', kind: 'preference', weight: 1 }],
  [['memories', 'alice', 'work'], 'deploy', { text: 'The deploy script needs the STAGE variable', kind: 'fact', weight: 5 }],
  [['memories', 'bob'], 'tabs', { text: 'Bob indents with two spaces', kind: 'preference', weight: 2 }],
  [['docs', 'alice'], 'readme', { text: 'The README starts with a quick start', kind: 'fact', weight: 4 }],
]

/** What both stores say, without the times (each store keeps its own clock). */
function plain(items: (Item | null)[]): unknown[] {
  return items.map((i) => (i ? { namespace: i.namespace, key: i.key, value: i.value } : null))
}

function byPlace(items: Item[]): Item[] {
  return [...items].sort((a, b) => `${a.namespace.join(':')}/${a.key}`.localeCompare(`${b.namespace.join(':')}/${b.key}`))
}

describe('the LangGraph store', () => {
  it('gets, searches, filters and lists namespaces as LangGraph’s in-memory store does', async () => {
    await using memory = await openTestMemory({ embedder })
    const ours = new EngramStore(memory, { index: { fields: ['text'] } })
    const theirs = new InMemoryStore({ index: { dims: embedder.dims, embeddings, fields: ['text'] } })
    for (const store of [ours, theirs]) for (const [ns, key, value] of ITEMS) await store.put(ns, key, value)

    expect(plain([await ours.get(['memories', 'alice'], 'tabs')])).toEqual(plain([await theirs.get(['memories', 'alice'], 'tabs')]))
    expect(await ours.get(['memories', 'alice'], 'missing')).toBeNull()

    for (const [prefix, options] of [
      [['memories'], {}],
      [['memories', 'alice'], {}],
      [[], { filter: { kind: 'preference' } }],
      [['memories'], { filter: { weight: { $gte: 2 } } }],
      [['memories'], { filter: { kind: { $in: ['fact'] }, weight: { $ne: 1 } } }],
      [['memories'], { limit: 2, offset: 1 }],
    ] as const) {
      const a = await ours.search([...prefix], options)
      const b = await theirs.search([...prefix], options)
      // Without a query the order is each store's own: compare the sets (a page, by its size).
      expect(a, JSON.stringify([prefix, options])).toHaveLength(b.length)
      if (!('limit' in options)) expect(plain(byPlace(a))).toEqual(plain(byPlace(b)))
    }

    const query = await ours.search(['memories'], { query: 'which indentation does alice prefer, tabs or spaces', limit: 3 })
    const reference = await theirs.search(['memories'], { query: 'which indentation does alice prefer, tabs or spaces', limit: 3 })
    expect(query.map((i) => i.key)).toEqual(reference.map((i) => i.key))
    query.forEach((item, i) => expect(item.score).toBeCloseTo(reference[i]?.score ?? Number.NaN, 4))

    for (const options of [
      {},
      { prefix: ['memories'] },
      { suffix: ['alice'] },
      { prefix: ['memories', '*'], maxDepth: 2 },
      { maxDepth: 1 },
      { limit: 2, offset: 1 },
    ]) {
      expect(await ours.listNamespaces(options), JSON.stringify(options)).toEqual(await theirs.listNamespaces(options))
    }
  })

  it('updates in place keeping the first time, deletes, and keeps every revision in the kv store', async () => {
    await using memory = await openTestMemory({ embedder })
    const store = new EngramStore(memory, { scope: 'agent-store' })
    await store.put(['prefs'], 'theme', { value: 'dark' })
    const first = await store.get(['prefs'], 'theme')
    await store.put(['prefs'], 'theme', { value: 'light' })
    const second = await store.get(['prefs'], 'theme')
    expect(second?.value).toEqual({ value: 'light' })
    expect(second?.createdAt).toEqual(first?.createdAt)
    expect(second?.updatedAt.getTime()).toBeGreaterThanOrEqual(first?.updatedAt.getTime() ?? Infinity)
    await store.delete(['prefs'], 'theme')
    await store.delete(['prefs'], 'never-there')
    expect(await store.get(['prefs'], 'theme')).toBeNull()
    expect(await store.listNamespaces()).toEqual([])
    const revisions = await memory.kv.history('agent-store', '["prefs"]', 'theme')
    expect(revisions.map((r) => r.deleted)).toEqual([false, false, true])
    // LangGraph's own namespace rules hold.
    await expect(store.put([], 'k', {})).rejects.toThrow()
    await expect(store.put(['a.b'], 'k', {})).rejects.toThrow()
  })

  it('without a model, a query is ignored as an unindexed store ignores it', async () => {
    await using memory = await openTestMemory()
    const store = new EngramStore(memory)
    await store.put(['memories', 'alice'], 'tabs', { text: 'Alice prefers tabs' })
    const hits = await store.search(['memories'], { query: 'indentation' })
    expect(hits.map((h) => [h.key, h.score])).toEqual([['tabs', undefined]])
  })
})
