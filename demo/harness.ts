import * as engram from '../src/index.ts'

declare global {
  interface Window {
    engram: typeof engram
    engramHarnessReady: boolean
  }
}

/** The browser tests drive the public API through this page. */
window.engram = engram
window.engramHarnessReady = true
