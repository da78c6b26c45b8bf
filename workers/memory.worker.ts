/// <reference lib="webworker" />
import type { PGlite } from '@electric-sql/pglite'
import { expose } from 'comlink'
import { installErrorTransfer } from '../src/client/error-transfer.ts'
import { createEngine, type Engine } from '../src/core/engine.ts'
import { MemoryError } from '../src/core/errors.ts'
import { openPGlite } from '../src/runtime/pglite.ts'

export interface WorkerBootOptions {
  /** PGlite data dir: `memory://`, `idb://name`, `opfs-ahp://name`. */
  dataDir: string
}

export interface WorkerBootInfo {
  dataDir: string
  bootMs: number
}

installErrorTransfer()

let pg: PGlite | undefined
let engine: Engine | undefined

/** What the page's client reaches through comlink. `engine` is the same API as `openMemory` in Node. */
const api = {
  async boot(options: WorkerBootOptions): Promise<WorkerBootInfo> {
    if (engine) throw new MemoryError('CONFLICT', 'This worker already hosts a memory; create a new worker.')
    const started = performance.now()
    try {
      pg = await openPGlite({ dataDir: options.dataDir })
    } catch (cause) {
      throw new MemoryError('STORAGE_UNAVAILABLE', `Could not open storage "${options.dataDir}".`, { cause })
    }
    engine = await createEngine({ db: pg })
    return { dataDir: options.dataDir, bootMs: performance.now() - started }
  },
  get engine(): Engine {
    if (!engine) throw new MemoryError('CLOSED', 'The memory is not open: boot() has not finished.')
    return engine
  },
  async close(): Promise<void> {
    engine = undefined
    if (pg && !pg.closed) await pg.close()
    pg = undefined
  },
}

export type WorkerApi = typeof api

expose(api)
