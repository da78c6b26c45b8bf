/// <reference lib="webworker" />
import { expose } from 'comlink'
import { installErrorTransfer } from '../src/protocol/wire-errors.ts'
import { MemoryHost } from '../src/browser/host/host.ts'

installErrorTransfer()

const host = new MemoryHost()
// Errors nothing awaits: PGlite's WebAssembly refused by the page's CSP shows only here.
self.addEventListener('unhandledrejection', (event) => host.unhandled(event.reason))
self.addEventListener('error', (event) => host.unhandled(event.error ?? event.message))

/** What the page's client reaches through comlink. */
const api = {
  boot: host.boot.bind(host),
  call: host.call.bind(host),
  close: host.close.bind(host),
  listen: host.listen.bind(host),
  watchTelemetry: host.watchTelemetry.bind(host),
  embedderInfo: host.embedderInfo.bind(host),
}

export type WorkerApi = typeof api
export type {
  BootInfo,
  BootOptions,
  EmbedderBootOptions,
  EmbedderInfo,
  HostEvent,
  StorageInfo,
} from '../src/browser/host/host.ts'

expose(api)
