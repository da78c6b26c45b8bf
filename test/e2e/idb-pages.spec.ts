import { expect, test } from '@playwright/test'
import { openHarness } from './support.ts'

// The IndexedDB page store (src/browser/storage/idb-pages.ts) driven directly with the change sets
// PGlite's in-memory file system hands it, in real Chromium IndexedDB.

test('idb pages: whole, partial, straddling and shrinking writes read back byte for byte', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const { IdbPageBackend } = window.engramIdbPages
    const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 251)
    const empty = { ops: [] as { op: 'mkdir' | 'remove'; path: string }[], files: { wal: [], data: [], control: [] } }
    const write = (path: string, size: number, chunks: { at: number; data: Uint8Array }[], flags: { full?: boolean; truncate?: boolean } = {}) =>
      ({ path, size, full: flags.full ?? false, truncate: flags.truncate ?? flags.full ?? false, chunks })
    const load = async (backend: InstanceType<typeof IdbPageBackend>) => {
      const out: { kind: string; path: string; data?: number[] }[] = []
      for await (const entry of backend.load()) out.push(entry.kind === 'dir' ? entry : { kind: 'file', path: entry.path, data: [...entry.data] })
      return out
    }

    const backend = new IdbPageBackend('engram-pages-test')
    await backend.init()
    // A new directory: folders and a 20,000-byte file written whole (three pages, the last short).
    const original = bytes(20_000, 1)
    await backend.apply(
      {
        ops: [
          { op: 'mkdir', path: '/base' },
          { op: 'mkdir', path: '/base/5' },
        ],
        files: { wal: [], data: [write('/base/5/100', 20_000, [{ at: 0, data: original }], { full: true })], control: [] },
      },
      { relaxedDurability: false },
    )
    // Unaligned writes: inside one page, across a page boundary, and past the old end.
    const expected = new Uint8Array(24_000)
    expected.set(original)
    const patches = [
      { at: 100, data: bytes(200, 7) },
      { at: 8_100, data: bytes(300, 9) },
      { at: 19_990, data: bytes(4_010, 11) },
    ]
    for (const patch of patches) expected.set(patch.data, patch.at)
    await backend.apply({ ...empty, files: { wal: [], data: [write('/base/5/100', 24_000, patches, { truncate: true })], control: [] } }, {
      relaxedDurability: false,
    })
    const grown = await load(backend)

    // Shrunk to 9,000 bytes, then grown to 12,000 without writing: the bytes past 9,000 read as zeros.
    await backend.apply({ ...empty, files: { wal: [], data: [write('/base/5/100', 9_000, [], { truncate: true })], control: [] } }, {
      relaxedDurability: false,
    })
    await backend.apply({ ...empty, files: { wal: [], data: [write('/base/5/100', 12_000, [], { truncate: true })], control: [] } }, {
      relaxedDurability: false,
    })
    const regrown = await load(backend)
    await backend.close()

    // Reopened: the same bytes.
    const reopened = new IdbPageBackend('engram-pages-test')
    await reopened.init()
    const again = await load(reopened)
    await reopened.close()
    const afterShrink = new Uint8Array(12_000)
    afterShrink.set(expected.subarray(0, 9_000))
    return { grown, expected: [...expected], regrown, again, afterShrink: [...afterShrink] }
  })
  expect(outcome.grown.map((e) => `${e.kind}:${e.path}`)).toEqual(['dir:/base', 'dir:/base/5', 'file:/base/5/100'])
  expect(outcome.grown[2]!.data).toEqual(outcome.expected)
  expect(outcome.regrown[2]!.data).toEqual(outcome.afterShrink)
  expect(outcome.again).toEqual(outcome.regrown)
})

test('idb pages: removing a folder removes what is under it, and a flush that fails leaves nothing of itself', async ({ page }) => {
  await openHarness(page)
  const outcome = await page.evaluate(async () => {
    const { IdbPageBackend } = window.engramIdbPages
    type Changes = Parameters<InstanceType<typeof IdbPageBackend>['apply']>[0]
    const file = (path: string, n: number) => ({ path, size: n, full: true, truncate: true, chunks: [{ at: 0, data: new Uint8Array(n).fill(7) }] })
    const paths = async (backend: InstanceType<typeof IdbPageBackend>) => {
      const out: string[] = []
      for await (const entry of backend.load()) out.push(`${entry.kind}:${entry.path}${entry.kind === 'file' ? `:${entry.data.length}` : ''}`)
      return out
    }
    const backend = new IdbPageBackend('engram-pages-remove')
    await backend.init()
    await backend.apply(
      {
        ops: [
          { op: 'mkdir', path: '/base' },
          { op: 'mkdir', path: '/base/5' },
          { op: 'mkdir', path: '/base/50' },
        ],
        files: { wal: [], data: [file('/base/5/1', 9_000), file('/base/5/2', 100), file('/base/50/1', 10)], control: [] },
      },
      { relaxedDurability: false },
    )
    // '/base/5' goes, '/base/50' (its name starts the same) stays.
    await backend.apply({ ops: [{ op: 'remove', path: '/base/5' }], files: { wal: [], data: [], control: [] } }, {
      relaxedDurability: false,
    })
    const afterRemove = await paths(backend)
    // Nothing of the removed files is left in storage either.
    const storedPages = await new Promise<number>((resolve, reject) => {
      const open = indexedDB.open('engram-pages-remove')
      open.onerror = () => reject(open.error ?? new Error('open failed'))
      open.onsuccess = () => {
        const req = open.result.transaction('pages').objectStore('pages').count()
        req.onsuccess = () => {
          resolve(req.result)
          open.result.close()
        }
        req.onerror = () => reject(req.error ?? new Error('count failed'))
      }
    })

    // A flush whose second file cannot be written: its first file is not kept either.
    let failed = ''
    try {
      await backend.apply(
        {
          ops: [{ op: 'mkdir', path: '/global' }],
          files: {
            wal: [],
            data: [file('/global/1', 50), { path: '/global/2', size: 10, full: true, truncate: true, chunks: [{ at: 0, data: undefined }] }],
            control: [],
          },
        } as unknown as Changes,
        { relaxedDurability: false },
      )
    } catch (error) {
      failed = (error as Error).name
    }
    const afterFailure = await paths(backend)
    await backend.close()
    return { afterRemove, storedPages, failed, afterFailure }
  })
  expect(outcome.afterRemove).toEqual(['dir:/base', 'dir:/base/50', 'file:/base/50/1:10'])
  expect(outcome.storedPages).toBe(1)
  expect(outcome.failed).toBe('TypeError')
  expect(outcome.afterFailure).toEqual(outcome.afterRemove)
})
