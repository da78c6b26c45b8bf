import { MemoryError } from '../core/errors.ts'

/** Where the embedder runs, detected once at startup and passed down. */
export interface EmbedEnvironment {
  runtime: 'node' | 'worker' | 'window'
  /** A WebGPU adapter was granted (`navigator.gpu.requestAdapter()` returned one). */
  webgpu: boolean
  /** SharedArrayBuffer is usable, so the WASM backend may run multi-threaded. */
  crossOriginIsolated: boolean
}

export type EmbedDevice = 'webgpu' | 'wasm' | 'cpu'

interface GpuLike {
  requestAdapter(): Promise<unknown>
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
  return {
    runtime,
    webgpu: runtime === 'node' ? false : await hasWebGpuAdapter(),
    crossOriginIsolated: globalThis.crossOriginIsolated === true,
  }
}

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

async function hasWebGpuAdapter(): Promise<boolean> {
  const gpu = (globalThis.navigator as (Navigator & { gpu?: GpuLike }) | undefined)?.gpu
  if (!gpu) return false
  try {
    return (await gpu.requestAdapter()) != null
  } catch {
    // A browser may expose navigator.gpu and still refuse (blocklisted driver, policy).
    return false
  }
}

/**
 * The device to ask Transformers.js for: the native CPU runtime in Node, WebGPU in a
 * browser that granted an adapter, WASM otherwise.
 *
 * @example
 * chooseDevice({ runtime: 'worker', webgpu: false, crossOriginIsolated: false }) // 'wasm'
 */
export function chooseDevice(env: EmbedEnvironment): EmbedDevice {
  if (env.runtime === 'node') return 'cpu'
  return env.webgpu ? 'webgpu' : 'wasm'
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
