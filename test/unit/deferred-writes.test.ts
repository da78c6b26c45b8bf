import type { ChangeSet, FileWrite } from '@electric-sql/pglite/memfs-frontend'
import { describe, expect, it } from 'vitest'
import { keptChanges, noKeptWrites, planFlush } from '../../src/worker/deferred-writes.ts'

const write = (path: string, at: number, bytes: number[], extra: Partial<FileWrite> = {}): FileWrite => ({
  path,
  size: at + bytes.length,
  full: false,
  truncate: false,
  chunks: [{ at, data: Uint8Array.from(bytes) }],
  ...extra,
})
const flush = (files: Partial<ChangeSet['files']>, ops: ChangeSet['ops'] = []): ChangeSet => ({
  ops,
  files: { wal: [], data: [], control: [], ...files },
})
const wal = write('/pg_wal/000000010000000000000001', 0, [1])

/** The bytes a file ends with after its writes are applied in order (as the OPFS writer does). */
function apply(file: number[], w: FileWrite): number[] {
  let out = w.truncate ? file.slice(0, w.size).concat(Array<number>(Math.max(0, w.size - file.length)).fill(0)) : [...file]
  for (const c of w.chunks) {
    while (out.length < c.at) out.push(0)
    out = [...out.slice(0, c.at), ...c.data, ...out.slice(c.at + c.data.length)]
  }
  return out
}

describe('planFlush: data-file writes kept back until the log needs them on disk', () => {
  it('a commit writes its WAL now and keeps the data files back, merged per file in order', () => {
    let kept = noKeptWrites()
    const writes = [write('/base/5/100', 0, [1, 2, 3, 4]), write('/base/5/100', 2, [9]), write('/base/5/200', 0, [7])]
    const first = planFlush(kept, flush({ wal: [wal], data: writes.slice(0, 1) }))
    expect(first.kind).toBe('keep')
    if (first.kind !== 'keep') return
    expect(first.now.files).toEqual({ wal: [wal], data: [], control: [] })
    kept = first.kept
    const second = planFlush(kept, flush({ wal: [wal], data: writes.slice(1) }))
    if (second.kind !== 'keep') throw new Error('expected keep')
    kept = second.kept
    expect([...kept.files.keys()]).toEqual(['/base/5/100', '/base/5/200'])
    // The merged write leaves each file as its writes one by one would.
    const merged = kept.files.get('/base/5/100')!
    expect(apply([], merged)).toEqual(apply(apply([], writes[0]!), writes[1]!))
    expect(kept.bytes).toBe(6)
    expect(keptChanges(kept).files.data).toHaveLength(2)
  })

  it('a flush that writes pg_control (a checkpoint, the shutdown) writes everything kept first', () => {
    const kept = planFlush(noKeptWrites(), flush({ wal: [wal], data: [write('/base/5/100', 0, [1])] }))
    if (kept.kind !== 'keep') throw new Error('expected keep')
    const checkpoint = planFlush(kept.kept, flush({ wal: [wal], data: [write('/base/5/300', 0, [3])], control: [write('/global/pg_control', 0, [5])] }))
    expect(checkpoint.kind).toBe('all')
    expect([...checkpoint.kept.files.keys()]).toEqual(['/base/5/100'])
  })

  it('a removed file or folder loses its kept writes', () => {
    const a = planFlush(noKeptWrites(), flush({ data: [write('/base/5/100', 0, [1]), write('/base/6/1', 0, [1]), write('/base/5/1000', 0, [1])] }))
    if (a.kind !== 'keep') throw new Error('expected keep')
    const b = planFlush(a.kept, flush({ wal: [wal] }, [{ op: 'remove', path: '/base/5/100' }, { op: 'remove', path: '/base/6' }]))
    if (b.kind !== 'keep') throw new Error('expected keep')
    expect([...b.kept.files.keys()]).toEqual(['/base/5/1000'])
    expect(b.now.ops).toHaveLength(2)
  })

  it('a whole-file write replaces what was kept; a resize of a kept file writes everything first', () => {
    const a = planFlush(noKeptWrites(), flush({ data: [write('/base/5/100', 0, [1, 2, 3])] }))
    if (a.kind !== 'keep') throw new Error('expected keep')
    const whole = write('/base/5/100', 0, [8], { full: true, truncate: true, size: 1 })
    const b = planFlush(a.kept, flush({ data: [whole] }))
    if (b.kind !== 'keep') throw new Error('expected keep')
    expect(b.kept.files.get('/base/5/100')).toEqual(whole)
    const shrink = write('/base/5/100', 0, [], { truncate: true, size: 0 })
    const c = planFlush(b.kept, flush({ data: [write('/base/5/900', 0, [4]), shrink] }))
    expect(c.kind).toBe('all')
    // Only what earlier flushes kept goes first; this flush's writes follow its own log.
    expect([...c.kept.files.values()]).toEqual([whole])
  })

  it('past the bounds on files or bytes, everything is written', () => {
    const a = planFlush(noKeptWrites(), flush({ data: [write('/base/5/1', 0, [1, 2]), write('/base/5/2', 0, [1])] }), { bytes: 100, files: 2 })
    expect(a.kind).toBe('keep')
    if (a.kind !== 'keep') return
    const files = planFlush(a.kept, flush({ data: [write('/base/5/3', 0, [1])] }), { bytes: 100, files: 2 })
    expect(files.kind).toBe('all')
    expect([...files.kept.files.keys()]).toEqual(['/base/5/1', '/base/5/2'])
    const bytes = planFlush(a.kept, flush({ data: [write('/base/5/1', 0, [1, 2, 3])] }), { bytes: 5, files: 2 })
    expect(bytes.kind).toBe('all')
    expect(bytes.kept.files.get('/base/5/1')?.chunks).toHaveLength(1)
    expect(a.kept.files.get('/base/5/1')?.chunks).toHaveLength(1) // the kept writes passed in are not changed
  })
})
