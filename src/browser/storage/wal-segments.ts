import type { FileWrite } from '@electric-sql/pglite/memfs-frontend'

/** A write-ahead log segment's path: timeline, log and segment number, 8 hex digits each. */
const WAL_SEGMENT = /^\/pg_wal\/([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})$/

/** Segment handles kept open: Postgres appends to one segment at a time. */
export const OPEN_WAL_SEGMENTS = 2

export function isWalSegment(path: string): boolean {
  return WAL_SEGMENT.test(path)
}

const hex8 = (n: number) => n.toString(16).toUpperCase().padStart(8, '0')

/**
 * The segment Postgres writes after `path` when segments are `bytes` long: the next segment
 * number, and the next log number once a log's 4 GiB are used up. Undefined for a path that
 * is not a segment or a length that does not divide 4 GiB.
 */
export function nextWalSegment(path: string, bytes: number): string | undefined {
  const match = WAL_SEGMENT.exec(path)
  const perLog = 2 ** 32 / bytes
  if (!match || !Number.isInteger(perLog) || perLog < 1) return undefined
  const [, timeline, log, segment] = match as unknown as [string, string, string, string]
  let nextLog = Number.parseInt(log, 16)
  let nextSegment = Number.parseInt(segment, 16) + 1
  if (nextSegment >= perLog) {
    nextLog += 1
    nextSegment = 0
  }
  if (nextLog > 0xffffffff) return undefined
  return `/pg_wal/${timeline}${hex8(nextLog)}${hex8(nextSegment)}`
}

/** OPFS's synchronous file handle (dedicated workers), as far as this module uses it. */
export interface SyncHandle {
  write(data: Uint8Array, options: { at: number }): number
  truncate(size: number): void
  getSize(): number
  flush(): void
  close(): void
}

/** An open segment and its length, so that setting the length it already has costs nothing. */
interface OpenSegment {
  handle: SyncHandle
  size: number
}

function closeQuietly(segment: OpenSegment): void {
  try {
    segment.handle.close()
  } catch {
    // Already closed.
  }
}

/**
 * The write-ahead log's segments in an OPFS folder (`pg_wal`), each written through a sync
 * access handle kept open while Postgres appends to it.
 *
 * About every 15 turns Postgres moves to the next segment: a new file (1 MiB here, renamed
 * into place), or after a checkpoint an old one it renamed for reuse. Opening that file in
 * OPFS — creating it, opening its handle, setting its length — made the turn that switched
 * take about 2 ms more on top of what Postgres spends on the switch itself (bench/HISTORY.md,
 * "A new log segment"). So once a flush has written a segment, the next one is opened ahead,
 * in the background while the memory goes on:
 * - a segment the folder does not hold is made as zeros at the segment's length, which
 *   Postgres reads as the end of the log (a memory closed before using it opens as before);
 * - one it holds (renamed for reuse, its old records in it) is opened as it is.
 * The flush that switches then writes into an open handle, as every other flush does.
 */
export class WalSegmentFiles {
  readonly #folder: () => Promise<FileSystemDirectoryHandle>
  /** Open segments by path, least recently written first. */
  #open = new Map<string, OpenSegment>()
  /** The next segment, opened ahead and not yet written to. */
  #ahead: (OpenSegment & { path: string }) | undefined
  /** The segment being opened ahead. */
  #opening: { path: string; done: Promise<void> } | undefined

  /** `folder` resolves the OPFS folder the segments are kept in. */
  constructor(folder: () => Promise<FileSystemDirectoryHandle>) {
    this.#folder = folder
  }

  /**
   * Waits for the segment being opened ahead if `paths` (written or removed) name it or a
   * folder above it, or for any with no `paths`. Opening one never throws: a failure only
   * leaves none.
   */
  async settle(paths?: Iterable<string>): Promise<void> {
    const opening = this.#opening
    if (!opening) return
    if (paths) {
      let touched = false
      for (const path of paths) touched ||= opening.path === path || opening.path.startsWith(`${path}/`)
      if (!touched) return
    }
    await opening.done
  }

  /** Closes the handles at or under `path` (a removal), or all of them; an open handle locks its file. */
  release(path?: string): void {
    const under = (p: string) => path === undefined || p === path || p.startsWith(`${path}/`)
    for (const [p, segment] of this.#open) {
      if (!under(p)) continue
      this.#open.delete(p)
      closeQuietly(segment)
    }
    if (this.#ahead && under(this.#ahead.path)) {
      closeQuietly(this.#ahead)
      this.#ahead = undefined
    }
  }

  /**
   * Writes one segment's changes, through the handle opened ahead when it is that segment. A
   * length the file already has is not set again (OPFS takes about as long as for a new one).
   */
  async write(file: FileWrite, relaxedDurability: boolean): Promise<void> {
    let segment = this.#open.get(file.path)
    if (!segment && this.#ahead?.path === file.path) {
      segment = this.#ahead
      this.#ahead = undefined
    }
    segment ??= await this.#openFile(file.path, true)
    if (!segment) throw new Error(`${file.path} could not be opened`)
    this.#open.delete(file.path)
    this.#open.set(file.path, segment)
    try {
      const { handle } = segment
      if (file.truncate && segment.size !== file.size) handle.truncate(file.size)
      if (file.truncate) segment.size = file.size
      for (const { at, data } of file.chunks) {
        handle.write(data, { at })
        segment.size = Math.max(segment.size, at + data.length)
      }
      if (!relaxedDurability) handle.flush()
    } catch (cause) {
      this.release(file.path)
      throw cause
    }
  }

  /** Closes all but the most recently written `OPEN_WAL_SEGMENTS` handles. */
  trim(): void {
    for (const [path, segment] of this.#open) {
      if (this.#open.size <= OPEN_WAL_SEGMENTS) break
      this.#open.delete(path)
      closeQuietly(segment)
    }
  }

  /**
   * Starts opening the segment after `written` ahead (unless one is being opened, or that one
   * is open already): made at `written`'s length when `exists` says the folder does not hold
   * it, opened as it is otherwise.
   */
  prepare(written: FileWrite, exists: (path: string) => boolean): void {
    if (this.#opening) return
    const next = nextWalSegment(written.path, written.size)
    if (!next || this.#ahead?.path === next || this.#open.has(next)) return
    const opening = {
      path: next,
      done: this.#openAhead(next, exists(next) ? undefined : written.size)
        .catch(() => {})
        .finally(() => {
          if (this.#opening === opening) this.#opening = undefined
        }),
    }
    this.#opening = opening
  }

  /** Opens `path` ahead: made as `blankSize` zeros, or as it is (when the folder still has it). */
  async #openAhead(path: string, blankSize: number | undefined): Promise<void> {
    const segment = await this.#openFile(path, blankSize !== undefined)
    if (!segment) return
    try {
      if (blankSize !== undefined) {
        segment.handle.truncate(blankSize)
        segment.handle.flush()
        segment.size = blankSize
      }
    } catch (cause) {
      closeQuietly(segment)
      throw cause
    }
    if (this.#ahead) closeQuietly(this.#ahead)
    this.#ahead = { ...segment, path }
  }

  /** Opens the segment at `path`; `create` makes an empty file when there is none (else undefined). */
  async #openFile(path: string, create: boolean): Promise<OpenSegment | undefined> {
    const name = path.slice(path.lastIndexOf('/') + 1)
    let file: FileSystemFileHandle
    try {
      file = await (await this.#folder()).getFileHandle(name, { create })
    } catch (cause) {
      if (!create && (cause as { name?: string }).name === 'NotFoundError') return undefined
      throw cause
    }
    const handle = await (file as unknown as { createSyncAccessHandle(): Promise<SyncHandle> }).createSyncAccessHandle()
    return { handle, size: handle.getSize() }
  }

  /** Waits for a segment being opened ahead and closes every handle. */
  async close(): Promise<void> {
    await this.settle()
    this.release()
  }
}
