import { MemoryError } from '../kernel/errors.ts'

/** A token of Cypher text: a word, or one character of punctuation, at its offset. */
interface Token {
  text: string
  at: number
  depth: number
}

const WORD = /[A-Za-z_][A-Za-z0-9_]*/y

/**
 * The words and punctuation of `query` with their bracket depth, outside strings, quoted
 * names and comments. A quoted name (`` `a b` ``) is one token, so a name is never a keyword.
 */
function tokens(query: string): Token[] {
  const out: Token[] = []
  let depth = 0
  let i = 0
  while (i < query.length) {
    const c = query[i] as string
    if (c === "'" || c === '"' || c === '`') {
      const start = i
      i++
      while (i < query.length && query[i] !== c) i += query[i] === '\\' && c !== '`' ? 2 : 1
      if (i >= query.length) throw invalid(`a ${c === '`' ? 'quoted name' : 'string'} is not closed`)
      i++
      out.push({ text: query.slice(start, i), at: start, depth })
    } else if (query.startsWith('//', i)) {
      const end = query.indexOf('\n', i)
      i = end < 0 ? query.length : end
    } else if (query.startsWith('/*', i)) {
      const end = query.indexOf('*/', i + 2)
      if (end < 0) throw invalid('a comment is not closed')
      i = end + 2
    } else if (/\s/.test(c)) {
      i++
    } else {
      WORD.lastIndex = i
      const word = WORD.exec(query)
      if (word) {
        out.push({ text: word[0], at: i, depth })
        i += word[0].length
        continue
      }
      if (c === ')' || c === ']' || c === '}') depth--
      out.push({ text: c, at: i, depth })
      if (c === '(' || c === '[' || c === '{') depth++
      i++
    }
  }
  return out
}

/** A query this reader cannot make out; AGE's own parser may say more precisely why. */
export class UnreadableQuery extends MemoryError {
  constructor(message: string) {
    super('INVALID_INPUT', `Invalid Cypher query: ${message}.`)
  }
}

function invalid(message: string): MemoryError {
  return new UnreadableQuery(message)
}

/** Clauses that change a graph; a memory's graph is read-only. */
const WRITING = new Set(['CREATE', 'MERGE', 'SET', 'DELETE', 'DETACH', 'REMOVE', 'LOAD', 'CALL'])
/** What may follow a RETURN's values. */
const AFTER_RETURN = new Set(['ORDER', 'SKIP', 'LIMIT', 'UNION'])

/**
 * The names of the values `query` returns, in order, read from its last RETURN clause: an
 * alias after `AS`, else the expression's text. `INVALID_INPUT` for a query that writes, has
 * no RETURN, or returns `*` (its columns cannot be named before it runs).
 *
 * @example
 * returnedNames('MATCH (m:Memory) RETURN m.content AS text, count(*)') // → ['text', 'count(*)']
 */
export function returnedNames(query: string): string[] {
  const all = tokens(query)
  // A property (`n.set`) is not a clause.
  const writer = all.find((t, i) => WRITING.has(t.text.toUpperCase()) && all[i - 1]?.text !== '.')
  if (writer) {
    throw new MemoryError('INVALID_INPUT', `Cypher queries over a memory only read: ${writer.text.toUpperCase()} is refused.`, {
      details: { clause: writer.text.toUpperCase() },
    })
  }
  let start = -1
  for (let i = 0; i < all.length; i++) if (all[i]?.depth === 0 && all[i]?.text.toUpperCase() === 'RETURN') start = i + 1
  if (start < 0) throw invalid('it must end with a RETURN clause')
  if (all[start]?.text.toUpperCase() === 'DISTINCT') start++
  let end = start
  while (end < all.length) {
    const t = all[end] as Token
    if (t.depth === 0 && (AFTER_RETURN.has(t.text.toUpperCase()) || t.text === ';')) break
    end++
  }
  const items: Token[][] = [[]]
  for (const t of all.slice(start, end)) {
    if (t.depth === 0 && t.text === ',') items.push([])
    else items[items.length - 1]?.push(t)
  }
  return items.map((item) => {
    if (item.length === 0) throw invalid('a RETURN value is empty')
    if (item.length === 1 && item[0]?.text === '*') throw invalid('name the values it returns instead of RETURN *')
    const as = item.findIndex((t) => t.depth === 0 && t.text.toUpperCase() === 'AS')
    if (as >= 0 && as === item.length - 2) return unquote((item[as + 1] as Token).text)
    const first = item[0] as Token
    const last = item[item.length - 1] as Token
    return query.slice(first.at, last.at + last.text.length)
  })
}

const unquote = (name: string): string => (name.startsWith('`') ? name.slice(1, -1) : name)

/**
 * A dollar-quote tag that does not occur in `text`, so the text can sit between two of them
 * in a statement and never end the quote itself.
 */
export function dollarTag(text: string): string {
  for (let n = 0; ; n++) {
    const tag = `$cypher${n}$`
    if (!text.includes(tag)) return tag
  }
}

/** A node or relationship of a result, before its graph ids become the memory's ids. */
export interface GraphNode {
  id: number
  label: string
  properties: Record<string, unknown>
}
export interface GraphEdge extends GraphNode {
  start_id: number
  end_id: number
}

/** The key an annotated map is marked with while it is parsed (a character no agtype key holds). */
export const KIND_KEY = '\u0001kind'

/**
 * An agtype value as AGE writes it, read into plain values: maps, lists, strings, numbers,
 * booleans and null. A node (`{…}::vertex`) or relationship (`{…}::edge`) is marked with
 * `KIND_KEY`; a path (`[…]::path`) is the list of its nodes and relationships. NaN and the
 * infinities read as null.
 */
export function parseAgtype(text: string): unknown {
  const out: string[] = []
  const opens: number[] = []
  let lastOpen = -1
  let i = 0
  while (i < text.length) {
    const c = text[i] as string
    if (c === '"') {
      const start = i
      i++
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1
      i++
      out.push(text.slice(start, i))
    } else if (c === ':' && text[i + 1] === ':') {
      const m = /^::([a-z]+)/.exec(text.slice(i, i + 16))
      const kind = m?.[1] ?? ''
      if ((kind === 'vertex' || kind === 'edge') && lastOpen >= 0) out[lastOpen] = `{${JSON.stringify(KIND_KEY)}:"${kind}",`
      i += 2 + kind.length
    } else if (c === '{' || c === '[') {
      opens.push(out.length)
      out.push(c)
      i++
    } else if (c === '}' || c === ']') {
      lastOpen = opens.pop() ?? -1
      if (c === ']') lastOpen = -1
      out.push(c)
      i++
    } else {
      const m = /^-?(NaN|Infinity)/.exec(text.slice(i, i + 10))
      if (m) {
        out.push('null')
        i += m[0].length
      } else {
        out.push(c)
        i++
      }
    }
  }
  return JSON.parse(out.join(''))
}
