import { MemoryError } from '../core/kernel/errors.ts'

/** Where the embedder runs, detected once at startup and passed down. */
export interface EmbedEnvironment {
  runtime: 'node' | 'worker' | 'window'
  /** A WebGPU adapter was granted (`navigator.gpu.requestAdapter()` returned one). */
  webgpu: boolean
  /**
   * The adapter granted is a software fallback (`GPUAdapterInfo.isFallbackAdapter`, such as
   * Chromium's SwiftShader): it runs the model on the CPU, far slower than the WASM backend.
   */
  softwareWebgpu?: boolean
  /** SharedArrayBuffer is usable, so the WASM backend may run multi-threaded. */
  crossOriginIsolated: boolean
}

export type EmbedDevice = 'webgpu' | 'wasm' | 'cpu'

interface GpuLike {
  requestAdapter(): Promise<AdapterLike | null>
}

interface AdapterLike {
  info?: { isFallbackAdapter?: boolean }
  /** Where browsers had it before `GPUAdapterInfo` carried it. */
  isFallbackAdapter?: boolean
}

/**
 * Looks at the current global scope. Call once (it asks for a GPU adapter) and keep the
 * result; `chooseDevice` turns it into a device.
 *
 * @example
 * const device = chooseDevice(await detectEmbedEnvironment())
 */
export async function detectEmbedEnvironment(): Promise<EmbedEnvironment> {
  const runtime = detectRuntime()
  const adapter = runtime === 'node' ? NO_ADAPTER : await webGpuAdapter()
  return { runtime, ...adapter, crossOriginIsolated: globalThis.crossOriginIsolated === true }
}

const NO_ADAPTER = { webgpu: false, softwareWebgpu: false } as const

/** Node, a worker or a page, from the global scope alone (no `typeof window` guessing). */
export function detectRuntime(): EmbedEnvironment['runtime'] {
  const scope = globalThis as typeof globalThis & {
    process?: { versions?: { node?: string } }
    WorkerGlobalScope?: abstract new () => unknown
    document?: unknown
  }
  if (scope.WorkerGlobalScope !== undefined && scope instanceof scope.WorkerGlobalScope) return 'worker'
  if (scope.document !== undefined) return 'window'
  return scope.process?.versions?.node !== undefined ? 'node' : 'worker'
}

async function webGpuAdapter(): Promise<Pick<EmbedEnvironment, 'webgpu' | 'softwareWebgpu'>> {
  const gpu = (globalThis.navigator as (Navigator & { gpu?: GpuLike }) | undefined)?.gpu
  if (!gpu) return NO_ADAPTER
  try {
    const adapter = await gpu.requestAdapter()
    if (adapter == null) return NO_ADAPTER
    return { webgpu: true, softwareWebgpu: adapter.info?.isFallbackAdapter === true || adapter.isFallbackAdapter === true }
  } catch {
    // A browser may expose navigator.gpu and still refuse (blocklisted driver, policy).
    return NO_ADAPTER
  }
}

/**
 * The device to ask Transformers.js for: the native CPU runtime in Node, WebGPU in a
 * browser that granted a hardware adapter, WASM otherwise — also when the only adapter is a
 * software fallback, on which the model embedded 3.3 sentences/s against WASM's 84/s in the
 * same run (`npm run bench`, bench/HISTORY.md).
 *
 * @example
 * chooseDevice({ runtime: 'worker', webgpu: false, crossOriginIsolated: false }) // 'wasm'
 * chooseDevice({ runtime: 'worker', webgpu: true, softwareWebgpu: true, crossOriginIsolated: true }) // 'wasm'
 */
export function chooseDevice(env: EmbedEnvironment): EmbedDevice {
  if (env.runtime === 'node') return 'cpu'
  return env.webgpu && env.softwareWebgpu !== true ? 'webgpu' : 'wasm'
}

/** Most WASM threads Engram starts by default: onnxruntime-web gains little past four. */
export const DEFAULT_MAX_WASM_THREADS = 4
/** Largest `threads` an embedder accepts. */
export const MAX_WASM_THREADS = 16

/**
 * Threads for onnxruntime-web's WASM backend. More than one needs SharedArrayBuffer, which a
 * browser grants only to a cross-origin isolated page and its workers
 * (`Cross-Origin-Opener-Policy: same-origin`, `Cross-Origin-Embedder-Policy: require-corp`).
 * Without it, or in Node (whose CPU runtime picks its own), the answer is 1; otherwise
 * `requested`, by default every core up to four (onnxruntime-web's own default is half the
 * cores, one on a 2-core machine). `requested` is an upper bound in effect: one setting suits
 * isolated and plain pages.
 *
 * @example
 * chooseWasmThreads({ runtime: 'worker', webgpu: false, crossOriginIsolated: true }, 8) // 4
 * chooseWasmThreads({ runtime: 'worker', webgpu: false, crossOriginIsolated: false }, 8, 4) // 1
 */
export function chooseWasmThreads(env: EmbedEnvironment, cores: number, requested?: number): number {
  if (env.runtime === 'node' || !env.crossOriginIsolated) return 1
  const available = Number.isInteger(cores) && cores > 0 ? cores : 1
  return requested ?? Math.min(DEFAULT_MAX_WASM_THREADS, available)
}

/** `threads` must be a whole number from 1 to 16 when given. */
export function checkThreads(threads: number | undefined): void {
  if (threads === undefined) return
  if (!Number.isInteger(threads) || threads < 1 || threads > MAX_WASM_THREADS) {
    throw new MemoryError('INVALID_INPUT', `threads must be a whole number from 1 to ${MAX_WASM_THREADS}, got ${String(threads)}`)
  }
}
