import { readFile } from 'node:fs/promises'
import { expect, inject, test } from 'vitest'

/** The names of a plain (ustar) tar's entries. */
function tarNames(tar: Uint8Array): string[] {
  const names: string[] = []
  const text = new TextDecoder()
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512)
    if (header.every((b) => b === 0)) break
    const field = (from: number, length: number) => text.decode(header.subarray(from, from + length)).replace(/\0.*$/s, '')
    const prefix = field(345, 155)
    names.push(prefix ? `${prefix}/${field(0, 100)}` : field(0, 100))
    const size = parseInt(field(124, 12).trim() || '0', 8)
    at += 512 + Math.ceil(size / 512) * 512
  }
  return names
}

test('the template keeps one log segment, none recycled for later', async () => {
  const names = tarNames(new Uint8Array(await readFile(inject('templateDataDir'))))
  expect(names.some((n) => n.endsWith('/PG_VERSION'))).toBe(true)
  const segments = names.filter((n) => /pg_wal\/[0-9A-F]{24}$/.test(n))
  expect(segments).toHaveLength(1)
})
