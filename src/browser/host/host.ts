/// <reference lib="webworker" />
import type { PGlite } from '@electric-sql/pglite'
import { fromWire, toWire, type WireValue } from '../../protocol/wire-errors.ts'
import type { Embedder } from '../../core/kernel/embedder.ts'
import { createEngine, type Engine, type EngineSettings } from '../../core/engine.ts'
import type { MemorySettings } from '../../core/settings.ts'
import { normalizeWorkspace, type Workspace } from '../../core/documents/paths.ts'
import type { VaultStatus } from '../../core/privacy/vault.ts'
import { MemoryError } from '../../core/kernel/errors.ts'
import type { EngineErrorEvent, IndexStatus } from '../../core/maintenance/indexer.ts'
import type { TelemetryEvent } from '../../core/kernel/telemetry.ts'
import type { ModelLoadProgress, TransformersEmbedder } from '../../embed/transformers-embedder.ts'
import { registerMemory } from '../storage/registry.ts'
import { Activity } from '../../runtime/activity.ts'
import { cacheSetting, type DurableDb, durableDb, openPGlite, prewarmPGlite } from '../../runtime/pglite.ts'
import { checkThreads } from '../../embed/environment.ts'
import { canNestWorkers, createWorkerEmbedder } from './embed-remote.ts'
import { importEmbedder } from './embed-module.ts'
import { openWorkerGraphDatabase } from './graph-module.ts'
import { DEFAULT_WARM_UP_TURNS, parseWarmUp } from '../../core/maintenance/warm-up.ts'
import { moveLegacyIdbToPages } from '../storage/idb-migrate.ts'
import { idbPageFileSystem } from '../storage/idb-pages.ts'
import { settleIncomplete, templateId } from '../storage/creation.ts'
import { opfsFileSystem } from '../storage/opfs-fs.ts'
import {
  checkMemoryName,
  checkStorage,
  dataDirFor,
  detectWorkerEnvironment,
  idbLayout,
  memoryLockName,
  resolveStorage,
  type StorageKind,
  storageError,
  storageExists,
  storageKey,
} from '../storage/storage.ts'

/** Quiet (no database call or embedding running or just ended) each rehearsal waits for. */
const WARM_UP_QUIET_MS = 250

/** What the page sends the worker to open a memory (see `createMemory`). */
export interface BootOptions extends Pick<MemorySettings, 'workspace' | 'cacheMB'> {
  name: string
  storage: StorageKind | 'auto'
  /** URL of a pre-built, migrated data directory (tar or tar.gz); skips initdb for a new memory. */
  templateUrl?: string
  /** The embedding model; default `{ kind: 'bundled' }`. */
  embedder?: EmbedderBootOptions
  /** The engine's settings that cross to the worker, as `createEngine` takes them. */
  settings?: EngineSettings
  /** Turns rehearsed after the open (`createMemory({ warmUp })`); default 20, 0 for none. */
  warmUp?: number
}

/**
 * `bundled`: the shipped all-MiniLM-L6-v2, loaded in the background after the database is
 * open (boot never waits for it); `none`: keyword search only.
 */
export interface EmbedderBootOptions {
  kind: 'bundled' | 'none'
  /** int8 weights (default) or fp32. */
  quantized?: boolean
  /** `auto` (default): WebGPU when the browser grants an adapter, else WASM. */
  device?: 'auto' | 'webgpu' | 'wasm'
  /** The model folder's URL. Default: `models/all-MiniLM-L6-v2/` next to the worker script. */
  modelPath?: string
  /** Folder URL of onnxruntime-web's `.wasm`/`.mjs` files. Default: `ort/` next to the worker script. */
  wasmPaths?: string
  /**
   * Most WASM threads, 1–16. Default: every core up to four when the page is cross-origin
   * isolated (COOP `same-origin` + COEP `require-corp`), else one (see `chooseWasmThreads`).
   */
  threads?: number
  /**
   * Runs the model in a worker of its own (default true, where the browser can start one from
   * a worker): inference holds up its thread for the whole batch, so in the memory worker a
   * write or a search would wait for the indexer's batch in progress. `false` keeps it here.
   */
  dedicatedWorker?: boolean
}

/** Where the embedding model stands in this worker. */
export interface EmbedderInfo {
  state: 'none' | 'loading' | 'ready' | 'unavailable'
  model?: string
  device?: 'webgpu' | 'wasm' | 'cpu'
  /** Why WebGPU was abandoned for WASM, when it was. */
  fallbackReason?: string
  /** Threads the WASM backend runs on (WASM only). */
  threads?: number
  /** Texts per model call. */
  batchSize?: number
  /** Whether the model runs in a worker of its own (see `EmbedderBootOptions.dedicatedWorker`). */
  dedicatedWorker?: boolean
  error?: string
}

/** What the worker tells the page without being asked. */
export type HostEvent =
  | { type: 'model'; progress: ModelLoadProgress }
  | { type: 'embedder'; info: EmbedderInfo }
  | { type: 'index'; status: IndexStatus }
  | { type: 'error'; error: EngineErrorEvent }
  | { type: 'telemetry'; event: TelemetryEvent }
  /** This tab's role changed (a follower took over): for this page only. */
  | { type: 'role'; role: Role }

export type HostListener = (event: HostEvent) => void

export type Role = 'leader' | 'follower' | 'private'

export interface BootInfo {
  name: string
  storage: StorageKind
  dataDir: string
  role: Role
  /** True when this boot created the database (from the template when one was given). */
  created: boolean
  fromTemplate: boolean
  bootMs: number
}

/** Added to `stats()` in the browser. */
export interface StorageInfo {
  kind: StorageKind
  dataDir: string
  role: Role
  /**
   * The rehearsal after the open (`createMemory({ warmUp })`): `waiting` for a quiet moment,
   * `running`, `done` (`turns` rehearsed in `ms`; fewer than asked when a write came first),
   * `off`, or `failed`.
   */
  warmUp: { state: 'off' | 'waiting' | 'running' | 'done' | 'failed'; turns?: number; ms?: number }
  /** The whole origin's usage and quota (`navigator.storage.estimate()`). */
  usageBytes?: number
  quotaBytes?: number
  persisted?: boolean
}

type Path = readonly string[]

/** What a following worker asks the owner for when it joins: the owner's model state. */
const OWNER_EMBEDDER_INFO: Path = ['#embedderInfo']

type ChannelMessage =
  | { type: 'call'; id: string; from: string; path: Path; args: unknown[] }
  | { type: 'reply'; id: string; to: string; ok: true; value: unknown }
  | { type: 'reply'; id: string; to: string; ok: false; error: WireValue }
  | { type: 'leader-up'; from: string }
  /** The owner `from` started running call `id` of worker `to`. */
  | { type: 'started'; id: string; to: string; from: string }
  | { type: 'event'; event: HostEvent }
  /** A worker's page started or stopped listening to telemetry (every worker keeps count, for when it owns). */
  | { type: 'telemetry-wish'; from: string; on: boolean }

/** A call the owner started and never answered, its tab gone: it may or may not have been applied. */
function outcomeUnknown(name: string): MemoryError {
  return new MemoryError(
    'WORKER_TERMINATED',
    `The tab that owned memory "${name}" closed while running this call, before answering it: the call may or may not have been applied. Check before repeating a write.`,
    { details: { applied: 'unknown' } },
  )
}

type Answer = { ok: true; value: unknown } | { ok: false; error: WireValue }

/** How long the owner remembers a call it answered, for the same call sent again. */
const ANSWER_KEPT_MS = 60_000

interface Forwarded {
  path: Path
  args: unknown[]
  /** The owner that started running it, once it said so. */
  startedBy?: string
  /** A read this worker makes for itself: safe to run again. */
  resend: boolean
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

const env = detectWorkerEnvironment()

function resolvePath(engine: Engine, path: Path): (...args: unknown[]) => unknown {
  let owner: unknown
  let target: unknown = engine
  for (const key of path) {
    if (target === null || typeof target !== 'object' || !Object.hasOwn(target, key)) {
      throw new MemoryError('INVALID_INPUT', `The memory API has no "${path.join('.')}".`)
    }
    owner = target
    target = (target as Record<string, unknown>)[key]
  }
  if (typeof target !== 'function') throw new MemoryError('INVALID_INPUT', `"${path.join('.')}" is not a function.`)
  return (target as (...args: unknown[]) => unknown).bind(owner)
}

/** A URL relative to the worker script; MODEL_UNAVAILABLE where the script has no folder (blob:). */
function beside(path: string): string {
  const here = self.location.href
  if (!/^https?:/i.test(here)) {
    throw new MemoryError(
      'MODEL_UNAVAILABLE',
      `The worker runs from ${here.split(':')[0]}: and cannot find the model beside itself; pass embedder.modelPath and embedder.wasmPaths.`,
    )
  }
  return new URL(path, here).href
}

async function fetchTemplate(url: string): Promise<Blob> {
  const response = await fetch(url)
  if (!response.ok) throw new Error(`template ${url}: HTTP ${response.status}`)
  const bytes = new Uint8Array(await response.arrayBuffer())
  // PGlite picks gzip or plain tar by the Blob's type; the server's Content-Type is not reliable.
  const gzip = bytes[0] === 0x1f && bytes[1] === 0x8b
  return new Blob([bytes], { type: gzip ? 'application/x-gzip' : 'application/x-tar' })
}

/**
 * Hosts one memory in a worker. With persistent storage, one tab at a time owns the database
 * (a Web Lock named after the memory); the workers of other tabs forward their calls to the
 * owner over a BroadcastChannel and take over, in turn, when it closes. So no two PGlite
 * instances ever open the same files, and no acknowledged write is lost.
 */
export class MemoryHost {
  readonly #id = crypto.randomUUID()
  #options: BootOptions | undefined
  #storage: StorageKind = 'memory'
  #pg: PGlite | undefined
  #db: DurableDb | undefined
  #engine: Engine | undefined
  #warmUp: { stop: AbortController; running: Promise<void> } | undefined
  #warmUpTurns = DEFAULT_WARM_UP_TURNS
  #warmUpInfo: StorageInfo['warmUp'] = { state: 'off' }
  /** Embeddings in flight on this worker's model, and when the last one ended. */
  #embedActivity = new Activity()
  #role: Role = 'private'
  #channel: BroadcastChannel | undefined
  #forwarded = new Map<string, Forwarded>()
  #release: (() => void) | undefined
  #abortWait = new AbortController()
  #closed = false
  #closing: Promise<void> | undefined
  /** Why this worker cannot serve the memory any more (a takeover that failed). */
  #failed: MemoryError | undefined
  /**
   * Calls of other workers this one answers as owner, by caller and id, kept a while after
   * they end: a follower sends again, to a new owner, every call it has no answer for, and
   * one that reached this worker before (or just after) it said it owns the memory arrives
   * twice. The second gets the first's answer; nothing runs twice.
   */
  #answering = new Map<string, Promise<Answer>>()
  #leaderReady: Promise<void> | undefined
  /** The database opening in `#lead`, until it is open (or failed). */
  #opening: Promise<unknown> | undefined
  #listener: HostListener | undefined
  /** Whether this page listens to the engine's telemetry. */
  #pageTelemetry = false
  /** The other workers whose pages listen to it, for whichever worker owns the database. */
  #followerTelemetry = new Set<string>()
  #stopTelemetry: (() => void) | undefined
  #embedder: Promise<TransformersEmbedder> | undefined
  #embedderInfo: EmbedderInfo = { state: 'none' }

  /** One page-side listener (a comlink proxy) for model, index and error events. */
  listen(listener: HostListener): void {
    this.#listener = listener
  }

  /**
   * Starts or stops sending the engine's telemetry to this page (as `telemetry` events). The
   * owner's engine is observed only while some page of the memory listens; each worker tells
   * the others, so whichever owns the database next knows whom to send it to.
   */
  watchTelemetry(on: boolean): Promise<void> {
    this.#pageTelemetry = on
    this.#post({ type: 'telemetry-wish', from: this.#id, on })
    this.#syncTelemetry()
    return Promise.resolve()
  }

  #syncTelemetry(): void {
    const wanted = this.#engine !== undefined && (this.#pageTelemetry || this.#followerTelemetry.size > 0)
    if (wanted && !this.#stopTelemetry) {
      this.#stopTelemetry = (this.#engine as Engine).telemetry.subscribe((event) => this.#emit({ type: 'telemetry', event }))
    } else if (!wanted && this.#stopTelemetry) {
      this.#stopTelemetry()
      this.#stopTelemetry = undefined
    }
  }

  /** The embedding model's state: loading, ready (on which device), unavailable or none. */
  embedderInfo(): EmbedderInfo {
    return { ...this.#embedderInfo }
  }

  /** Tells this page, and the pages of following workers, what the engine reports. */
  #emit(event: HostEvent): void {
    this.#deliver(event)
    if (this.#role === 'leader') this.#post({ type: 'event', event })
  }

  #deliver(event: HostEvent): void {
    const listener = this.#listener
    if (!listener || (event.type === 'telemetry' && !this.#pageTelemetry)) return
    try {
      const result: unknown = listener(event)
      if (result instanceof Promise) result.catch(() => {})
    } catch {
      // The page went away; the memory keeps working.
    }
  }

  /** Fails the boot in progress, set while one runs (see `unhandled`). */
  #failBoot: ((error: MemoryError) => void) | undefined

  /** Opens the memory, or joins the tab that owns it; rejects with the boot's error. */
  boot(options: BootOptions): Promise<BootInfo> {
    const failed = new Promise<never>((_, reject) => (this.#failBoot = reject))
    return Promise.race([this.#boot(options), failed]).finally(() => (this.#failBoot = undefined))
  }

  /**
   * An error that nothing awaits, from the worker's global handlers. A Content-Security-Policy
   * without 'wasm-unsafe-eval' makes PGlite's WebAssembly fail only this way, and the boot
   * would wait for its whole timeout: during a boot, such a failure ends it at once.
   */
  unhandled(reason: unknown): void {
    if (!this.#failBoot || !isWebAssemblyFailure(reason)) return
    this.#failBoot(
      new MemoryError(
        'WORKER_TERMINATED',
        `The database's WebAssembly could not start: ${String(reason)}. A Content-Security-Policy must allow it with 'wasm-unsafe-eval' in script-src.`,
        { cause: reason },
      ),
    )
  }

  async #boot(options: BootOptions): Promise<BootInfo> {
    if (this.#options) throw new MemoryError('CONFLICT', 'This worker already hosts a memory; create a new worker.')
    const started = performance.now()
    checkMemoryName(options.name)
    // Bad settings are refused before anything is opened.
    if (options.cacheMB !== undefined) cacheSetting(options.cacheMB)
    this.#warmUpTurns = parseWarmUp(options.warmUp === undefined ? {} : { turns: options.warmUp }).turns
    checkThreads(options.embedder?.threads)
    const kind: unknown = options.embedder?.kind
    if (kind !== undefined && kind !== 'bundled' && kind !== 'none') {
      throw new MemoryError('INVALID_INPUT', `Unknown embedder kind ${typeof kind === 'string' ? JSON.stringify(kind) : `(a ${typeof kind})`}: use 'bundled' or 'none'.`)
    }
    checkStorage(options.storage)
    this.#options = options
    this.#storage = resolveStorage(options.storage, env)
    const dataDir = dataDirFor(this.#storage, options.name)
    const info = (created: boolean, fromTemplate: boolean): BootInfo => ({
      name: options.name,
      storage: this.#storage,
      dataDir,
      role: this.#role,
      created,
      fromTemplate,
      bootMs: performance.now() - started,
    })

    if (this.#storage === 'memory' || !env.locks || !env.broadcastChannel) {
      const { created, fromTemplate } = await this.#open()
      return info(created, fromTemplate)
    }

    // One owner per memory, and a memory is its name in one storage: the same name in OPFS and
    // in IndexedDB is two memories, with a lock and a channel each.
    this.#channel = new BroadcastChannel(memoryLockName(this.#storage, options.name))
    this.#channel.onmessage = (event: MessageEvent<ChannelMessage>) => this.#onMessage(event.data)
    const lockName = memoryLockName(this.#storage, options.name)

    // Try to become the owner at once; otherwise follow the owner and queue for takeover.
    const opened = await new Promise<{ created: boolean; fromTemplate: boolean } | null>((resolve, reject) => {
      navigator.locks
        .request(lockName, { ifAvailable: true }, async (lock) => {
          if (!lock) return resolve(null)
          try {
            resolve(await this.#lead())
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)))
            return
          }
          await this.#holdUntilClosed()
        })
        .catch(reject)
    })
    if (opened) return info(opened.created, opened.fromTemplate)

    this.#role = 'follower'
    this.#queueForTakeover(lockName)
    try {
      await this.#waitForLeader()
      await this.#checkOwnerFits(options)
    } catch (error) {
      // Out of the line for the lock, and off the channel.
      await this.close()
      throw error
    }
    // Ready for a takeover: PGlite's WebAssembly compiled and its files fetched here.
    prewarmPGlite().catch((error: unknown) => console.warn('engram: could not prepare PGlite for a takeover', error))
    return info(false, false)
  }

  /** Runs an engine call here when this worker owns the database, else on the owner. */
  async call(path: Path, args: unknown[]): Promise<unknown> {
    if (this.#closed) throw new MemoryError('CLOSED', 'The memory was closed.')
    if (this.#failed) throw this.#failed
    if (this.#engine) return this.#run(path, args)
    if (this.#opening) {
      // Taking over from an owner that closed: the call waits for the database to open here
      // (the open's own error, if it fails).
      await this.#opening
      if (this.#engine) return this.#run(path, args)
    }
    if (this.#role !== 'follower') throw new MemoryError('CLOSED', 'The memory is not open: boot() has not finished.')
    return this.#forward(path, args)
  }

  /** Closes the memory here; a second call waits for the first. */
  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    this.#closed = true
    this.#abortWait.abort()
    // The calls of other tabs this owner runs are answered before it lets the memory go (it
    // takes no new ones: they wait for the next owner).
    await Promise.allSettled(this.#answering.values())
    for (const call of this.#forwarded.values()) call.reject(new MemoryError('CLOSED', 'The memory was closed.'))
    this.#forwarded.clear()
    if (this.#pageTelemetry) this.#post({ type: 'telemetry-wish', from: this.#id, on: false })
    if (this.#release) {
      const release = this.#release
      this.#release = undefined
      release()
      await this.#leaderReady
    } else {
      await this.#closeDatabase()
    }
    this.#channel?.close()
  }

  async #run(path: Path, args: unknown[]): Promise<unknown> {
    const fn = resolvePath(this.#engine as Engine, path)
    try {
      const result = await fn(...args)
      return path.length === 1 && path[0] === 'stats' ? { ...(result as object), storage: await this.#storageInfo() } : result
    } catch (error) {
      // A full disk, thrown here or reported by the engine (QUOTA_EXCEEDED with it as the
      // cause): the storage error says what to do about it. A flush's failure already does,
      // and says whether the call's changes were applied (`unsavedError`).
      if (MemoryError.is(error) && error.details?.saved === false) throw error
      const full = MemoryError.is(error) ? error.cause : error
      if ((full as { name?: unknown } | null | undefined)?.name === 'QuotaExceededError') throw storageError(full, `${path.join('.')} failed`)
      throw error
    }
  }

  /**
   * Rehearses turns (`warmUp` on the engine), each once the database and the model have had
   * nothing to do for `WARM_UP_QUIET_MS` (and the model is not loading), so that the first
   * real turns run at full speed without taking the CPU from other work. The engine stops it
   * at the first real write; closing stops it between two rehearsals and waits for it.
   */
  #startWarmUp(engine: Engine, db: DurableDb, turns: number): void {
    if (turns === 0) return
    const stop = new AbortController()
    this.#warmUpInfo = { state: 'waiting' }
    // What the last rehearsal left: when the database's last call ended then, nobody has used
    // it since, and the next may follow at once.
    let ownEnd = Number.NaN
    const idle = async () => {
      for (;;) {
        const { pending, lastEnded } = db.activity
        const model = this.#embedActivity
        const since = Math.max(lastEnded === ownEnd ? -Infinity : lastEnded, model.lastEnded)
        const left = WARM_UP_QUIET_MS - (performance.now() - since)
        const busy = pending > 0 || model.pending > 0 || this.#embedderInfo.state === 'loading'
        if (!busy && left <= 0) return
        await new Promise((resolve) => setTimeout(resolve, Math.max(left, 50)))
        if (stop.signal.aborted) return
      }
    }
    let rehearsed = false
    const beforeEach = async () => {
      if (rehearsed) ownEnd = db.activity.lastEnded
      rehearsed = true
      // A macrotask between two rehearsals: calls that arrived meanwhile queue first.
      await new Promise((resolve) => setTimeout(resolve, 0))
      await idle()
      this.#warmUpInfo = { state: 'running' }
    }
    const running = engine
      .warmUp({ turns, signal: stop.signal, beforeEach })
      .then((done) => {
        this.#warmUpInfo = { state: 'done', ...done }
      })
      // Only a head start: a failure here shows again, to the caller, on the real write.
      .catch(() => {
        this.#warmUpInfo = { state: 'failed' }
      })
    this.#warmUp = { stop, running }
  }

  /** Where the memory lives and how much of the origin's quota is used (`stats().storage`). */
  async #storageInfo(): Promise<StorageInfo> {
    const options = this.#options as BootOptions
    const info: StorageInfo = {
      kind: this.#storage,
      dataDir: dataDirFor(this.#storage, options.name),
      role: this.#role,
      warmUp: { ...this.#warmUpInfo },
    }
    if (typeof navigator.storage?.estimate === 'function') {
      const { usage, quota } = await navigator.storage.estimate()
      if (usage !== undefined) info.usageBytes = usage
      if (quota !== undefined) info.quotaBytes = quota
    }
    if (typeof navigator.storage?.persisted === 'function') info.persisted = await navigator.storage.persisted()
    return info
  }

  async #open(): Promise<{ created: boolean; fromTemplate: boolean }> {
    const options = this.#options as BootOptions
    const dataDir = dataDirFor(this.#storage, options.name)
    let created: boolean
    let template: Blob | undefined
    try {
      const templateUrl = options.templateUrl
      const incomplete = await settleIncomplete(this.#storage, options.name, async () =>
        templateUrl ? await fetchTemplate(templateUrl) : undefined,
      )
      if (incomplete !== 'none') {
        const outcome = incomplete === 'finished' ? 'finished it from its template' : 'creating it again'
        console.warn(`engram: memory "${options.name}" was cut short while it was being created; ${outcome}`)
      }
      // IndexedDB: which of its two layouts, and whether it exists, in one look.
      let idb = this.#storage === 'idb' ? await idbLayout(options.name) : undefined
      if (idb?.layout === 'files') {
        try {
          await moveLegacyIdbToPages(options.name)
          idb = { layout: 'pages', exists: true }
        } catch (error) {
          console.warn(`engram: memory "${options.name}" stays in its old IndexedDB database for now`, error)
        }
      }
      created = !(idb ? idb.exists : await storageExists(this.#storage, options.name))
      if (created && options.templateUrl) {
        try {
          template = await fetchTemplate(options.templateUrl)
        } catch (error) {
          console.warn('engram: template unavailable, creating the database from scratch', error)
        }
      }
      this.#pg = await openPGlite({
        ...(this.#storage === 'opfs'
          ? { fs: opfsFileSystem(storageKey(options.name), { created, template: template ? await templateId(template) : null }) }
          : idb?.layout === 'pages'
            ? { fs: idbPageFileSystem(storageKey(options.name)) }
            : { dataDir }),
        ...(template ? { loadDataDir: template } : {}),
        ...(options.cacheMB === undefined ? {} : { cacheMB: options.cacheMB }),
      })
    } catch (error) {
      throw storageError(error, `Could not open memory "${options.name}" in ${this.#storage}`)
    }
    // The model starts loading once the memory is open: loading it beside the boot (one thread,
    // the worker's) held up the first answer of an IndexedDB memory (see bench/HISTORY.md).
    let opened!: () => void
    const embedder = this.#startEmbedder(new Promise<void>((resolve) => (opened = resolve)))
    const db = durableDb(this.#pg)
    this.#db = db
    try {
      const engine = await createEngine({
        ...options.settings,
        db,
        ...(options.workspace ? { workspace: options.workspace } : {}),
        ...(embedder ? { embedder } : {}),
        ...(canNestWorkers() ? { graphDatabase: () => this.#openGraphDatabase(options.templateUrl) } : {}),
      })
      this.#engine = engine
      engine.onIndexProgress((status) => this.#emit({ type: 'index', status }))
      engine.onError((error) => this.#emit({ type: 'error', error }))
      this.#syncTelemetry()
      if (this.#storage !== 'memory') await registerMemory(options.name, this.#storage, created)
      setTimeout(opened, 0)
      this.#startWarmUp(engine, db, this.#warmUpTurns)
    } catch (error) {
      // A wrong passphrase, say: the database closes here, before the lock is let go, and
      // nothing of it answers calls.
      await this.#closeDatabase().catch(() => {})
      throw error
    }
    return { created, fromTemplate: template !== undefined }
  }

  /**
   * The Cypher graphs' database, in a worker of its own, from the template new memories start
   * from (the browser keeps it cached); without one, the graph worker runs initdb (seconds).
   */
  async #openGraphDatabase(templateUrl: string | undefined) {
    const template = templateUrl ? await fetchTemplate(templateUrl).catch(() => null) : null
    return openWorkerGraphDatabase(template)
  }

  /**
   * Starts loading the model without waiting for it: the engine works keyword-only until it
   * is ready and reports a failure as a MODEL_UNAVAILABLE error event.
   */
  #startEmbedder(after: Promise<void>): Promise<Embedder> | undefined {
    const options = this.#options?.embedder ?? { kind: 'bundled' }
    if (options.kind === 'none') return undefined
    this.#setEmbedderInfo({ state: 'loading' })
    const dedicated = options.dedicatedWorker !== false && canNestWorkers()
    const loading = after.then(async () => {
      const settings = {
        // A blob: worker has no folder to be next to: such apps pass both URLs.
        modelPath: options.modelPath ?? beside('./models/all-MiniLM-L6-v2'),
        wasmPaths: options.wasmPaths ?? beside('./ort/'),
        quantized: options.quantized ?? true,
        device: options.device ?? 'auto',
        ...(options.threads === undefined ? {} : { threads: options.threads }),
        onProgress: (progress: ModelLoadProgress) => this.#emit({ type: 'model', progress }),
      }
      if (dedicated) return this.#tracked(await createWorkerEmbedder(settings))
      const { createTransformersEmbedder } = await importEmbedder()
      return this.#tracked(await createTransformersEmbedder(settings))
    })
    this.#embedder = loading
    loading.then(
      (embedder) =>
        this.#setEmbedderInfo({
          state: 'ready',
          model: embedder.id,
          device: embedder.device,
          ...(embedder.fallbackReason === undefined ? {} : { fallbackReason: embedder.fallbackReason }),
          ...(embedder.threads === undefined ? {} : { threads: embedder.threads }),
          batchSize: embedder.batchSize,
          dedicatedWorker: dedicated,
        }),
      (error: unknown) =>
        this.#setEmbedderInfo({ state: 'unavailable', error: error instanceof Error ? error.message : String(error) }),
    )
    return loading
  }

  /** The embedder with its calls counted (`#embedActivity`): the warm-up leaves the CPU to them. */
  #tracked<E extends Embedder>(embedder: E): E {
    const activity = this.#embedActivity
    return new Proxy(embedder, {
      get(target, prop) {
        if (prop === 'embed') return (...args: Parameters<Embedder['embed']>) => activity.track(() => target.embed(...args))
        const value: unknown = Reflect.get(target, prop, target)
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
      },
    })
  }

  #setEmbedderInfo(info: EmbedderInfo): void {
    this.#embedderInfo = info
    this.#emit({ type: 'embedder', info })
  }

  async #lead(): Promise<{ created: boolean; fromTemplate: boolean }> {
    this.#role = 'leader'
    const opening = this.#open()
    this.#opening = opening
    let opened: Awaited<typeof opening>
    try {
      opened = await opening
    } finally {
      this.#opening = undefined
    }
    this.#post({ type: 'leader-up', from: this.#id })
    this.#deliver({ type: 'role', role: 'leader' })
    // Calls this worker forwarded to the previous owner now run here, but for those it had
    // started: they may have been applied.
    const pending = [...this.#forwarded.values()]
    this.#forwarded.clear()
    for (const call of pending) {
      if (call.startedBy && !call.resend) call.reject(outcomeUnknown(this.#options?.name ?? ''))
      else this.#answer(call.path, call.args).then(call.resolve, call.reject)
    }
    return opened
  }

  #holdUntilClosed(): Promise<void> {
    // Closed while the database was opening: nothing waits to let it go.
    if (this.#closed) return this.#closeDatabase()
    const held = new Promise<void>((resolve) => {
      this.#release = resolve
    }).then(() => this.#closeDatabase())
    this.#leaderReady = held
    return held
  }

  #queueForTakeover(lockName: string): void {
    navigator.locks
      .request(lockName, { signal: this.#abortWait.signal }, async () => {
        if (this.#closed) return
        try {
          await this.#lead()
        } catch (error) {
          this.#failTakeover(error)
          return
        }
        await this.#holdUntilClosed()
      })
      .catch((error: unknown) => {
        if ((error as { name?: string }).name !== 'AbortError') console.error('engram: takeover failed', error)
      })
  }

  /**
   * A takeover that failed (the database would not open here): every call waiting on it and
   * every later one gets the error, and the lock goes to the next tab in line.
   */
  #failTakeover(error: unknown): void {
    console.error('engram: takeover failed', error)
    const failed = MemoryError.is(error)
      ? error
      : new MemoryError('STORAGE_UNAVAILABLE', `This tab could not take the memory over: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
    this.#failed = failed
    this.#role = 'private'
    this.#deliver({ type: 'role', role: 'private' })
    for (const call of this.#forwarded.values()) call.reject(failed)
    this.#forwarded.clear()
  }

  /**
   * A following tab works through the owner's engine: its workspace and vault must be those
   * this tab asked for, or its calls would resolve paths under another root, or read with a
   * key it was never given (`CONFLICT`, `WRONG_PASSPHRASE`).
   */
  async #checkOwnerFits(options: BootOptions): Promise<void> {
    const wanted = normalizeWorkspace(options.workspace)
    // Taken over meanwhile: this worker's own settings are the memory's.
    if (this.#role !== 'follower') return
    const owner = (await this.#forward(['workspace'], [], { resend: true })) as Workspace
    if (JSON.stringify(owner) !== JSON.stringify(wanted)) {
      throw new MemoryError(
        'CONFLICT',
        `Memory "${options.name}" is open in another tab with workspace ${JSON.stringify(owner)}, not ${JSON.stringify(wanted)}: open it with the same workspace.`,
        { details: { owner, wanted } },
      )
    }
    // Every tab holds the key or none does: a tab that takes over opens the vault as it was.
    if (this.#role !== 'follower') return
    const key = options.settings?.vault
    const status = (await this.#forward(key === undefined ? ['vault', 'status'] : ['vault', 'check'], key === undefined ? [] : [key], {
      resend: true,
    })) as VaultStatus
    if (key === undefined && status === 'open') {
      throw new MemoryError(
        'CONFLICT',
        `Memory "${options.name}" is open in another tab with its vault key: open it here with the key too.`,
        { details: { owner: status } },
      )
    }
    if (key !== undefined && status !== 'open') {
      throw new MemoryError(
        'CONFLICT',
        `Memory "${options.name}" is open in another tab ${status === 'none' ? 'without a vault' : 'without its vault key'}: open it there with the vault, or close it there first.`,
        { details: { owner: status } },
      )
    }
  }

  async #waitForLeader(): Promise<void> {
    // The owner answers only once its database is open; its model state is this page's too
    // (later changes arrive as events, after this answer).
    const info = (await this.#forward(OWNER_EMBEDDER_INFO, [], { resend: true })) as EmbedderInfo
    // Having taken over meanwhile, this worker keeps its own model state.
    if (this.#role === 'follower') this.#embedderInfo = info
  }

  /** Runs a call that another worker forwarded, or that this one forwarded before it took over. */
  #answer(path: Path, args: unknown[]): Promise<unknown> {
    if (path.length === 1 && path[0] === OWNER_EMBEDDER_INFO[0]) return Promise.resolve(this.embedderInfo())
    return this.#run(path, args)
  }

  /** Sends a call to the owner; `resend`: a read, sent to the next owner even once started. */
  #forward(path: Path, args: unknown[], { resend = false }: { resend?: boolean } = {}): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const id = crypto.randomUUID()
      this.#forwarded.set(id, { path, args, resolve, reject, resend })
      this.#post({ type: 'call', id, from: this.#id, path, args })
    })
  }

  #post(message: ChannelMessage): void {
    try {
      this.#channel?.postMessage(message)
    } catch (error) {
      // A closed channel: this worker has closed, and nobody waits on it any more.
      if (!this.#closed) throw error
    }
  }

  /** Answers a forwarded call; an answer that cannot cross (not cloneable) is sent as the error it is. */
  #reply(id: string, to: string, outcome: Answer): void {
    try {
      this.#post({ type: 'reply', id, to, ...outcome })
    } catch (error) {
      const failed = new MemoryError('INTERNAL', `The answer could not be sent to the other tab: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      })
      this.#post({ type: 'reply', id, to, ok: false, error: toWire(failed) })
    }
  }

  #onMessage(message: ChannelMessage): void {
    switch (message.type) {
      case 'call': {
        if (!this.#engine || this.#role !== 'leader' || this.#closed) return
        const key = `${message.from}:${message.id}`
        let answer = this.#answering.get(key)
        if (!answer) {
          this.#post({ type: 'started', id: message.id, to: message.from, from: this.#id })
          answer = this.#answer(message.path, message.args).then(
            (value): Answer => ({ ok: true, value }),
            (error: unknown): Answer => ({ ok: false, error: toWire(error) }),
          )
          this.#answering.set(key, answer)
          void answer.then(() => setTimeout(() => this.#answering.delete(key), ANSWER_KEPT_MS))
        }
        void answer.then((outcome) => this.#reply(message.id, message.from, outcome))
        return
      }
      case 'started': {
        if (message.to !== this.#id) return
        const call = this.#forwarded.get(message.id)
        if (call) call.startedBy = message.from
        return
      }
      case 'reply': {
        if (message.to !== this.#id) return
        const call = this.#forwarded.get(message.id)
        if (!call) return
        this.#forwarded.delete(message.id)
        if (message.ok) call.resolve(message.value)
        else call.reject(fromWire(message.error))
        return
      }
      case 'event': {
        // The owner's indexing progress, errors and model state, for this page too.
        if (this.#role !== 'follower') return
        if (message.event.type === 'embedder') this.#embedderInfo = message.event.info
        this.#deliver(message.event)
        return
      }
      case 'leader-up': {
        // A new owner: resend what the previous one never started (the new one answers once
        // what it has started already), and tell it this page listens. A call the previous
        // owner started and never answered may have been applied: sent again, it could run
        // twice, so it fails, saying so.
        for (const [id, call] of this.#forwarded) {
          if (call.startedBy === message.from) continue
          if (call.startedBy && !call.resend) {
            this.#forwarded.delete(id)
            call.reject(outcomeUnknown(this.#options?.name ?? ''))
            continue
          }
          this.#post({ type: 'call', id, from: this.#id, path: call.path, args: call.args })
        }
        if (this.#pageTelemetry) this.#post({ type: 'telemetry-wish', from: this.#id, on: true })
        return
      }
      case 'telemetry-wish': {
        if (message.on) this.#followerTelemetry.add(message.from)
        else this.#followerTelemetry.delete(message.from)
        this.#syncTelemetry()
        return
      }
    }
  }

  async #closeDatabase(): Promise<void> {
    const engine = this.#engine
    this.#stopTelemetry?.()
    this.#stopTelemetry = undefined
    this.#engine = undefined
    const warmUp = this.#warmUp
    this.#warmUp = undefined
    warmUp?.stop.abort()
    await warmUp?.running
    await engine?.stopIndexing()
    // Calls already queued finish before the database closes under them.
    await this.#db?.close()
    this.#db = undefined
    const pg = this.#pg
    this.#pg = undefined
    if (pg && !pg.closed) await pg.close()
    const embedder = this.#embedder
    this.#embedder = undefined
    // A model still loading may take long; it is released whenever it is done.
    void embedder?.then((e) => e.dispose()).catch(() => {})
  }
}

/** Whether an error is WebAssembly failing to compile, link or run (Emscripten's abort included). */
function isWebAssemblyFailure(reason: unknown): boolean {
  if (typeof WebAssembly === 'undefined') return false
  if (reason instanceof WebAssembly.CompileError || reason instanceof WebAssembly.LinkError || reason instanceof WebAssembly.RuntimeError) {
    return true
  }
  return /CompileError|WebAssembly/.test(String(reason))
}
