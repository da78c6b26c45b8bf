import type { ChangeSet, FileWrite } from '@electric-sql/pglite/memfs-frontend'

/**
 * Data-file writes a flush may keep back. Postgres needs only its write-ahead log on disk for
 * a commit to be durable: after a crash it replays the log from the last checkpoint (full-page
 * images included), extending and rewriting data files as it goes. The data files themselves
 * must be complete only before a checkpoint is recorded in `pg_control`, which is what a
 * server's checkpoint guarantees by syncing them first. So a flush that commits writes its
 * WAL at once and may keep the data files' bytes back until a flush that touches `pg_control`
 * (a checkpoint, or the shutdown), the close, an idle moment, or the bounds below.
 */
export interface KeptWrites {
  /** By path, in the order first kept; each the merge of its flushes, written in order. */
  files: Map<string, FileWrite>
  bytes: number
}

/** Most bytes kept back before a flush writes them all. */
export const MAX_KEPT_BYTES = 8 * 2 ** 20
/** Most files kept back before a flush writes them all. */
export const MAX_KEPT_FILES = 32

/**
 * The bounds while a new memory's files are written (opfs-fs.ts): reaching them means waiting
 * for that copy, seconds, so the first turns' writes are kept instead. A first turn touches
 * a few dozen files; every table and index of the schema is a few hundred.
 */
export const CREATION_KEPT_LIMITS = { bytes: 4 * MAX_KEPT_BYTES, files: 1024 } as const

export function noKeptWrites(): KeptWrites {
  return { files: new Map(), bytes: 0 }
}

const chunkBytes = (w: FileWrite) => w.chunks.reduce((n, c) => n + c.data.length, 0)

/**
 * How to write `changes` given the writes kept back: `keep` — write `now` (the structural
 * changes and the WAL) and keep `kept` back; `all` — write the kept writes, then `changes`
 * whole (a checkpoint, a bound reached, or a resize of a file with kept writes, which one
 * merged write cannot express).
 */
export function planFlush(
  kept: KeptWrites,
  changes: ChangeSet,
  limits: { bytes: number; files: number } = { bytes: MAX_KEPT_BYTES, files: MAX_KEPT_FILES },
): { kind: 'keep'; now: ChangeSet; kept: KeptWrites } | { kind: 'all'; kept: KeptWrites } {
  // Removed files and folders lose their kept writes (they would be made again).
  const remaining = new Map(kept.files)
  for (const op of changes.ops) {
    if (op.op !== 'remove') continue
    for (const path of remaining.keys()) if (path === op.path || path.startsWith(`${op.path}/`)) remaining.delete(path)
  }
  // What `all` writes first: only earlier flushes' bytes, whose log is already on disk (a data
  // page must never reach the disk before the log that explains it).
  const pruned = { files: remaining, bytes: [...remaining.values()].reduce((n, w) => n + chunkBytes(w), 0) }
  if (changes.files.control.length > 0) return { kind: 'all', kept: pruned }
  const files = new Map(remaining)
  for (const w of changes.files.data) {
    const before = files.get(w.path)
    if (!before || w.full) {
      // A whole-file write stands for everything before it.
      if (before) files.delete(w.path)
      files.set(w.path, w)
    } else if (w.truncate) {
      return { kind: 'all', kept: pruned }
    } else {
      // The earlier resize (if any) first, then every chunk in order: later bytes win.
      files.set(w.path, { ...before, chunks: [...before.chunks, ...w.chunks] })
    }
  }
  const bytes = [...files.values()].reduce((n, w) => n + chunkBytes(w), 0)
  if (bytes > limits.bytes || files.size > limits.files) return { kind: 'all', kept: pruned }
  return {
    kind: 'keep',
    now: { ops: changes.ops, files: { wal: changes.files.wal, data: [], control: [] } },
    kept: { files, bytes },
  }
}

/** The kept writes as a flush of data files only, each file's chunks joined (`joinChunks`). */
export function keptChanges(kept: KeptWrites): ChangeSet {
  return { ops: [], files: { wal: [], data: [...kept.files.values()].map((w) => ({ ...w, chunks: joinChunks(w.chunks) })), control: [] } }
}

type Chunk = FileWrite['chunks'][number]

/**
 * Chunks written in order (later bytes winning), as the fewest that leave the same bytes: one
 * per run of chunks that touch or overlap, in order of offset. A file kept back over many
 * flushes holds a chunk per flush, mostly the pages each added after the last; in OPFS 300
 * write calls of 16 KiB took 6–10 times as long as one call writing the same bytes
 * (bench/HISTORY.md, "Held-back writes in one piece").
 */
export function joinChunks(chunks: readonly Chunk[]): Chunk[] {
  if (chunks.length < 2) return [...chunks]
  const ranges = chunks
    .filter((c) => c.data.length > 0)
    .map((c) => [c.at, c.at + c.data.length] as [number, number])
    .sort((a, b) => a[0] - b[0])
  const runs: [number, number][] = []
  for (const [start, end] of ranges) {
    const last = runs.at(-1)
    if (last && start <= last[1]) last[1] = Math.max(last[1], end)
    else runs.push([start, end])
  }
  if (runs.length === chunks.length) return [...chunks].sort((a, b) => a.at - b.at)
  const joined = runs.map(([start, end]) => ({ at: start, data: new Uint8Array(end - start) }))
  for (const { at, data } of chunks) {
    if (data.length === 0) continue
    // The run that holds this chunk: the last starting at or before it.
    let lo = 0
    let hi = joined.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (joined[mid]!.at <= at) lo = mid
      else hi = mid - 1
    }
    const run = joined[lo]!
    run.data.set(data, at - run.at)
  }
  return joined
}

/** Fewest trailing zero bytes a whole-file write drops (`withoutZeroTails`). */
export const MIN_ZERO_TAIL = 64 * 1024

/** Length of `data` without its trailing zero bytes. */
export function lengthWithoutZeros(data: Uint8Array): number {
  let end = data.length
  // Four bytes at a time where the bytes line up (a 1 MiB segment's zeros take a quarter as long).
  if (data.byteOffset % 4 === 0) {
    while (end % 4 !== 0 && data[end - 1] === 0) end--
    if (end % 4 === 0) {
      const words = new Uint32Array(data.buffer, data.byteOffset, end / 4)
      let word = words.length
      while (word > 0 && words[word - 1] === 0) word--
      end = word * 4
    }
  }
  while (end > 0 && data[end - 1] === 0) end--
  return end
}

/**
 * The same flush with the zero tails of whole-file writes left to the file's length. Postgres
 * starts each write-ahead log segment as a file of zeros, renamed into place, so the flush
 * that switches to a new segment carries the whole segment (1 MiB), of which a turn's records
 * fill a few KiB. A whole-file write whose last `minTail` bytes or more are zeros becomes: set
 * the file's length and write the bytes before the zeros. A file's new length reads as zeros;
 * a file that may already exist (`exists`) is removed first, so that none of its old bytes
 * stay. Removals of paths that do not exist are dropped: each costs OPFS a round trip.
 */
export function withoutZeroTails(
  changes: ChangeSet,
  exists: (path: string) => boolean,
  minTail = MIN_ZERO_TAIL,
): ChangeSet {
  const ops = changes.ops.filter((op) => op.op !== 'remove' || exists(op.path))
  const trim = (writes: FileWrite[]) =>
    writes.map((w): FileWrite => {
      const only = w.chunks.length === 1 ? w.chunks[0] : undefined
      if (!w.full || !only || only.at !== 0 || only.data.length !== w.size) return w
      const keep = lengthWithoutZeros(only.data)
      if (w.size - keep < minTail) return w
      if (exists(w.path)) ops.push({ op: 'remove', path: w.path })
      return { path: w.path, size: w.size, full: false, truncate: true, chunks: keep === 0 ? [] : [{ at: 0, data: only.data.subarray(0, keep) }] }
    })
  const files = { wal: trim(changes.files.wal), data: trim(changes.files.data), control: trim(changes.files.control) }
  return { ops, files }
}

/**
 * The paths a storage holds, kept from its listing at open and each flush, for
 * `withoutZeroTails`. It errs towards "exists": a flush's paths count as stored before it is
 * written, and its removals count only once it has succeeded.
 */
export class StoredPaths {
  #paths = new Set<string>()

  add(path: string): void {
    this.#paths.add(path)
  }

  /** The path, or anything under it. */
  has(path: string): boolean {
    if (this.#paths.has(path)) return true
    const prefix = `${path}/`
    for (const p of this.#paths) if (p.startsWith(prefix)) return true
    return false
  }

  /** Writes `changes` with `write`, keeping the set in step. */
  async write(changes: ChangeSet, write: (changes: ChangeSet) => Promise<void>): Promise<void> {
    const sparse = withoutZeroTails(changes, (path) => this.has(path))
    const files = [...changes.files.wal, ...changes.files.data, ...changes.files.control]
    for (const op of changes.ops) if (op.op === 'mkdir') this.add(op.path)
    for (const w of files) this.add(w.path)
    await write(sparse)
    // As the flush ran: its removals and folders in order, then its files.
    for (const op of changes.ops) {
      if (op.op === 'mkdir') {
        this.add(op.path)
        continue
      }
      const prefix = `${op.path}/`
      for (const p of [...this.#paths]) if (p === op.path || p.startsWith(prefix)) this.#paths.delete(p)
    }
    for (const w of files) this.add(w.path)
  }
}

/**
 * A flush's removals split in two: those that must come first (the path, or one under it, is
 * written again in this flush) and the rest, which go `last`, after `pg_control`. A checkpoint
 * removes the log segments before its redo point, and Postgres removes them only once
 * `pg_control` names the new checkpoint. A removal written first would, if the tab died before
 * `pg_control` reached the disk, leave the old checkpoint pointing into a segment already gone,
 * and the memory could not start again.
 */
export function removalsLast(ops: ChangeSet['ops'], files: ChangeSet['files']): { ops: ChangeSet['ops']; last: ChangeSet['ops'] } {
  const written = [...files.wal, ...files.data, ...files.control].map((w) => w.path)
  const rewritten = (path: string) => written.some((p) => p === path || p.startsWith(`${path}/`))
  const first: ChangeSet['ops'] = []
  const last: ChangeSet['ops'] = []
  for (const op of ops) (op.op === 'remove' && !rewritten(op.path) ? last : first).push(op)
  return { ops: first, last }
}
