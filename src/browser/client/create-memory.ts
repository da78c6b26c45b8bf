import { proxy, type Remote, wrap } from 'comlink'
import type {
  BootInfo,
  EmbedderBootOptions,
  EmbedderInfo,
  HostEvent,
  StorageInfo,
  WorkerApi,
} from '../../../workers/memory.worker.ts'
import type { Engine, EngineSettings } from '../../core/engine.ts'
import { ENGINE_SETTING_NAMES, type MemorySettings } from '../../core/settings.ts'
import { MemoryError } from '../../core/kernel/errors.ts'
import { checkArgumentDepth, checkOptionNames, type ListsEveryKey } from '../../core/kernel/input-walk.ts'
import type { EngineErrorEvent, IndexStatus } from '../../core/maintenance/indexer.ts'
import type { TelemetryEvent } from '../../core/kernel/telemetry.ts'
import type { ModelLoadProgress } from '../../embed/transformers-embedder.ts'
import { checkMemoryName, checkStorage, type StorageKind } from '../storage/storage.ts'
import { installErrorTransfer } from '../../protocol/wire-errors.ts'

export type { EmbedderBootOptions, EmbedderInfo, EngineErrorEvent, IndexStatus, ModelLoadProgress, StorageKind }

/**
 * What `createMemory` takes: the memory's settings that can cross to its worker, and how to
 * start that worker. Invalid settings fail the boot with `INVALID_INPUT`.
 */
export interface CreateMemoryOptions extends EngineSettings, Pick<MemorySettings, 'workspace' | 'cacheMB'> {
  /** Selects the memory; one database per name. Default `'default'`. */
  name?: string
  /**
   * Where the database lives. Default `'auto'`: OPFS where the worker can use it, else
   * IndexedDB. `'memory'` keeps nothing after close.
   */
  storage?: StorageKind | 'auto'
  /** Ask the browser to keep this origin's storage under pressure (`navigator.storage.persist()`). */
  persist?: boolean
  /**
   * A pre-built data directory to start new memories from, instead of running initdb in the
   * browser (seconds faster). Default: the template shipped with Engram. `false` disables it.
   */
  templateUrl?: string | URL | false
  /**
   * The worker to host the engine. Pass your own for strict CSPs or webviews (e.g. a
   * `blob:` worker). Default: the bundled `workers/memory.worker.ts`.
   */
  worker?: Worker | (() => Worker)
  /**
   * Turns the worker rehearses (and rolls back) once the memory is open and a moment has
   * passed without calls, so that the first real turns run at full speed (`warmUp()` on the
   * engine). 0–200, default 20; 0 turns it off. It stops at the first real write.
   */
  warmUp?: number
  /** A boot that has not answered by then rejects with BOOT_TIMEOUT. Default 30 s; `Infinity` waits for ever. */
  bootTimeoutMs?: number
  /**
   * The embedding model. Default `{ kind: 'bundled' }`: all-MiniLM-L6-v2 (int8), loaded in
   * the worker after the database opens (WebGPU when granted, else WASM) from the
   * `models/` and `ort/` folders served next to the worker script. `{ kind: 'none' }`:
   * keyword search only.
   */
  embedder?: EmbedderBootOptions
}

/** Every option `createMemory` takes: any other is refused, so a misspelt one never goes unnoticed. */
const CREATE_MEMORY_OPTIONS = [
  'name',
  'storage',
  'persist',
  'templateUrl',
  'workspace',
  'worker',
  'cacheMB',
  'warmUp',
  'bootTimeoutMs',
  'embedder',
  ...ENGINE_SETTING_NAMES,
] as const satisfies readonly (keyof CreateMemoryOptions)[]
const _everyCreateOption: ListsEveryKey<CreateMemoryOptions, typeof CREATE_MEMORY_OPTIONS> = true

/** The engine's API as the page sees it: the same names, every call async. */
export type ClientOf<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : T[K] extends object
      ? ClientOf<T[K]>
      : never
}

/** Names of the engine's subscriptions, which the page gets as local event listeners instead. */
type EngineSubscriptions = 'onIndexProgress' | 'onError' | 'telemetry'

export type Memory = Omit<ClientOf<Engine>, EngineSubscriptions | 'stats'> & {
  /** The engine's `stats()`, plus where the memory lives and the origin's storage usage and quota. */
  stats(): Promise<Awaited<ReturnType<Engine['stats']>> & { storage: StorageInfo }>
  /**
   * Resolves when the worker has opened the database; rejects with the boot error. Its `role`
   * follows the tab's role: a follower that takes over becomes `leader`.
   */
  readonly ready: Promise<BootInfo>
  /**
   * Model loading progress (files read, bytes) and its outcome. Returns the unsubscribe
   * function.
   *
   * @example
   * memory.onProgress((p) => { if (p.stage === 'progress') bar.value = p.loaded / p.total })
   */
  onProgress(listener: (progress: ModelLoadProgress) => void): () => void
  /** Background indexing progress after each batch; see `indexing()`. Returns the unsubscribe function. */
  onIndexProgress(listener: (status: IndexStatus) => void): () => void
  /**
   * Failures away from any call: `MODEL_UNAVAILABLE` when the model cannot load (the memory
   * then works keyword-only) or a background batch failing. Returns the unsubscribe function.
   */
  onError(listener: (error: EngineErrorEvent) => void): () => void
  /**
   * What the engine does as it happens (see `TelemetryEvent`), delivered on the page; the
   * worker sends it only while a listener is subscribed. Returns the unsubscribe function.
   *
   * @example
   * const stop = memory.telemetry.subscribe((e) => metrics.observe(e.detail?.method, e.detail?.ms))
   */
  telemetry: { subscribe(listener: (event: TelemetryEvent) => void): () => void }
  /** Where the embedding model stands: loading, ready (on which device), unavailable or none. */
  embedderInfo(): Promise<EmbedderInfo>
  /** Closes the database and terminates the worker; pending calls reject with CLOSED. */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** The most `setTimeout` waits; `Infinity` waits for ever. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1

function checkBootTimeout(ms: unknown): number {
  if (ms === undefined) return 30_000
  if (ms === Infinity) return ms
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_TIMEOUT_MS) {
    throw new MemoryError('INVALID_INPUT', `bootTimeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}, or Infinity.`)
  }
  return ms
}

function defaultTemplateUrl(): string {
  return new URL('../../../assets/pgdata-template.tar.gz', import.meta.url).href
}

function defaultWorker(): Worker {
  return new Worker(new URL('../../../workers/memory.worker.ts', import.meta.url), {
    type: 'module',
    name: 'engram',
  })
}

/**
 * Starts the worker and returns the client at once; calls made before the worker is ready
 * wait for it. Prefer {@link createMemory}, which also waits for the boot to succeed.
 */
export function connectMemory(options: CreateMemoryOptions = {}): Memory {
  installErrorTransfer()
  checkOptionNames(options, CREATE_MEMORY_OPTIONS, 'createMemory')
  const name = checkMemoryName(options.name ?? 'default')
  const storage = checkStorage(options.storage ?? 'auto')
  const bootTimeoutMs = checkBootTimeout(options.bootTimeoutMs)
  const templateUrl = options.templateUrl === false ? undefined : String(options.templateUrl ?? defaultTemplateUrl())
  if (options.persist && typeof navigator.storage?.persist === 'function') {
    navigator.storage.persist().catch(() => {})
  }
  const worker = typeof options.worker === 'function' ? options.worker() : (options.worker ?? defaultWorker())
  const remote: Remote<WorkerApi> = wrap<WorkerApi>(worker)
  const pending = new Set<(error: MemoryError) => void>()
  let dead: MemoryError | undefined

  const fail = (error: MemoryError) => {
    if (dead) return
    dead = error
    worker.terminate()
    for (const reject of pending) reject(error)
    pending.clear()
  }
  const track = <T>(promise: Promise<T>): Promise<T> => {
    if (dead) return Promise.reject(dead)
    return new Promise<T>((resolve, reject) => {
      pending.add(reject)
      promise.then(resolve, reject).finally(() => pending.delete(reject))
    })
  }

  worker.addEventListener('error', (event) => {
    event.preventDefault()
    fail(
      new MemoryError(
        'WORKER_TERMINATED',
        `The memory worker failed: ${event.message || 'script error'}. Check that the worker script loads and the page's CSP allows 'wasm-unsafe-eval' and blob: workers.`,
      ),
    )
  })
  worker.addEventListener('messageerror', () =>
    fail(new MemoryError('WORKER_TERMINATED', 'The memory worker sent a message that could not be read.')),
  )

  // One proxy carries every worker event; the page fans them out to its listeners.
  const listeners = {
    model: new Set<(progress: ModelLoadProgress) => void>(),
    index: new Set<(status: IndexStatus) => void>(),
    error: new Set<(error: EngineErrorEvent) => void>(),
    telemetry: new Set<(event: TelemetryEvent) => void>(),
  }
  const deliver = <T>(set: Set<(value: T) => void>, value: T) => {
    for (const listener of set) {
      try {
        listener(value)
      } catch (error) {
        console.error('engram: a memory event listener threw', error)
      }
    }
  }
  const onEvent = (event: HostEvent) => {
    if (event.type === 'model') deliver(listeners.model, event.progress)
    else if (event.type === 'index') deliver(listeners.index, event.status)
    else if (event.type === 'error') deliver(listeners.error, event.error)
    else if (event.type === 'telemetry') deliver(listeners.telemetry, event.event)
    // `ready`'s BootInfo keeps the tab's current role: a follower that took over says so.
    else if (event.type === 'role') void ready.then((info) => (info.role = event.role)).catch(() => {})
  }
  void remote.listen(proxy(onEvent)).catch(() => {})
  const subscribe =
    <T>(set: Set<(value: T) => void>) =>
    (listener: (value: T) => void): (() => void) => {
      if (typeof listener !== 'function') throw new MemoryError('INVALID_INPUT', 'A memory event listener must be a function.')
      set.add(listener)
      return () => {
        set.delete(listener)
      }
    }

  let timer: ReturnType<typeof setTimeout> | undefined
  // Options that cannot cross to the worker (a function in the workspace, say) are bad input.
  const bootWith = (boot: Parameters<WorkerApi['boot']>[0]) =>
    remote.boot(boot).catch((error: unknown) => {
      throw uncloneable(['boot'], [boot], error) ?? error
    })
  const ready = track(
    Promise.race([
      bootWith({
        name,
        storage,
        ...(templateUrl ? { templateUrl } : {}),
        ...(options.workspace ? { workspace: options.workspace } : {}),
        ...(options.embedder ? { embedder: options.embedder } : {}),
        ...(options.cacheMB === undefined ? {} : { cacheMB: options.cacheMB }),
        ...(options.warmUp === undefined ? {} : { warmUp: options.warmUp }),
        settings: {
          ...(options.scoring === undefined ? {} : { scoring: options.scoring }),
          ...(options.dedupThreshold === undefined ? {} : { dedupThreshold: options.dedupThreshold }),
          ...(options.indexing === undefined ? {} : { indexing: options.indexing }),
          ...(options.indexingPause === undefined ? {} : { indexingPause: options.indexingPause }),
          ...(options.statistics === undefined ? {} : { statistics: options.statistics }),
          ...(options.vault === undefined ? {} : { vault: options.vault }),
        },
      }),
      new Promise<never>((_, reject) => {
        if (bootTimeoutMs === Infinity) return
        timer = setTimeout(() => {
          const error = new MemoryError(
            'BOOT_TIMEOUT',
            `The memory worker did not start within ${bootTimeoutMs} ms. A Content-Security-Policy without 'wasm-unsafe-eval' or connect-src 'self' makes the database hang; so does storage held by another process.`,
          )
          reject(error)
          fail(error)
        }, bootTimeoutMs)
      }),
    ]),
  ).finally(() => clearTimeout(timer))
  // A boot that failed (a wrong passphrase, say) ends the worker: nothing is left running.
  ready.catch((error: unknown) =>
    fail(MemoryError.is(error) ? error : new MemoryError('WORKER_TERMINATED', `The memory did not start: ${String(error)}`, { cause: error })),
  )

  const invoke = async (path: string[], args: unknown[]): Promise<unknown> => {
    // Cloning arguments nested too deep overflows the stack: refused here, as the engine would.
    checkArgumentDepth(path.join('.'), args)
    await ready
    try {
      return await track(remote.call(path, args))
    } catch (error) {
      throw uncloneable(path, args, error) ?? error
    }
  }

  let closing: Promise<void> | undefined
  // A second close waits for the first.
  const close = () =>
    (closing ??= (async () => {
      if (dead) return
      try {
        await track(ready.then(() => remote.close()))
      } catch {
        // A memory that never booted has nothing to close.
      }
      fail(new MemoryError('CLOSED', 'The memory was closed.'))
    })())

  const node = (path: string[]): unknown =>
    new Proxy(() => {}, {
      get(_, key) {
        if (typeof key === 'symbol' || key === 'then') return undefined
        return node([...path, key])
      },
      apply(_, __, args: unknown[]) {
        return invoke(path, args)
      },
    })

  // The worker sends telemetry only while this page has a listener for it.
  const telemetry = {
    subscribe(listener: (event: TelemetryEvent) => void): () => void {
      if (typeof listener !== 'function') throw new MemoryError('INVALID_INPUT', 'telemetry.subscribe needs a function')
      listeners.telemetry.add(listener)
      if (listeners.telemetry.size === 1) void track(ready.then(() => remote.watchTelemetry(true))).catch(() => {})
      return () => {
        if (!listeners.telemetry.delete(listener) || listeners.telemetry.size > 0 || dead) return
        void track(ready.then(() => remote.watchTelemetry(false))).catch(() => {})
      }
    },
  }

  const root = {
    ready,
    close,
    telemetry,
    [Symbol.asyncDispose]: close,
    onProgress: subscribe(listeners.model),
    onIndexProgress: subscribe(listeners.index),
    onError: subscribe(listeners.error),
    embedderInfo: () => track(remote.embedderInfo()),
  }
  return new Proxy(root, {
    get(target, key) {
      if (key in target) return target[key as keyof typeof target]
      if (typeof key === 'symbol' || key === 'then') return undefined
      return node([key])
    },
  }) as unknown as Memory
}

/**
 * Arguments cross to the worker by structured clone, which refuses functions, symbols and
 * some objects: that is bad input, and says so as INVALID_INPUT. Null for any other failure.
 */
function uncloneable(path: string[], args: unknown[], error: unknown): MemoryError | null {
  if (!(error instanceof Error) || error.name !== 'DataCloneError') return null
  try {
    structuredClone(args)
    return null
  } catch {
    return new MemoryError(
      'INVALID_INPUT',
      `Invalid arguments to ${path.join('.')}: ${error.message} Arguments cross to the worker by structured clone: plain data only, no functions or symbols.`,
      { cause: error },
    )
  }
}

/**
 * Opens a memory in a Web Worker and resolves once it is ready.
 *
 * @example
 * const memory = await createMemory({ name: 'my-agent' })
 * console.log(await memory.ping())
 * await memory.close()
 */
export async function createMemory(options: CreateMemoryOptions = {}): Promise<Memory> {
  const memory = connectMemory(options)
  await memory.ready
  return memory
}
