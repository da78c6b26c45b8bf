import type * as TransformersJs from '@huggingface/transformers'
import type { FeatureExtractionPipeline, ProgressInfo } from '@huggingface/transformers'
import { MemoryError } from '../core/kernel/errors.ts'
import type { Embedder, EmbedOptions } from './embedder.ts'
import { throwIfAborted } from './embedder.ts'
import {
  chooseDevice,
  checkThreads,
  chooseWasmThreads,
  detectEmbedEnvironment,
  type EmbedDevice,
} from './environment.ts'

/** The model built into `models/` by `scripts/build-model.mjs` and shipped with Engram. */
export const BUNDLED_MODEL = 'all-MiniLM-L6-v2'

/** The package's `models/` folder, relative to this module (the library build rewrites it). */
const MODELS_FOLDER = '../../models/'

export interface ModelLoadProgress {
  /** `total` is the sum over all files; the others are about one file. */
  stage: 'initiate' | 'download' | 'progress' | 'done' | 'ready' | 'total'
  /** Bytes read so far (0 when not known yet). */
  loaded: number
  /** Bytes expected (0 when not known yet). */
  total: number
  /** File inside the model folder, e.g. `onnx/model_quantized.onnx`; the model name for `ready`. */
  file: string
}

export interface TransformersEmbedderOptions {
  /**
   * The model folder (a file path in Node, a URL or URL path in a browser) holding
   * `config.json`, `tokenizer.json`, `tokenizer_config.json` and `onnx/model[_quantized].onnx`.
   * Defaults to the bundled `models/all-MiniLM-L6-v2` next to Engram's sources.
   */
  modelPath?: string
  /**
   * A Hugging Face Hub model id such as `Xenova/all-MiniLM-L6-v2`, loaded from the
   * Transformers.js cache, or downloaded when `allowRemote` is true. Replaces `modelPath`.
   */
  modelId?: string
  /** int8 weights (`onnx/model_quantized.onnx`, the default) or fp32 (`onnx/model.onnx`). */
  quantized?: boolean
  /** `auto` (the default) detects the environment and applies `chooseDevice`. */
  device?: EmbedDevice | 'auto'
  /** Allow network downloads of `modelId`. Off by default: Engram works offline. */
  allowRemote?: boolean
  /**
   * Texts per model call. Default: `WASM_BATCH_SIZE` (16) on WASM, `DEFAULT_BATCH_SIZE` (32)
   * on WebGPU and Node's CPU runtime. A batch pads every text to its longest one.
   */
  batchSize?: number
  /**
   * Most threads for the WASM backend (1–16). Default: every core up to four. More than one
   * runs only on a cross-origin isolated page or in its workers (see `chooseWasmThreads`);
   * elsewhere the model runs on one. onnxruntime-web fixes the count when its first session
   * starts, so the first embedder in a worker or page decides it. Node's CPU runtime picks its
   * own.
   */
  threads?: number
  /**
   * Where onnxruntime-web finds its `.wasm`/`.mjs` files in a browser. Transformers.js
   * otherwise fetches them from a CDN, which an offline app or a strict CSP forbids.
   */
  wasmPaths?: string | { mjs: string; wasm: string }
  onProgress?: (progress: ModelLoadProgress) => void
  /** Cancels loading with a MemoryError `ABORTED`. */
  signal?: AbortSignal
}

/** Texts per model call on WebGPU and Node's CPU runtime, unless `batchSize` says otherwise. */
export const DEFAULT_BATCH_SIZE = 32
/**
 * Texts per model call on WASM, unless `batchSize` says otherwise: in Chromium on 2 cores,
 * batches of 16 embedded ~7% more sentences per second than batches of 32, on one thread
 * and on two (docs/indexing-and-embeddings.md).
 */
export const WASM_BATCH_SIZE = 16

export interface TransformersEmbedder extends Embedder {
  /** The device actually in use (WebGPU falls back to WASM, or CPU in Node, when it fails to start). */
  readonly device: EmbedDevice
  /** Why WebGPU was abandoned, when it was. */
  readonly fallbackReason: string | undefined
  /** Threads the WASM backend runs on; undefined on WebGPU and in Node. */
  readonly threads: number | undefined
  /** Texts per model call (see `batchSize`). */
  readonly batchSize: number
  /** Frees the inference session. The embedder must not be used afterwards. */
  dispose(): Promise<void>
}

/**
 * Loads a sentence-embedding model with Transformers.js (mean pooling, L2 normalisation)
 * from local files only, unless told otherwise. Transformers.js is imported on first use so
 * apps that never embed do not ship it.
 *
 * Transformers.js keeps its settings in one global `env`; load embedders one at a time
 * when they use different folders.
 *
 * @example
 * const embedder = await createTransformersEmbedder({ modelPath: '/models/all-MiniLM-L6-v2' })
 * const [vector] = await embedder.embed(['fix the login bug'])
 * embedder.id // 'all-MiniLM-L6-v2/q8'
 */
export async function createTransformersEmbedder(
  options: TransformersEmbedderOptions = {},
): Promise<TransformersEmbedder> {
  const quantized = options.quantized ?? true
  if (options.batchSize !== undefined && (!Number.isInteger(options.batchSize) || options.batchSize < 1)) {
    throw new MemoryError('INVALID_INPUT', `batchSize must be a positive integer, got ${options.batchSize}`)
  }
  checkThreads(options.threads)
  const source = resolveSource(options)
  const requested = options.device ?? 'auto'
  const environment = await detectEmbedEnvironment()
  let device = requested === 'auto' ? chooseDevice(environment) : requested
  let fallbackReason: string | undefined
  if (device === 'webgpu' && requested === 'webgpu' && environment.runtime !== 'node' && !environment.webgpu) {
    // In a browser a failed WebGPU session poisons Transformers.js's session queue for good
    // (every later session rejects with the same error), so never try one without an adapter.
    fallbackReason = 'the browser granted no WebGPU adapter'
    device = 'wasm'
  }
  throwIfAborted(options.signal, 'Loading the embedding model')

  let transformers: typeof TransformersJs
  let ownRuntime = false
  try {
    if (environment.runtime !== 'node' && device === 'wasm') ownRuntime = await useWasmOnlyRuntime()
    transformers = await import('@huggingface/transformers')
  } catch (cause) {
    // An optional peer dependency of Engram's: a browser app gets it inside the embedding worker.
    throw new MemoryError(
      'MODEL_UNAVAILABLE',
      `Cannot load the embedding model: the @huggingface/transformers package could not be loaded (${errorMessage(cause)}). ` +
        'Install it beside Engram: npm install @huggingface/transformers',
      { cause, details: { model: source.name, where: source.where, device } },
    )
  }
  transformersLoaded = true
  const { env } = transformers
  env.allowRemoteModels = source.remote
  env.allowLocalModels = source.localModelPath !== undefined
  if (source.localModelPath !== undefined) env.localModelPath = source.localModelPath
  const wasm = env.backends.onnx.wasm
  if (options.wasmPaths !== undefined && wasm) wasm.wasmPaths = options.wasmPaths
  // Left unset, onnxruntime-web runs half the cores: one on a 2-core machine.
  if (wasm && environment.runtime !== 'node' && wasmThreadsFixed === undefined) {
    wasm.numThreads = chooseWasmThreads(environment, globalThis.navigator?.hardwareConcurrency ?? 1, options.threads)
  }

  const progress = progressReporter(options.onProgress)
  const restoreFetch = progress && environment.runtime !== 'node' ? fetchEachFileOnce(env) : () => {}
  const load = async (on: EmbedDevice) => {
    const extractor = await transformers.pipeline('feature-extraction', source.name, {
      dtype: quantized ? 'q8' : 'fp32',
      // Given a runtime, Transformers.js lists no devices of its own: name the provider instead.
      ...(ownRuntime && on === 'wasm' ? { device: 'auto', session_options: { executionProviders: ['wasm'] } } : { device: on }),
      local_files_only: !source.remote,
      ...(progress ? { progress_callback: progress } : {}),
    })
    try {
      // A WebGPU session can be created and still fail on its first run; find out now.
      const probe = await extractor('warm up', { pooling: 'mean', normalize: true })
      const dims = probe.dims.at(-1) ?? 0
      probe.dispose()
      if (dims < 1) throw new Error(`the model returned ${dims}-dimensional vectors`)
      return { extractor, dims }
    } catch (cause) {
      await extractor.dispose()
      throw cause
    }
  }

  let loaded: { extractor: FeatureExtractionPipeline; dims: number }
  let active = device
  try {
    try {
      loaded = await load(device)
    } catch (cause) {
      if (device !== 'webgpu') throw cause
      fallbackReason = errorMessage(cause)
      // Transformers.js offers WASM in browsers only; Node has its native CPU runtime.
      active = environment.runtime === 'node' ? 'cpu' : 'wasm'
      loaded = await load(active)
    }
  } catch (cause) {
    throw unavailable(source, active, cause)
  } finally {
    restoreFetch()
  }
  if (options.signal?.aborted) {
    await loaded.extractor.dispose()
    throwIfAborted(options.signal, 'Loading the embedding model')
  }

  const { extractor, dims } = loaded
  const batchSize = options.batchSize ?? (active === 'wasm' ? WASM_BATCH_SIZE : DEFAULT_BATCH_SIZE)
  // The first session in this scope started onnxruntime-web's WASM runtime with this count.
  if (environment.runtime !== 'node' && wasm) wasmThreadsFixed ??= wasm.numThreads ?? 1
  // One inference at a time: onnxruntime-web rejects overlapping runs on a session.
  let queue: Promise<unknown> = Promise.resolve()
  const embedBatches = async (texts: string[], embedOptions?: EmbedOptions) => {
    const vectors = new Array<Float32Array>(texts.length)
    // A batch pads every text to its longest one: batching texts of like length (longest
    // first) wastes less. A text's vector does not depend on its batch mates.
    const order = texts.map((_, i) => i).sort((a, b) => texts[b]!.length - texts[a]!.length || a - b)
    for (let start = 0; start < order.length; start += batchSize) {
      throwIfAborted(embedOptions?.signal, 'Embedding')
      const batch = order.slice(start, start + batchSize)
      const output = await extractor(batch.map((i) => texts[i]!), { pooling: 'mean', normalize: true })
      try {
        // Declared as any typed array; the pipeline's mean pooling yields float32.
        const data: unknown = output.data
        if (!(data instanceof Float32Array) || data.length !== batch.length * dims) {
          throw new MemoryError('INTERNAL', 'the model did not return one float32 vector per text')
        }
        for (const [row, i] of batch.entries()) vectors[i] = data.slice(row * dims, (row + 1) * dims)
      } finally {
        output.dispose()
      }
    }
    return vectors
  }

  return {
    id: `${source.label}/${quantized ? 'q8' : 'fp32'}`,
    dims,
    device: active,
    fallbackReason,
    threads: active === 'wasm' ? wasmThreadsFixed : undefined,
    batchSize,
    embed: (texts, embedOptions) => {
      const run = queue.then(() => embedBatches(texts, embedOptions))
      queue = run.catch(() => undefined)
      return run
    },
    dispose: async () => {
      await queue
      await extractor.dispose()
    },
  }
}

/** The key under which Transformers.js looks for an onnxruntime its host provides. */
const ORT_SYMBOL = Symbol.for('onnxruntime')

/**
 * Hands Transformers.js onnxruntime-web's WASM-only build before it loads. Its own import is
 * the WebGPU build, whose runtime (asyncify, 26.9 MB) made a session in 5.7 s and ran batches
 * 1.7× slower than the WASM-only one (14.3 MB, 2.8 s) in Chromium on 2 cores (docs/BENCHMARKS.md).
 * Transformers.js reads the runtime once, when it first loads: a later WebGPU embedder in the
 * same scope falls back to WASM with the reason.
 */
async function useWasmOnlyRuntime(): Promise<boolean> {
  const scope = globalThis as Record<symbol, unknown>
  if (!transformersLoaded && scope[ORT_SYMBOL] === undefined) scope[ORT_SYMBOL] = await import('onnxruntime-web/wasm')
  return scope[ORT_SYMBOL] !== undefined
}

/** Whether this scope has imported Transformers.js (which then keeps the runtime it found). */
let transformersLoaded = false

/** The WASM thread count onnxruntime-web started with; it holds for every later session. */
let wasmThreadsFixed: number | undefined

/**
 * While a model loads with progress reporting, Transformers.js fetches every file twice at
 * once (first only to learn its size, never reading the body). Chromium then fails the
 * second download of the large ONNX file with ERR_CACHE_WRITE_FAILURE. One request per
 * URL, handed out as clones, avoids that and halves the traffic. Returns the undo.
 *
 * A response without a length (a server that compresses the model, such as `vite preview`)
 * is read whole here: Transformers.js would grow its buffer by copying it at every chunk,
 * which took seconds for the 23.6 MB model. It then sees the length and reads in one pass.
 */
function fetchEachFileOnce(env: { fetch: (input: string | URL, init?: unknown) => Promise<unknown> }): () => void {
  const original = env.fetch
  const responses = new Map<string, Promise<unknown>>()
  env.fetch = (input, init) => {
    const key = String(input)
    let response = responses.get(key)
    if (!response) {
      response = original(input, init).then(withLength)
      responses.set(key, response)
    }
    return response.then((r) => (r instanceof Response ? r.clone() : r))
  }
  return () => {
    env.fetch = original
    responses.clear()
  }
}

/** The response itself when it states its length; otherwise its body read once, with the length. */
export async function withLength(response: unknown): Promise<unknown> {
  if (!(response instanceof Response) || !response.ok || response.body === null || response.headers.has('content-length')) {
    return response
  }
  const body = await response.arrayBuffer()
  const headers = new Headers(response.headers)
  headers.delete('content-encoding')
  headers.set('content-length', String(body.byteLength))
  return new Response(body, { status: response.status, statusText: response.statusText, headers })
}

export interface ModelSource {
  /** What Transformers.js is asked to load: a folder name under `localModelPath`, or a Hub id. */
  name: string
  localModelPath: string | undefined
  remote: boolean
  /** Stable part of the embedder id. */
  label: string
  /** Where it was looked for, for error messages. */
  where: string
}

/** Where `options` says the model is: what Transformers.js is asked to load, and from where. */
export function resolveSource(options: TransformersEmbedderOptions): ModelSource {
  if (options.modelId !== undefined) {
    const remote = options.allowRemote === true
    return {
      name: options.modelId,
      localModelPath: undefined,
      remote,
      label: options.modelId,
      where: remote ? `the Hugging Face Hub (${options.modelId})` : `the Transformers.js cache (${options.modelId})`,
    }
  }
  const folder = sameOriginPath(options.modelPath ?? defaultModelPath()).replace(/[\\/]+$/, '')
  const cut = Math.max(folder.lastIndexOf('/'), folder.lastIndexOf('\\'))
  const name = folder.slice(cut + 1)
  return {
    name,
    localModelPath: cut < 0 ? './' : folder.slice(0, cut + 1),
    remote: false,
    label: name,
    where: folder,
  }
}

/**
 * A same-origin `http(s):` URL as a root-relative path. Transformers.js 4.3 checks that a
 * local file exists only when the local model path is not a URL; given a URL it decides the
 * tokenizer is missing and loads a pipeline that cannot tokenize.
 */
function sameOriginPath(folder: string): string {
  const here = (globalThis as { location?: { origin?: string } }).location?.origin
  if (!here || !/^https?:\/\//i.test(folder)) return folder
  const url = new URL(folder)
  return url.origin === here ? url.pathname : folder
}

/**
 * The bundled folder, found from this module's own location: a file path in Node, a URL
 * in a browser. Built from a variable so bundlers do not try to inline the folder.
 */
function defaultModelPath(): string {
  const url = new URL(MODELS_FOLDER + BUNDLED_MODEL, import.meta.url)
  if (url.protocol !== 'file:') return url.href
  const path = decodeURIComponent(url.pathname)
  return /^\/[A-Za-z]:/.test(path) ? path.slice(1) : path
}

function progressReporter(onProgress: TransformersEmbedderOptions['onProgress']) {
  if (!onProgress) return undefined
  const totals = new Map<string, number>()
  return (info: ProgressInfo) => {
    switch (info.status) {
      case 'initiate':
      case 'download':
        onProgress({ stage: info.status, loaded: 0, total: totals.get(info.file) ?? 0, file: info.file })
        break
      case 'progress':
        totals.set(info.file, info.total)
        onProgress({ stage: 'progress', loaded: info.loaded, total: info.total, file: info.file })
        break
      case 'done': {
        const total = totals.get(info.file) ?? 0
        onProgress({ stage: 'done', loaded: total, total, file: info.file })
        break
      }
      case 'ready':
        onProgress({ stage: 'ready', loaded: 0, total: 0, file: info.model })
        break
      case 'progress_total':
        onProgress({ stage: 'total', loaded: info.loaded, total: info.total, file: '' })
        break
    }
  }
}

function unavailable(source: ModelSource, device: EmbedDevice, cause: unknown, reason?: string): MemoryError {
  const why = (reason ?? errorMessage(cause)).replace(/[.\s]+$/, '')
  const fix = source.localModelPath
    ? `Check that the folder holds config.json, tokenizer.json, tokenizer_config.json and onnx/*.onnx ` +
      `(for the bundled model run \`node scripts/build-model.mjs\`), or pass modelPath.`
    : source.remote
      ? 'Check the network connection and the model id.'
      : 'Pass allowRemote: true to download it, or modelPath to load a local folder.'
  return new MemoryError('MODEL_UNAVAILABLE', `Cannot load the embedding model from ${source.where}: ${why}. ${fix}`, {
    cause,
    details: { model: source.name, where: source.where, device },
  })
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
