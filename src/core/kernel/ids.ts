import { typeid } from 'typeid-js'

/** Every row id says what it points at and sorts by creation time (UUIDv7 inside). */
export const ID_PREFIXES = {
  event: 'evt',
  chunk: 'chk',
  artifact: 'art',
  document: 'doc',
  version: 'ver',
  edge: 'edg',
  memory: 'mem',
  memoryHistory: 'mhi',
  context: 'ctx',
  kv: 'kvr',
  node: 'nod',
  forget: 'fgt',
  archive: 'arc',
  /** A device that syncs with a server memory. */
  device: 'dev',
  /** An Active Context Bundle, as `buildContext` names each one it builds. */
  bundle: 'acb',
} as const

export type IdKind = keyof typeof ID_PREFIXES

export function newId(kind: IdKind): string {
  return typeid(ID_PREFIXES[kind]).toString()
}

/** The kind of row an id points at, or undefined for a foreign id. */
export function kindOfId(id: string): IdKind | undefined {
  const prefix = id.slice(0, id.lastIndexOf('_'))
  for (const [kind, p] of Object.entries(ID_PREFIXES)) if (p === prefix) return kind as IdKind
  return undefined
}

const SUFFIX = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/

/** Whether `id` is one `newId(kind)` makes: the kind's prefix, `_`, and a UUIDv7 in base32. */
export function isIdOf(kind: IdKind, id: string): boolean {
  const prefix = `${ID_PREFIXES[kind]}_`
  return id.startsWith(prefix) && SUFFIX.test(id.slice(prefix.length))
}
