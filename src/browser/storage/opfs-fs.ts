import { type ChangeSet, type FileWrite, MemfsFrontendFS, type StorageEntry } from '@electric-sql/pglite/memfs-frontend'
import { OpfsBackend } from '@electric-sql/pglite/memfs2opfs'
import { inLog, removeMarker, splitLog, writeMarker } from './creation.ts'
import { CREATION_KEPT_LIMITS, keptChanges, type KeptWrites, noKeptWrites, planFlush, removalsLast, StoredPaths } from './deferred-writes.ts'
import { isWalSegment, WalSegmentFiles } from './wal-segments.ts'

/** Files read from OPFS at once while a memory opens. */
export const LOAD_CONCURRENCY = 32

/** How long flushes must pause before the data-file writes kept back are written. */
export const IDLE_WRITE_MS = 500

/** How long a flush goes on trying files that another access handle holds (`whileHeld`). */
export const HELD_WAIT_MS = 3000
const HELD_RETRY_MS = 50

interface DirectoryLike {
  entries(): AsyncIterable<[string, FileSystemHandle]>
}

type ApplyOptions = Parameters<OpfsBackend['apply']>[1]

/**
 * PGlite's OPFS storage (memfs2opfs: the database runs in memory and every flush writes the
 * changed bytes through to OPFS) with a faster start.
 *
 * - Opening: PGlite's own loader reads the data directory one file at a time, two browser
 *   round trips each, all in a row. This one lists each level of folders at once and keeps
 *   `LOAD_CONCURRENCY` reads in flight; entries still come parents first, files in listing
 *   order.
 * - Creating (`created`): the first flush holds the whole new data directory, ~520 files
 *   that OPFS creates one after another, seconds of work. It is written in the background,
 *   log segments first, and a marker beside the folder says how far it got (creation.ts).
 *   Made from a `template`, the memory acknowledges a flush of log records as soon as the
 *   template's log is stored: the rest is the template's, and finishing it again from the
 *   template after a crash loses nothing (`finishFromTemplate`). Any other flush, and every
 *   flush of a memory made without a template, waits for the whole directory (and tries it
 *   again if it failed) before writing its own changes, in order.
 * - Committing: a flush writes the write-ahead log at once (a commit is durable with it) and
 *   keeps the data files' bytes back (`planFlush`, deferred-writes.ts) until a checkpoint or
 *   the shutdown touches `pg_control`, flushes pause for `IDLE_WRITE_MS`, the memory closes, or
 *   `MAX_KEPT_FILES` / `MAX_KEPT_BYTES` are reached. A commit used to open, write and close a
 *   few data files besides the log; after a crash Postgres replays the log over whatever the
 *   data files hold, as after a power cut.
 * - The log's segments are written through handles kept open, and the next segment is opened
 *   ahead while the memory goes on (`WalSegmentFiles`, wal-segments.ts).
 */
export class OpfsLoadAheadBackend extends OpfsBackend {
  #creating: boolean
  /** Data-file writes kept back (`planFlush`), written at a checkpoint, an idle moment or close. */
  #kept: KeptWrites = noKeptWrites()
  #idle: ReturnType<typeof setTimeout> | undefined
  /** The new directory's log segments, until they are written. */
  #unwrittenLog: { changes: ChangeSet; options: ApplyOptions } | undefined
  /** The rest of the new directory's first flush, until it is written. */
  #unwritten: { changes: ChangeSet; options: ApplyOptions } | undefined
  /** Settles once the new directory's log is written or has failed. */
  #logWritten: Promise<void> = Promise.resolve()
  /** The template a new memory was made from (its `templateId`), if any. */
  #template: string | null
  #markerSet = false
  /** A flush is running (PGlite never runs two at once). */
  #applying = false
  #background: Promise<void> | undefined
  /** What the folder holds, so that a flush leaves out the zeros and removals it need not write. */
  #stored = new StoredPaths()
  /** The write-ahead log's segments, the next one opened ahead (wal-segments.ts). */
  #segments = new WalSegmentFiles(async () => (await this.#folder()).getDirectoryHandle('pg_wal', { create: true }))
  #folderHandle: Promise<FileSystemDirectoryHandle> | undefined

  /** The folder's entries, read from construction on (`startEarly`), for `load`. */
  #early: (() => AsyncGenerator<StorageEntry>) | undefined

  constructor(folder: string, { created = false, template = null }: { created?: boolean; template?: string | null } = {}) {
    super(folder)
    this.#creating = created
    this.#template = template
    // PGlite reads the folder only once its WebAssembly is running: reading from now on
    // overlaps that start (the caller holds the memory's lock, so nothing else writes here).
    if (!created) this.#early = startEarly(this.#read())
  }

  override async apply(changes: ChangeSet, options: ApplyOptions): Promise<void> {
    this.#applying = true
    try {
      await this.#apply(changes, options)
    } finally {
      this.#applying = false
    }
  }

  async #apply(changes: ChangeSet, options: ApplyOptions): Promise<void> {
    if (this.#creating) {
      this.#creating = false
      await writeMarker(this.dataDir, { template: this.#template, log: false })
      this.#markerSet = true
      const { log, rest } = splitLog(changes)
      this.#unwrittenLog = { changes: log, options }
      this.#unwritten = { changes: rest, options }
      const logWritten = this.#writeLog()
      this.#logWritten = logWritten.catch(() => {})
      // A failure shows at the next flush, which writes the directory again.
      this.#background = logWritten.then(() => this.#writeUnwritten()).catch(() => {})
      return
    }
    if (await this.#putBesideCreation(changes, options)) {
      this.#scheduleIdleWrite()
      return
    }
    await this.#settle()
    const plan = planFlush(this.#kept, changes)
    if (plan.kind === 'keep') {
      await this.#put(plan.now, options)
      this.#kept = plan.kept
      this.#scheduleIdleWrite()
      return
    }
    this.#kept = plan.kept
    await this.#writeKept(options)
    await this.#put(changes, options)
  }

  override async close(): Promise<void> {
    await this.#settle()
    await this.#writeKept({ relaxedDurability: false })
    await this.#segments.close()
    await super.close()
  }

  /**
   * Writes a flush through to OPFS, without the zero tails of whole files (`withoutZeroTails`),
   * in PGlite's order: removals and folders, the log, the data files, `pg_control` last. The
   * log's segments go through `#segments`; once one is written, the next is opened ahead, while
   * the memory goes on.
   */
  async #put(changes: ChangeSet, options: ApplyOptions): Promise<void> {
    // Only a flush that writes or removes the segment being opened ahead waits for it.
    await this.#segments.settle([...changes.ops.map((op) => op.path), ...changes.files.wal.map((w) => w.path)])
    let last: FileWrite | undefined
    const write = async ({ ops: all, files }: ChangeSet) => {
      const { ops, last: removals } = removalsLast(all, files)
      for (const op of ops) if (op.op === 'remove') this.#segments.release(op.path)
      const segments = files.wal.filter((w) => isWalSegment(w.path))
      const wal = files.wal.filter((w) => !isWalSegment(w.path))
      if (ops.length > 0 || wal.length > 0) await super.apply({ ops, files: { wal, data: [], control: [] } }, options)
      for (const w of segments) {
        await this.#segments.write(w, options.relaxedDurability)
        if (!last || w.path > last.path) last = w
      }
      this.#segments.trim()
      if (files.data.length > 0 || files.control.length > 0) {
        await super.apply({ ops: [], files: { wal: [], data: files.data, control: files.control } }, options)
      }
      if (removals.length > 0) {
        for (const op of removals) this.#segments.release(op.path)
        await super.apply({ ops: removals, files: { wal: [], data: [], control: [] } }, options)
      }
    }
    // Written again whole while a file is held: every step writes the same bytes again.
    await this.#stored.write(changes, (sparse) => whileHeld(() => write(sparse)))
    if (last) this.#segments.prepare(last, (path) => this.#stored.has(path))
  }

  /** The memory's OPFS folder (made by `init`, before anything is loaded or written). */
  #folder(): Promise<FileSystemDirectoryHandle> {
    if (!this.#folderHandle) {
      const resolving = (async () => {
        let dir = await navigator.storage.getDirectory()
        for (const part of this.dataDir.split('/').filter(Boolean)) dir = await dir.getDirectoryHandle(part, { create: true })
        return dir
      })()
      // Looked up again after a failure.
      resolving.catch(() => {
        if (this.#folderHandle === resolving) this.#folderHandle = undefined
      })
      this.#folderHandle = resolving
    }
    return this.#folderHandle
  }

  /** Waits for the background write and finishes it when it failed (throwing if it fails again). */
  async #settle(): Promise<void> {
    clearTimeout(this.#idle)
    this.#idle = undefined
    const background = this.#background
    this.#background = undefined
    await background
    await this.#writeUnwritten()
  }

  /**
   * While a new memory made from a template is written, a flush of log records goes out as
   * soon as the template's log is stored, its data-file writes kept back. Returns false, having
   * written nothing, for a flush that must wait for the directory: one that touches files
   * outside the log, or would write the data files kept back.
   */
  async #putBesideCreation(changes: ChangeSet, options: ApplyOptions): Promise<boolean> {
    if (this.#unwritten === undefined || this.#template === null) return false
    if (!changes.ops.every((op) => inLog(op.path))) return false
    await this.#logWritten
    if (this.#unwrittenLog !== undefined || this.#unwritten === undefined) return false
    const plan = planFlush(this.#kept, changes, CREATION_KEPT_LIMITS)
    if (plan.kind !== 'keep') return false
    await this.#put(plan.now, options)
    // Kept only once their log is stored: a data page never reaches the disk before its log.
    this.#kept = plan.kept
    return true
  }

  /**
   * Writes the kept data-file writes; on failure they stay kept (writing them again is
   * harmless). Writes kept while these were written stay kept: `planFlush` made them a new set.
   */
  async #writeKept(options: ApplyOptions): Promise<void> {
    const writing = this.#kept
    if (writing.files.size === 0) return
    await this.#put(keptChanges(writing), options)
    if (this.#kept === writing) this.#kept = noKeptWrites()
  }

  /**
   * Once flushes pause, the kept writes go out in the background (the next flush waits for
   * them), after a new directory's files. Not while a flush runs: it writes them, or keeps
   * them and schedules this again.
   */
  #scheduleIdleWrite(): void {
    clearTimeout(this.#idle)
    this.#idle = setTimeout(() => {
      this.#idle = undefined
      if (this.#applying) return
      const before = this.#background
      this.#background = (async () => {
        await before
        await this.#writeUnwritten()
        await this.#writeKept({ relaxedDurability: false })
      })().catch(() => {})
    }, IDLE_WRITE_MS)
  }

  /** The new directory's log segments, then the marker saying they are stored. */
  async #writeLog(): Promise<void> {
    const log = this.#unwrittenLog
    if (!log) return
    await this.#put(log.changes, log.options)
    await writeMarker(this.dataDir, { template: this.#template, log: true })
    this.#unwrittenLog = undefined
  }

  /** No data file after the first flush is written while the marker says the folder is incomplete. */
  async #writeUnwritten(): Promise<void> {
    await this.#writeLog()
    const unwritten = this.#unwritten
    if (unwritten) {
      await this.#put(unwritten.changes, unwritten.options)
      this.#unwritten = undefined
    }
    if (this.#markerSet) {
      await removeMarker(this.dataDir)
      this.#markerSet = false
    }
  }

  override load(): AsyncGenerator<StorageEntry> {
    const early = this.#early
    this.#early = undefined
    return early ? early() : this.#read()
  }

  async *#read(): AsyncGenerator<StorageEntry> {
    const root = await this.#folder()

    const files: { path: string; handle: FileSystemFileHandle }[] = []
    let level: { path: string; handle: FileSystemDirectoryHandle }[] = [{ path: '', handle: root }]
    while (level.length > 0) {
      const listed = await Promise.all(
        level.map(async (dir) => {
          const children: [string, FileSystemHandle][] = []
          for await (const child of (dir.handle as unknown as DirectoryLike).entries()) children.push(child)
          return { dir, children }
        }),
      )
      const next: typeof level = []
      for (const { dir, children } of listed) {
        for (const [name, handle] of children) {
          const path = `${dir.path}/${name}`
          if (handle.kind === 'directory') {
            next.push({ path, handle: handle as FileSystemDirectoryHandle })
            this.#stored.add(path)
            yield { kind: 'dir', path }
          } else {
            files.push({ path, handle: handle as FileSystemFileHandle })
            this.#stored.add(path)
          }
        }
      }
      level = next
    }

    const read = async ({ path, handle }: (typeof files)[number]): Promise<StorageEntry> => {
      const file = await handle.getFile()
      return { kind: 'file', path, data: new Uint8Array(await file.arrayBuffer()), mtime: file.lastModified }
    }
    const reads: (Promise<StorageEntry> | undefined)[] = []
    for (let i = 0; i < files.length; i++) {
      while (reads.length < files.length && reads.length < i + LOAD_CONCURRENCY) {
        const pending = read(files[reads.length]!)
        // Awaited below in order; this only keeps an abandoned load from reporting it as unhandled.
        pending.catch(() => {})
        reads.push(pending)
      }
      const entry = await reads[i]!
      reads[i] = undefined
      // A segment cut short while it was made (before its length was set) held no records.
      if (entry.kind === 'file' && entry.data.length === 0 && isWalSegment(entry.path)) continue
      yield entry
    }
  }
}

/**
 * Runs `write` again while it fails on a file that another access handle holds, every 50 ms
 * for up to `waitMs`. PGlite's writer fails a flush at its first failed write while its other
 * writes run on, so the flush after a failed one (a full disk) can find their files still held.
 * A tab taking over can likewise find a closed worker's handles not yet released.
 */
export async function whileHeld<T>(write: () => Promise<T>, waitMs = HELD_WAIT_MS): Promise<T> {
  const until = Date.now() + waitMs
  for (;;) {
    try {
      return await write()
    } catch (error) {
      if ((error as { name?: unknown } | null)?.name !== 'NoModificationAllowedError' || Date.now() >= until) throw error
      await new Promise((resolve) => setTimeout(resolve, HELD_RETRY_MS))
    }
  }
}

/**
 * Runs `source` from now on, keeping what it yields until the returned generator is read.
 * A failure reaches the reader after the entries before it.
 */
export function startEarly<T>(source: AsyncIterable<T>): () => AsyncGenerator<T> {
  const buffered: T[] = []
  let taken = 0
  let end: { error?: unknown } | undefined
  let wake: (() => void) | undefined
  void (async () => {
    try {
      for await (const item of source) {
        buffered.push(item)
        wake?.()
      }
      end = {}
    } catch (error) {
      end = { error }
    }
    wake?.()
  })()
  return async function* () {
    for (;;) {
      if (taken < buffered.length) {
        const item = buffered[taken]!
        // Let go of what was read: the file system owns it now.
        buffered[taken++] = undefined as T
        yield item
        continue
      }
      if (end) {
        if ('error' in end) throw end.error
        return
      }
      await new Promise<void>((resolve) => (wake = resolve))
      wake = undefined
    }
  }
}

/**
 * The file system for a memory kept in the OPFS folder `folder`; `created` when it is new,
 * `template` the `templateId` of the template it is made from.
 */
export function opfsFileSystem(folder: string, options: { created?: boolean; template?: string | null } = {}): MemfsFrontendFS {
  return new MemfsFrontendFS(new OpfsLoadAheadBackend(folder, options))
}
