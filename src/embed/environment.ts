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
