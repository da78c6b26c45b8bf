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
