import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { MemoryError } from '../../src/core/kernel/errors.ts'
import { realPath } from '../../src/node/realpath.ts'
import { openTestMemory } from '../support/memory.ts'
import {
  canonicalKeyOf,
  canonicalPath,
  canonicalUrl,
  normalizePosixPath,
  normalizeWorkspace,
} from '../../src/core/documents/paths.ts'

const local = { mode: 'local', root: '/work/app' } as const
const global = { mode: 'global' } as const

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return MemoryError.is(error) ? error.code : 'not a MemoryError'
  }
  return undefined
}

describe('normalizePosixPath', () => {
  it.each([
    ['/a/b/c', '/a/b/c'],
    ['/a/./b/../c/', '/a/c'],
    ['//a///b//', '/a/b'],
    ['/..', '/'],
    ['/../../a', '/a'],
    ['/', '/'],
    ['a/b/../c', 'a/c'],
    ['a/../../b', '../b'],
    ['../../x/./y', '../../x/y'],
    ['./', '.'],
    ['a/..', '.'],
    ['.', '.'],
    ['a/b/../../..', '..'],
    ['src/.hidden/../file.ts', 'src/file.ts'],
    ['a/.../b', 'a/.../b'],
    ['a\\b/../c', 'c'],
  ])('%s → %s', (input, expected) => {
    expect(normalizePosixPath(input)).toBe(expected)
  })
})

describe('canonicalPath in local mode', () => {
  it.each([
    ['README.md', 'README.md'],
    ['./src/../README.md', 'README.md'],
    ['src//auth.ts', 'src/auth.ts'],
    ['/work/app/src/auth.ts', 'src/auth.ts'],
    ['/work/app/./src/../src/auth.ts', 'src/auth.ts'],
    ['/work/app', '.'],
    ['/work/app/', '.'],
    ['.', '.'],
    ['src/..', '.'],
    ['lib/../lib/x.js', 'lib/x.js'],
  ])('%s → %s', (input, expected) => {
    expect(canonicalPath(input, local)).toBe(expected)
  })

  it.each([
    '../secrets.txt',
    'src/../../other/file',
    '/etc/passwd',
    '/work/application/file',
    '/work/app/../app2/x',
    '/work',
  ])('%s escapes the root → PATH_OUTSIDE_ROOT', (input) => {
    expect(codeOf(() => canonicalPath(input, local))).toBe('PATH_OUTSIDE_ROOT')
  })

  it('a root of / contains every absolute path', () => {
    expect(canonicalPath('/etc/hosts', { mode: 'local', root: '/' })).toBe('etc/hosts')
    expect(canonicalPath('../x', { mode: 'local', root: '/' })).toBe('x')
  })

  it('an empty path is INVALID_INPUT', () => {
    expect(codeOf(() => canonicalPath('', local))).toBe('INVALID_INPUT')
  })
})

describe('canonicalPath in global mode', () => {
  it.each([
    ['/home/u/p/src/auth.py', '/home/u/p/src/auth.py'],
    ['/home/u/p/./src/../src/auth.py', '/home/u/p/src/auth.py'],
    ['/home//u/', '/home/u'],
  ])('%s → %s', (input, expected) => {
    expect(canonicalPath(input, global)).toBe(expected)
  })

  it.each(['src/auth.py', './a', '~/notes.md'])('relative %s → INVALID_INPUT', (input) => {
    expect(codeOf(() => canonicalPath(input, global))).toBe('INVALID_INPUT')
  })
})

describe('canonicalUrl', () => {
  it.each([
    ['HTTPS://Example.COM:443/a/./b#top', 'https://example.com/a/b'],
    ['http://example.com:80/', 'http://example.com/'],
    ['http://example.com:8080/x', 'http://example.com:8080/x'],
    ['https://example.com/Path?b=2&a=1#frag', 'https://example.com/Path?b=2&a=1'],
    ['https://user:pw@example.com/x', 'https://example.com/x'],
    ['https://example.com/a/../b', 'https://example.com/b'],
    ['https://example.com', 'https://example.com/'],
    // RFC 3986, 6.2.2: escapes of unreserved characters decoded, others' hex uppercased.
    ['https://a.com/%7Efoo', 'https://a.com/~foo'],
    ['https://a.com/%7efoo', 'https://a.com/~foo'],
    ['https://a.com/a%2fb?q=%3d', 'https://a.com/a%2Fb?q=%3D'],
    ['https://a.com./x?', 'https://a.com/x'],
    ['HTTPS://Example.COM.:443/a/./%7eb?#top', 'https://example.com/a/~b'],
  ])('%s → %s', (input, expected) => {
    expect(canonicalUrl(input)).toBe(expected)
  })

  it('a URL is the same in both modes', () => {
    const url = 'https://Docs.Example.com/guide#intro'
    expect(canonicalKeyOf({ url }, local)).toEqual(canonicalKeyOf({ url }, global))
    expect(canonicalKeyOf({ url }, local)).toEqual({ keyKind: 'url', canonicalKey: 'https://docs.example.com/guide' })
  })

  it('a string that is not a URL is INVALID_INPUT', () => {
    expect(codeOf(() => canonicalUrl('not a url'))).toBe('INVALID_INPUT')
  })

  it('a file: URL is its path; a path that is a URL is refused', () => {
    expect(canonicalKeyOf({ url: 'file:///work/app/src/a%20b.ts' }, local)).toEqual({ keyKind: 'path', canonicalKey: 'src/a b.ts' })
    expect(canonicalKeyOf({ url: 'file:///tmp/x/../f.ts' }, global)).toEqual(canonicalKeyOf({ path: '/tmp/f.ts' }, global))
    expect(codeOf(() => canonicalKeyOf({ path: 'file:///work/app/a.ts' }, local))).toBe('INVALID_INPUT')
    expect(canonicalKeyOf({ url: 'mailto:x@y.com' }, global)).toEqual({ keyKind: 'url', canonicalKey: 'mailto:x@y.com' })
  })
})

describe('normalizeWorkspace', () => {
  it('defaults to global and normalises a local root', () => {
    expect(normalizeWorkspace(undefined)).toEqual({ mode: 'global' })
    expect(normalizeWorkspace({ mode: 'local', root: '/work/app/./' })).toEqual({ mode: 'local', root: '/work/app' })
  })

  it('refuses a relative root', () => {
    expect(codeOf(() => normalizeWorkspace({ mode: 'local', root: 'app' }))).toBe('INVALID_INPUT')
  })
})

describe('symlinks in Node', () => {
  it('a file reached through a symlink, a symlinked root or a deleted path under one is one document', async () => {
    const base = realpathSync(mkdtempSync(join(tmpdir(), 'engram-paths-')))
    try {
      mkdirSync(join(base, 'app', 'src'), { recursive: true })
      writeFileSync(join(base, 'app', 'src', 'index.ts'), 'export {}\n')
      symlinkSync(join(base, 'app'), join(base, 'app-link'))
      symlinkSync(join(base, 'app', 'src'), join(base, 'app', 'lib'))
      expect(realPath(join(base, 'app-link', 'lib', 'index.ts'))).toBe(join(base, 'app', 'src', 'index.ts'))
      expect(realPath(join(base, 'app-link', 'lib', 'gone', 'old.ts'))).toBe(join(base, 'app', 'src', 'gone', 'old.ts'))
      expect(realPath('/no-such-root/a.ts')).toBe('/no-such-root/a.ts')

      // The root is given through its link; the paths through either.
      await using memory = await openTestMemory({ workspace: { mode: 'local', root: join(base, 'app-link') } })
      const seen = async (path: string) =>
        (await memory.observeDocument({ path, content: 'export {}\n', conversationId: 'c1' })).canonicalKey
      expect(await seen(join(base, 'app', 'src', 'index.ts'))).toBe('src/index.ts')
      expect(await seen(join(base, 'app-link', 'lib', 'index.ts'))).toBe('src/index.ts')
      expect(await seen('lib/index.ts')).toBe('src/index.ts')
      expect(await seen(join(base, 'app', 'lib', 'gone.ts'))).toBe('src/gone.ts')
      expect((await memory.documents.get(join(base, 'app-link', 'lib', 'index.ts'))).canonicalKey).toBe('src/index.ts')

      // Kept as given when asked.
      await using plain = await openTestMemory({ workspace: { mode: 'local', root: join(base, 'app') }, resolveSymlinks: false })
      const kept = await plain.observeDocument({ path: join(base, 'app', 'lib', 'index.ts'), content: 'export {}\n', conversationId: 'c1' })
      expect(kept.canonicalKey).toBe('lib/index.ts')
      // Global mode resolves the absolute path.
      await using global = await openTestMemory()
      const g = await global.observeDocument({ path: join(base, 'app-link', 'src', 'index.ts'), content: 'x', conversationId: 'c1' })
      expect(g.canonicalKey).toBe(join(base, 'app', 'src', 'index.ts'))
      // `..` after a link leads to the target's parent, as the file system has it: lib/.. is app.
      const up = await global.observeDocument({ path: `${base}/app/lib/../src/index.ts`, content: 'x', conversationId: 'c1' })
      expect([up.canonicalKey, up.documentId]).toEqual([g.canonicalKey, g.documentId])
      expect(await seen(`${base}/app-link/lib/../src/index.ts`)).toBe('src/index.ts')
      expect(await seen('lib/../src/index.ts')).toBe('src/index.ts')
      // A link into a subfolder: its .. is the subfolder's parent, not the link's.
      symlinkSync(join(base, 'app', 'src'), join(base, 'deep'))
      expect((await global.observeDocument({ path: `${base}/deep/../src/index.ts`, content: 'x', conversationId: 'c1' })).canonicalKey).toBe(
        g.canonicalKey,
      )
    } finally {
      rmSync(base, { recursive: true, force: true })
    }
  })
})
