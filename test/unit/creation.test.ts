import { createHash } from 'node:crypto'
import type { ChangeSet } from '@electric-sql/pglite/memfs-frontend'
import { describe, expect, it } from 'vitest'
import { splitLog, templateChanges } from '../../src/browser/storage/creation.ts'
import { templateBlob } from '../support/memory.ts'

/** A flush by its folders and files, each file by path, size and digest (deep equality on 11 MB of bytes is slow). */
function summary(changes: ChangeSet) {
  const file = (w: ChangeSet['files']['wal'][number]) => {
    const hash = createHash('sha256')
    for (const c of w.chunks) hash.update(c.data)
    return `${w.path} ${w.size} ${hash.digest('hex')}`
  }
  return { ops: changes.ops, wal: changes.files.wal.map(file), data: changes.files.data.map(file), control: changes.files.control.map(file) }
}

async function gzipped(blob: Blob): Promise<Blob> {
  return new Response(blob.stream().pipeThrough(new CompressionStream('gzip'))).blob()
}

describe("a new memory's template, as the flush that finishes a folder cut short", () => {
  it('holds every file whole, with its folder, plain or gzipped alike', async () => {
    const plain = await templateChanges(await templateBlob())
    const gzip = await templateChanges(await gzipped(await templateBlob()))
    expect(summary(gzip)).toEqual(summary(plain))

    const folders = new Set(plain.ops.map((op) => op.path))
    expect(plain.ops.every((op) => op.op === 'mkdir')).toBe(true)
    const files = [...plain.files.wal, ...plain.files.data, ...plain.files.control]
    for (const file of files) {
      expect(file).toMatchObject({ full: true, truncate: true })
      expect(file.chunks.reduce((n, c) => n + c.data.length, 0)).toBe(file.size)
      const parent = file.path.slice(0, file.path.lastIndexOf('/'))
      if (parent !== '' && !folders.has(parent)) throw new Error(`${file.path} comes without its folder`)
    }
    expect(files.map((f) => f.path)).toContain('/PG_VERSION')
    expect(plain.files.control.map((f) => f.path)).toEqual(['/global/pg_control'])
    // The template keeps the log segment in use and none of the spare ones after it.
    expect(plain.files.wal.map((f) => f.path)).toEqual([expect.stringMatching(/^\/pg_wal\/[0-9A-F]{24}$/)])
  })

  it('splits the first flush into the log, with its folders, and everything else', async () => {
    const changes = await templateChanges(await templateBlob())
    const { log, rest } = splitLog(changes)
    expect(log.files.wal).toBe(changes.files.wal)
    expect(log.files.data).toEqual([])
    expect(log.files.control).toEqual([])
    expect(log.ops.map((op) => op.path).sort()).toEqual(['/pg_wal', '/pg_wal/archive_status', '/pg_wal/summaries'])
    expect(rest.files.wal).toEqual([])
    expect(rest.files.data).toBe(changes.files.data)
    expect(rest.files.control).toBe(changes.files.control)
    expect([...log.ops, ...rest.ops]).toHaveLength(changes.ops.length)
    expect(rest.ops.some((op) => op.path.startsWith('/pg_wal'))).toBe(false)
  })
})
