/**
 * Every method of a memory's API by its path (`['memories', 'update']`), walking the
 * namespaces; `close` and `stopIndexing`, which end the memory or its background work, left out.
 */
export function apiMethods(api: object, path: readonly string[] = []): string[][] {
  return Object.entries(api).flatMap(([key, value]): string[][] => {
    if (key === 'close' || key === 'stopIndexing') return []
    if (typeof value === 'function') return [[...path, key]]
    if (value && typeof value === 'object' && !Array.isArray(value)) return apiMethods(value as object, [...path, key])
    return []
  })
}

/**
 * What an untyped caller might pass, as each call's arguments. Self-contained (no imports, no
 * outer names), so the browser sweep can run it in the page and get the same list there.
 */
export function garbageArguments(): unknown[][] {
  const circular: Record<string, unknown> = {}
  circular.self = circular
  return [
    [undefined],
    [42],
    [null],
    [[]],
    [{ bogus: true }],
    [circular],
    [Symbol('s')],
    [() => 1],
    [Number.NaN],
    [10n],
    [new Date('not a date')],
    [Object.create(null)],
    ['a\u0000b'],
    ['x', 42],
    ['x', null],
    ['x', { bogus: 1 }],
    ['x', { tenantId: 'a\u0000b' }],
    [{ conversationId: 'c\u0000' }],
    [{ scope: { conversationId: 'a\u0000b' } }],
    ['c0', { limit: -1 }],
    ['c0', { limit: 1e12 }],
    ['c0', { asOf: 'garbage' }],
    ['x', {}, null],
    ['x', {}, 42],
    ['save_memory', { content: 'a', category: 'fact' }, { tenantId: 5 }],
    // A payload in fourth place (kv.put, graph.putEdge) that is not JSON.
    ['x', 'y', 'z', circular],
    ['x', 'y', 'z', { n: 10n }],
    ['x', 'y', 'z', { s: 'half \uD800' }],
    ['x', 'y', 'z', undefined],
  ]
}

/**
 * Arguments nested far deeper than any input may be: an object 5,000 deep and an array
 * 100,000 deep, in each place an argument may take one. Self-contained, as `garbageArguments`.
 */
export function deepArguments(): unknown[][] {
  const nest = (depth: number, wrap: (inner: unknown) => unknown): unknown => {
    let value: unknown = 'x'
    for (let i = 0; i < depth; i++) value = wrap(value)
    return value
  }
  const deep = [nest(5_000, (inner) => ({ a: inner })), nest(100_000, (inner) => [inner])]
  return deep.flatMap((d) => [[d], ['x', d], ['save_memory', d], ['c0', {}, d], ['x', 'y', 'z', d]])
}
