import type { ChangeSet, FileWrite } from '@electric-sql/pglite/memfs-frontend'
import { describe, expect, it } from 'vitest'
import { joinChunks, keptChanges, lengthWithoutZeros, noKeptWrites, planFlush, removalsLast, StoredPaths, withoutZeroTails } from '../../src/browser/storage/deferred-writes.ts'
import { isWalSegment, nextWalSegment } from '../../src/browser/storage/wal-segments.ts'

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

/** A storage as OPFS applies a flush to it: removals first (a path and all under it), then the writes. */
function applyFlush(storage: Map<string, number[]>, changes: ChangeSet): void {
  for (const op of changes.ops) {
    if (op.op !== 'remove') continue
    for (const path of [...storage.keys()]) if (path === op.path || path.startsWith(`${op.path}/`)) storage.delete(path)
  }
  for (const w of [...changes.files.wal, ...changes.files.data, ...changes.files.control]) storage.set(w.path, apply(storage.get(w.path) ?? [], w))
}

describe('withoutZeroTails: a whole file written without the zeros it ends with', () => {
  const segment = '/pg_wal/000000010000000000000002'
  // A new log segment: a few bytes of records, then zeros to its length.
  const whole = write(segment, 0, [7, 0, 9, ...Array<number>(40).fill(0)], { full: true, truncate: true })

  it('writes the bytes before the zeros and the length, and the file reads the same', () => {
    const sparse = withoutZeroTails(flush({ wal: [whole] }), () => false, 16)
    expect(sparse.ops).toEqual([])
    expect(sparse.files.wal).toEqual([{ path: segment, size: 43, full: false, truncate: true, chunks: [{ at: 0, data: Uint8Array.from([7, 0, 9]) }] }])
    const expected = new Map<string, number[]>()
    applyFlush(expected, flush({ wal: [whole] }))
    const stored = new Map<string, number[]>()
    applyFlush(stored, sparse)
    expect(stored).toEqual(expected)
  })

  it('removes a file that may exist first, so none of its old bytes stay', () => {
    const sparse = withoutZeroTails(flush({ wal: [whole] }), (path) => path === segment, 16)
    expect(sparse.ops).toEqual([{ op: 'remove', path: segment }])
    const old = Array<number>(60).fill(5)
    const expected = new Map([[segment, old]])
    applyFlush(expected, flush({ wal: [whole] }))
    const stored = new Map([[segment, old]])
    applyFlush(stored, sparse)
    expect(stored.get(segment)).toEqual(expected.get(segment))
    expect(stored.get(segment)).toHaveLength(43)
    // Without the removal the old bytes would show through the zeros.
    const unsafe = new Map([[segment, old]])
    applyFlush(unsafe, { ...sparse, ops: [] })
    expect(unsafe.get(segment)).not.toEqual(expected.get(segment))
  })

  it('leaves short zero tails and partial writes as they are; a file of zeros only is written as its length', () => {
    const short = write('/base/5/1', 0, [1, 2, ...Array<number>(10).fill(0)], { full: true, truncate: true })
    const partial = write('/base/5/2', 8, Array<number>(40).fill(0))
    const changes = flush({ data: [short, partial] })
    expect(withoutZeroTails(changes, () => true, 16).files.data).toEqual([short, partial])
    const zeros = write('/base/5/3', 0, Array<number>(32).fill(0), { full: true, truncate: true })
    expect(withoutZeroTails(flush({ data: [zeros] }), () => false, 16).files.data).toEqual([
      { path: '/base/5/3', size: 32, full: false, truncate: true, chunks: [] },
    ])
  })

  it('drops removals of paths the storage does not hold, and keeps the others', () => {
    const ops: ChangeSet['ops'] = [
      { op: 'remove', path: '/pg_wal/xlogtemp.42' },
      { op: 'remove', path: '/base/5/9' },
      { op: 'mkdir', path: '/base/6' },
    ]
    expect(withoutZeroTails(flush({}, ops), (path) => path === '/base/5/9').ops).toEqual(ops.slice(1))
  })

  it('the 1 MiB segment a turn switches to becomes a few KiB to write', () => {
    const data = new Uint8Array(2 ** 20)
    data.fill(3, 0, 5000)
    const sparse = withoutZeroTails(flush({ wal: [{ path: segment, size: data.length, full: true, truncate: true, chunks: [{ at: 0, data }] }] }), () => false)
    expect(sparse.files.wal[0]?.chunks[0]?.data.length).toBe(5000)
    expect(sparse.files.wal[0]?.size).toBe(2 ** 20)
  })
})

describe('joinChunks: kept chunks as the fewest writes that leave the same bytes', () => {
  /** The bytes chunks leave in a file of `size` zeros, written in order. */
  const bytesOf = (chunks: readonly { at: number; data: Uint8Array }[], size: number) => {
    const out = new Array<number>(size).fill(0)
    for (const { at, data } of chunks) data.forEach((b, i) => (out[at + i] = b))
    return out
  }

  it('leaves the bytes the writes in turn leave, one chunk per run of touching or overlapping writes', () => {
    let seed = 7
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    for (let round = 0; round < 400; round++) {
      const writes = Array.from({ length: 1 + random(8) }, (_, k) => {
        const at = random(40)
        return { at, data: Uint8Array.from({ length: random(12) }, () => 1 + ((round * 8 + k) % 250)) }
      })
      const joined = joinChunks(writes)
      expect(bytesOf(joined, 60)).toEqual(bytesOf(writes, 60))
      // In order of offset, and neither touching nor overlapping one another.
      for (let i = 1; i < joined.length; i++) expect(joined[i]!.at).toBeGreaterThan(joined[i - 1]!.at + joined[i - 1]!.data.length)
      const covered = new Set(writes.flatMap(({ at, data }) => Array.from({ length: data.length }, (_, i) => at + i)))
      expect(joined.reduce((n, c) => n + c.data.length, 0)).toBe(covered.size)
    }
  })

  it("a file's pages added flush after flush are written as one chunk", () => {
    let kept = noKeptWrites()
    for (let n = 0; n < 300; n++) {
      const plan = planFlush(kept, flush({ data: [write('/base/5/100', 8192 * n, Array<number>(8192).fill(n % 200))] }), { bytes: 2 ** 30, files: 32 })
      if (plan.kind !== 'keep') throw new Error('expected keep')
      kept = plan.kept
    }
    expect(kept.files.get('/base/5/100')?.chunks).toHaveLength(300)
    const [file] = keptChanges(kept).files.data
    expect(file?.chunks).toHaveLength(1)
    expect(file?.chunks[0]?.data.length).toBe(300 * 8192)
    expect(file?.chunks[0]?.data[8192 * 299]).toBe(299 % 200)
  })
})

describe('lengthWithoutZeros: where the trailing zeros begin', () => {
  it('matches a byte-by-byte count at every alignment, length and last non-zero byte', () => {
    const slow = (d: Uint8Array) => {
      let end = d.length
      while (end > 0 && d[end - 1] === 0) end--
      return end
    }
    const buffer = new Uint8Array(64)
    for (let offset = 0; offset < 5; offset++) {
      for (let length = 0; length + offset <= 40; length++) {
        for (let last = -1; last < length; last++) {
          buffer.fill(0)
          const view = buffer.subarray(offset, offset + length)
          view.fill(1, 0, Math.max(0, last - 2))
          if (last >= 0) view[last] = 200
          expect(lengthWithoutZeros(view), `offset ${offset}, length ${length}, last ${last}`).toBe(slow(view))
        }
      }
    }
    // Bytes after the view do not count.
    buffer.fill(9)
    expect(lengthWithoutZeros(new Uint8Array(buffer.buffer, 8, 0))).toBe(0)
  })
})

describe('nextWalSegment: the segment Postgres writes after one', () => {
  it('counts segments up within a log, in upper-case hex', () => {
    expect(nextWalSegment('/pg_wal/000000010000000000000009', 2 ** 20)).toBe('/pg_wal/00000001000000000000000A')
    expect(nextWalSegment('/pg_wal/0000000100000003000000FF', 2 ** 20)).toBe('/pg_wal/000000010000000300000100')
  })

  it("moves to the next log once a log's 4 GiB are used, by the segment length", () => {
    // 1 MiB segments: 4,096 a log; 16 MiB: 256.
    expect(nextWalSegment('/pg_wal/000000010000000000000FFF', 2 ** 20)).toBe('/pg_wal/000000010000000100000000')
    expect(nextWalSegment('/pg_wal/000000010000000000000FFE', 2 ** 20)).toBe('/pg_wal/000000010000000000000FFF')
    expect(nextWalSegment('/pg_wal/0000000200000007000000FF', 2 ** 24)).toBe('/pg_wal/000000020000000800000000')
  })

  it('has none for other files, lengths that do not divide 4 GiB, or after the last log', () => {
    expect(nextWalSegment('/pg_wal/xlogtemp.42', 2 ** 20)).toBeUndefined()
    expect(nextWalSegment('/base/5/1259', 2 ** 20)).toBeUndefined()
    expect(nextWalSegment('/pg_wal/000000010000000000000001', 3 * 2 ** 20)).toBeUndefined()
    expect(nextWalSegment('/pg_wal/000000010000000000000001', 0)).toBeUndefined()
    expect(nextWalSegment('/pg_wal/00000001FFFFFFFF00000FFF', 2 ** 20)).toBeUndefined()
    expect(isWalSegment('/pg_wal/000000010000000000000001')).toBe(true)
    expect(isWalSegment('/pg_wal/archive_status/000000010000000000000001.done')).toBe(false)
  })
})

describe('StoredPaths: what the storage holds, erring towards "exists"', () => {
  const whole = (path: string) => write(path, 0, [1, ...Array<number>(40).fill(0)], { full: true, truncate: true })
  const removals = async (stored: StoredPaths, changes: ChangeSet) => {
    let written: ChangeSet | undefined
    await stored.write(changes, async (sparse) => {
      written = sparse
    })
    return written?.ops ?? []
  }

  it('follows listings, writes and removals, folders included', async () => {
    const stored = new StoredPaths()
    stored.add('/base')
    stored.add('/base/5')
    stored.add('/base/5/1')
    expect(stored.has('/base/5')).toBe(true)
    expect(stored.has('/base/5/1')).toBe(true)
    expect(stored.has('/base/6')).toBe(false)
    // Removing a folder removes what is under it.
    expect(await removals(stored, flush({}, [{ op: 'remove', path: '/base/5' }]))).toEqual([{ op: 'remove', path: '/base/5' }])
    expect(stored.has('/base/5/1')).toBe(false)
    expect(await removals(stored, flush({}, [{ op: 'remove', path: '/base/5/1' }]))).toEqual([])
    // Made again in one flush after its removal: it exists.
    await removals(stored, flush({ data: [write('/base/5/1', 0, [1])] }, [{ op: 'remove', path: '/base/5' }, { op: 'mkdir', path: '/base/5' }]))
    expect(stored.has('/base/5')).toBe(true)
    expect(stored.has('/base/5/1')).toBe(true)
  })

  it('a flush that fails keeps its removed paths and counts its written ones as stored', async () => {
    const stored = new StoredPaths()
    stored.add('/base/5/1')
    const failing = flush({ data: [whole('/base/5/2')] }, [{ op: 'remove', path: '/base/5/1' }])
    await expect(stored.write(failing, () => Promise.reject(new Error('disk full')))).rejects.toThrow('disk full')
    expect(stored.has('/base/5/1')).toBe(true)
    expect(stored.has('/base/5/2')).toBe(true)
  })
})

describe('removalsLast: a checkpoint removes old log segments only after pg_control', () => {
  const control = write('/global/pg_control', 0, [7])
  const next = write('/pg_wal/000000010000000000000003', 0, [2], { full: true, size: 1 })

  it('a segment the checkpoint no longer needs is removed after pg_control is written', () => {
    const old = { op: 'remove' as const, path: '/pg_wal/000000010000000000000001' }
    const { files, ops } = flush({ wal: [next], control: [control] }, [old])
    expect(removalsLast(ops, files)).toEqual({ ops: [], last: [old] })
  })

  it('a removal before a write of the same path, or of a path under it, stays first', () => {
    const again = { op: 'remove' as const, path: next.path }
    const folder = { op: 'remove' as const, path: '/base/5' }
    const made = { op: 'mkdir' as const, path: '/base/6' }
    const data = write('/base/5/1', 0, [1])
    const { files, ops } = flush({ wal: [next], data: [data], control: [control] }, [again, folder, made])
    expect(removalsLast(ops, files)).toEqual({ ops: [again, folder, made], last: [] })
  })

  it('keeps the order of each part', () => {
    const a = { op: 'remove' as const, path: '/pg_wal/000000010000000000000001' }
    const b = { op: 'remove' as const, path: next.path }
    const c = { op: 'remove' as const, path: '/pg_wal/000000010000000000000002' }
    const { files, ops } = flush({ wal: [next] }, [a, b, c])
    expect(removalsLast(ops, files)).toEqual({ ops: [b], last: [a, c] })
  })
})
