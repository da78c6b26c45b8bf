import { MemoryError } from '../kernel/errors.ts'
import { redact } from '../privacy/redact.ts'
import { MAX_DOCUMENT_KEY_BYTES, utf8Length } from '../kernel/limits.ts'
import type { PathResolver, Workspace } from '../kernel/engine-context.ts'

export type { PathResolver, Workspace }


export interface CanonicalKey {
  keyKind: 'path' | 'url'
  canonicalKey: string
}

/**
 * Normalises a POSIX path with string operations only (no file system, so it runs in
 * browsers): collapses repeated slashes, drops `.` segments and trailing slashes, resolves
 * `..` lexically. An absolute path never climbs above `/`; a relative one keeps leading
 * `..` segments. Symlinks are not resolved here; see `PathResolver`.
 *
 * @example
 * normalizePosixPath('/a/./b/../c/') // → '/a/c'
 * normalizePosixPath('a/../../b')    // → '../b'
 */
export function normalizePosixPath(path: string): string {
  const absolute = path.startsWith('/')
  const out: string[] = []
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue
    if (segment === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop()
      else if (!absolute) out.push('..')
      continue
    }
    out.push(segment)
  }
  if (absolute) return `/${out.join('/')}`
  return out.length === 0 ? '.' : out.join('/')
}


/**
 * The canonical identity of a file path under a workspace. Local: relative to the root
 * (`.` is the root itself); a path that leaves the root is PATH_OUTSIDE_ROOT. Global: the
 * normalised absolute path; a relative path is INVALID_INPUT.
 *
 * @example
 * canonicalPath('/work/app/src/../README.md', { mode: 'local', root: '/work/app' }) // → 'README.md'
 *
 * With `resolvePath`, the absolute path is resolved before it is made relative (the root is
 * expected resolved the same way).
 */
export function canonicalPath(path: string, workspace: Workspace, resolvePath?: PathResolver): string {
  if (path.length === 0) throw new MemoryError('INVALID_INPUT', 'A document path must not be empty')
  // With a resolver, `..` is resolved by the file system (a link's `..` is its target's
  // parent); without one, as text.
  const resolved = (absolute: string) => normalizePosixPath(resolvePath ? resolvePath(absolute) : absolute)
  if (workspace.mode === 'global') {
    if (!path.startsWith('/')) {
      throw new MemoryError(
        'INVALID_INPUT',
        `Document path "${path}" is relative, but this memory is global: give an absolute path`,
        { details: { path } },
      )
    }
    return resolved(path)
  }
  const root = workspace.root
  const absolute = resolved(path.startsWith('/') ? path : `${root}/${path}`)
  if (absolute === root) return '.'
  const prefix = root === '/' ? '/' : `${root}/`
  if (!absolute.startsWith(prefix)) {
    throw new MemoryError('PATH_OUTSIDE_ROOT', `Document path "${path}" is outside the project root ${root}`, {
      details: { path, root },
    })
  }
  return absolute.slice(prefix.length)
}

/** Validates and normalises a local workspace root: absolute, no trailing slash. */
export function normalizeWorkspace(workspace: Workspace | undefined): Workspace {
  if (workspace === undefined || workspace.mode === 'global') return { mode: 'global' }
  if (!workspace.root.startsWith('/')) {
    throw new MemoryError('INVALID_INPUT', `A local workspace root must be an absolute path, got "${workspace.root}"`)
  }
  return { mode: 'local', root: normalizePosixPath(workspace.root) }
}

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21' }

/**
 * The canonical form of a URL (RFC 3986, 6.2.2): scheme and host lowercased, a host's
 * trailing dot, the default port, fragment, credentials and an empty query dropped, dot
 * segments resolved, escapes of unreserved characters decoded (`%7E` is `~`) and the others'
 * hex uppercased; the query's order and values are kept.
 *
 * @example
 * canonicalUrl('HTTPS://Example.COM.:443/a/./%7eb?#top') // → 'https://example.com/a/~b'
 */
export function canonicalUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch (cause) {
    throw new MemoryError('INVALID_INPUT', `"${url}" is not an absolute URL`, { cause, details: { url } })
  }
  parsed.hash = ''
  parsed.username = ''
  parsed.password = ''
  if (DEFAULT_PORTS[parsed.protocol] === parsed.port) parsed.port = ''
  if (parsed.hostname.endsWith('.') && parsed.hostname.length > 1) parsed.hostname = parsed.hostname.slice(0, -1)
  if (parsed.search === '') parsed.search = ''
  return parsed.toString().replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16))
    return /[A-Za-z0-9\-._~]/.test(c) ? c : `%${hex.toUpperCase()}`
  })
}

/** A string that begins with a URL scheme (`https:`, `mailto:`, `file:`…), two letters or more. */
export const URL_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]+:/
/** A URL with an authority (`scheme://`), which no path begins with. */
const URL_WITH_AUTHORITY = new RegExp(`${URL_SCHEME.source}//`)

/** A `file:` URL's path, decoded: the file it names is a path, like any other. */
function fileUrlPath(url: string): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  if (parsed.protocol !== 'file:' || (parsed.host !== '' && parsed.host !== 'localhost')) return undefined
  try {
    return decodeURIComponent(parsed.pathname)
  } catch {
    return undefined
  }
}

/**
 * The canonical key of a document given by path or URL. A `file:` URL is its path. Other URLs
 * pass through `redact` (a query string may carry a token), so URLs that differ only in a
 * secret name one document; paths are identities and are kept as they are.
 */
export function canonicalKeyOf(
  ref: { path?: string | undefined; url?: string | undefined },
  workspace: Workspace,
  resolvePath?: PathResolver,
): CanonicalKey {
  const key = keyOf(ref, workspace, resolvePath)
  const bytes = utf8Length(key.canonicalKey)
  if (bytes > MAX_DOCUMENT_KEY_BYTES) {
    throw new MemoryError(
      'INVALID_INPUT',
      `A document's ${key.keyKind} is ${bytes} bytes once canonical; the limit is ${MAX_DOCUMENT_KEY_BYTES} (MAX_DOCUMENT_KEY_BYTES)`,
      { details: { field: key.keyKind } },
    )
  }
  return key
}

function keyOf(
  ref: { path?: string | undefined; url?: string | undefined },
  workspace: Workspace,
  resolvePath?: PathResolver,
): CanonicalKey {
  if (ref.url !== undefined) {
    const file = fileUrlPath(ref.url)
    if (file !== undefined) return { keyKind: 'path', canonicalKey: canonicalPath(file, workspace, resolvePath) }
    return { keyKind: 'url', canonicalKey: redact(canonicalUrl(ref.url)).text }
  }
  if (ref.path !== undefined) {
    if (URL_WITH_AUTHORITY.test(ref.path)) {
      throw new MemoryError('INVALID_INPUT', `Document path "${ref.path}" is a URL: give it as url`, { details: { path: ref.path } })
    }
    return { keyKind: 'path', canonicalKey: canonicalPath(ref.path, workspace, resolvePath) }
  }
  throw new MemoryError('INVALID_INPUT', 'A document needs a path or a url')
}
