import { createHash, randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { existsSync, linkSync, mkdirSync, readFileSync, realpathSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs'
import type { Db } from '../core/kernel/db.ts'
import { MemoryError } from '../core/kernel/errors.ts'

/** One open's hold on a data folder (see `lockDataDir`). */
export interface DataDirLock {
  /** Fails with LOCKED_BY_OTHER_PROCESS, now and on every later call, once the lock file is no longer this open's. */
  check(): void
  /** True once `check` found the lock taken: this open must write nothing more, not even on close. */
  readonly lost: boolean
  /** Removes the lock file if it is still this open's. */
  release(): void
}

/** Who holds a data folder: a process (its host, id and start time) and a token that is this open's alone. */
interface Holder {
  /** Process ids say nothing across hosts (or containers, whose ids are their own): another host's holder is never judged dead. */
  host: string | null
  /** The kernel's boot id on Linux: every holder of an earlier boot is dead. */
  boot: string | null
  pid: number
  /** Field 22 of /proc/<pid>/stat, so a reused process id is not taken for the holder; null without /proc. */
  start: string | null
  token: string
}

/** What a lock path holds: nothing, a file (with its holder when it names one), or a folder (the older format). */
type Entry = { kind: 'none' } | { kind: 'folder' } | { kind: 'file'; text: string; holder: Holder | null }

/** The folders this process holds, so a second open here is refused whatever the lock file says. */
const held = new Set<string>()

/** Detected once: whether process start times can be read (Linux). */
let procfs: boolean | undefined
const GONE = Symbol('gone')

/** A process's start time; GONE when no such process runs (a zombie has exited); null when unknown. */
function startTime(pid: number): string | null | typeof GONE {
  procfs ??= existsSync('/proc/self/stat')
  if (!procfs) return null
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch (error) {
    return errorCode(error) === 'ENOENT' || errorCode(error) === 'ESRCH' ? GONE : null
  }
  // The command name (field 2) may hold spaces and parentheses: the fields after it start past the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  if (fields[0] === 'Z' || fields[0] === 'X') return GONE
  return fields[19] ?? null
}

/** This process's host and boot, read once. */
let here: { host: string; boot: string | null } | undefined
function thisHost(): { host: string; boot: string | null } {
  if (!here) {
    let boot: string | null = null
    try {
      boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    } catch {
      // Not Linux: process start times are unknown too, and liveness rests on the process id.
    }
    here = { host: hostname(), boot }
  }
  return here
}

const foreign = (holder: Holder) => holder.host !== null && holder.host !== thisHost().host

/** Whether the holder still runs: same host and boot, same process id and, where known, same start time. */
function alive(holder: Holder): boolean {
  if (foreign(holder)) return true
  if (holder.boot !== null && thisHost().boot !== null && holder.boot !== thisHost().boot) return false
  const start = startTime(holder.pid)
  if (start === GONE) return false
  if (start !== null) return holder.start === null || holder.start === start
  try {
    process.kill(holder.pid, 0)
    return true
  } catch (error) {
    return errorCode(error) === 'EPERM'
  }
}

const errorCode = (error: unknown): unknown => (error as { code?: unknown } | null)?.code

function parseHolder(text: string): Holder | null {
  try {
    const value = JSON.parse(text) as Partial<Holder> | null
    const { host, boot, pid, start, token } = value ?? {}
    if (!Number.isSafeInteger(pid) || (pid as number) <= 0 || typeof token !== 'string') return null
    const named = (field: unknown) => (typeof field === 'string' ? field : null)
    return { host: named(host), boot: named(boot), pid: pid as number, start: named(start), token }
  } catch {
    return null
  }
}

function readEntry(path: string): Entry {
  try {
    const text = readFileSync(path, 'utf8')
    return { kind: 'file', text, holder: parseHolder(text) }
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { kind: 'none' }
    if (errorCode(error) === 'EISDIR') return { kind: 'folder' }
    throw error
  }
}

/** Names what an entry held, so that only the taker of that very entry removes it. */
const entryKey = (entry: Entry): string =>
  entry.kind === 'file' ? (entry.holder?.token ?? createHash('sha256').update(entry.text).digest('hex').slice(0, 32)) : entry.kind

/**
 * Creates `path` holding `text`, or returns false if it exists. The text is written to a file
 * of its own first and then linked, so no reader ever sees the lock half-written.
 */
function createExclusive(path: string, text: string): boolean {
  const temp = `${path}.${randomBytes(8).toString('hex')}.tmp`
  writeFileSync(temp, text, { flag: 'wx' })
  try {
    linkSync(temp, path)
    return true
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false
    throw error
  } finally {
    unlinkSync(temp)
  }
}

/**
 * Removes the entry at `path` left by a process that died, unless another taker removes or
 * replaces it first. Takers of one entry must not both win: each first creates a marker named
 * after that entry, which only one can, and checks under it that the entry is still the one it
 * judged. A marker left by a taker that died is taken over the same way. True when the caller
 * may try to create the lock again at once; false when another taker is at work.
 */
function removeStale(path: string, seen: Entry, text: string, depth = 0): boolean {
  const marker = `${path}.${entryKey(seen)}`
  if (!createExclusive(marker, text)) {
    const other = readEntry(marker)
    if (other.kind === 'none') return true
    if (other.kind === 'file' && other.holder && alive(other.holder)) return false
    return depth < 3 && removeStale(marker, other, text, depth + 1)
  }
  try {
    const now = readEntry(path)
    if (now.kind !== seen.kind || entryKey(now) !== entryKey(seen)) return true
    if (now.kind === 'folder') rmdirSync(path)
    else unlinkSync(path)
    return true
  } finally {
    unlinkSync(marker)
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const lockedError = (dataDir: string, message: string, holder?: Holder) =>
  new MemoryError('LOCKED_BY_OTHER_PROCESS', message, { details: { dataDir, ...(holder ? { pid: holder.pid, host: holder.host } : {}) } })

/**
 * Holds a data folder for this open. A second open of the same folder, in this process or
 * another, would keep its own copy of the database's pages and write over the first one's
 * writes, so it is refused with LOCKED_BY_OTHER_PROCESS. The lock is a file beside the data
 * folder (`<dataDir>.lock`) naming the holding process, its start time and a token of this
 * open. It needs no renewal, so a busy holder never loses it; one left by a process that died
 * (or whose process id now names another process) is taken over at the next open. A holder on
 * another host or in another container cannot be checked, so its lock stays until deleted.
 * The open's own check (`whileHeld`) stops it at its next call if its lock is taken anyway.
 *
 * @example
 * const lock = await lockDataDir('/home/ann/.engram')
 * lock.check() // before each database call
 * lock.release()
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  let path: string
  try {
    mkdirSync(dataDir, { recursive: true })
    path = `${realpathSync(dataDir)}.lock`
  } catch (cause) {
    throw new MemoryError('STORAGE_UNAVAILABLE', `Could not lock the memory at ${dataDir}: ${String(cause)}`, { cause, details: { dataDir } })
  }
  const elsewhere = `The memory at ${dataDir} is open elsewhere`
  if (held.has(path)) throw lockedError(dataDir, `${elsewhere}, in this process: close it there first.`)
  const start = startTime(process.pid)
  const holder: Holder = {
    ...thisHost(),
    pid: process.pid,
    start: start === GONE ? null : start,
    token: randomBytes(16).toString('hex'),
  }
  const text = JSON.stringify(holder)
  let taken = false
  try {
    // A few rounds at most: each ends with the lock, a live holder, or another taker at work.
    for (let round = 0; round < 50 && !taken; round++) {
      taken = createExclusive(path, text)
      if (taken) break
      const found = readEntry(path)
      if (found.kind === 'file' && found.holder && alive(found.holder)) {
        const where = foreign(found.holder)
          ? `in process ${found.holder.pid} on ${found.holder.host}: close it there first, or delete ${path} if that process no longer runs.`
          : `${found.holder.pid === process.pid ? 'in this process' : `in process ${found.holder.pid}`}: close it there first.`
        throw lockedError(dataDir, `${elsewhere}, ${where}`, found.holder)
      }
      if (found.kind !== 'none' && !removeStale(path, found, text)) await pause(10)
    }
  } catch (cause) {
    if (MemoryError.is(cause)) throw cause
    throw new MemoryError('STORAGE_UNAVAILABLE', `Could not lock the memory at ${dataDir}: ${String(cause)}`, { cause, details: { dataDir } })
  }
  if (!taken) throw lockedError(dataDir, `${elsewhere}: another process is opening it.`)
  held.add(path)
  let lost = false
  return {
    get lost() {
      return lost
    },
    check() {
      if (!lost) {
        let now: string | undefined
        try {
          now = readFileSync(path, 'utf8')
        } catch (cause) {
          const code = errorCode(cause)
          if (code !== 'ENOENT' && code !== 'EISDIR') {
            throw new MemoryError('STORAGE_UNAVAILABLE', `Could not read the lock of ${dataDir}: ${String(cause)}`, { cause, details: { dataDir } })
          }
        }
        lost = now !== text
      }
      if (lost) {
        throw lockedError(dataDir, `The lock of ${dataDir} was taken by another process or removed: this memory writes nothing more. Close it and open it again.`)
      }
    },
    release() {
      if (!held.delete(path)) return
      try {
        if (!lost && readFileSync(path, 'utf8') === text) unlinkSync(path)
      } catch {
        // Gone already: nothing of this open's is left to remove.
      }
    },
  }
}

/** `db` with the lock checked before each call, so an open whose lock was taken stops at its next call. */
export function whileHeld(db: Db, lock: DataDirLock): Db {
  const checked = async <T>(run: () => Promise<T>): Promise<T> => {
    lock.check()
    return run()
  }
  return {
    query: (sql, params, options) => checked(() => db.query(sql, params, options)),
    exec: (sql) => checked(() => db.exec(sql)),
    transaction: (fn) => checked(() => db.transaction(fn)),
  }
}
