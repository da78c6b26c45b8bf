import { type ErrorCode, MemoryError } from '../src/index.ts'

/** What to tell a person for each error code: what happened is the error's message; this is what to do. */
const ADVICE: Partial<Record<ErrorCode, string>> = {
  INVALID_INPUT: 'The demo sent something the memory refused. Try a shorter or plainer message.',
  NOT_FOUND: 'It may have been forgotten or never stored. Reload the panel.',
  CONFLICT: 'Reload the page.',
  IMPORT_CORRUPT: 'The file is damaged or not an Engram export. Export again and retry.',
  IMPORT_UNSUPPORTED_VERSION: 'The file was written by a newer Engram. Update the demo and retry.',
  SCHEMA_TOO_NEW: 'This memory was last opened by a newer Engram. Update the demo, or clear the memory.',
  WRONG_PASSPHRASE: 'Check the passphrase and try again.',
  VAULT_LOCKED: 'This page opened the memory without its passphrase. Reload the page and unlock it.',
  STORAGE_UNAVAILABLE: 'This browser will not let the page store data (private mode?). Use a normal window.',
  QUOTA_EXCEEDED: 'The browser has run out of space for this site. Export, then clear the memory to free space.',
  BOOT_TIMEOUT: 'Close other tabs with the demo and reload.',
  WORKER_TERMINATED: 'The memory stopped. Reload the page; your data is kept.',
  LOCKED_BY_OTHER_TAB: 'Close the demo in other tabs, then try again.',
  MODEL_UNAVAILABLE: 'Search still works by keywords; reload to try loading the model again.',
  NOT_SUPPORTED: 'This browser lacks a feature the memory needs. Try a current Chromium, Firefox or Safari.',
  CLOSED: 'The memory was closed. Reload the page.',
  CORRUPT: 'The stored data is damaged. Import an export, or clear the memory.',
  INTERNAL: 'Something went wrong inside the memory. Reload the page; if it persists, export and clear.',
}

export interface Explained {
  code: string
  message: string
  advice: string
}

/** A failure in words a person can act on. */
export function explainError(error: unknown): Explained {
  if (MemoryError.is(error)) {
    return { code: error.code, message: error.message, advice: ADVICE[error.code] ?? 'Reload the page and try again.' }
  }
  const message = error instanceof Error ? error.message : String(error)
  return { code: 'ERROR', message, advice: 'Reload the page and try again.' }
}

let region: HTMLElement | null = null

/** Shows an error in the page's alert area (and keeps the last few). */
export function showError(error: unknown, doing: string): void {
  region ??= document.querySelector<HTMLElement>('#errors')
  const e = explainError(error)
  if (!region) {
    console.error(doing, error)
    return
  }
  const item = document.createElement('div')
  item.className = 'error'
  item.setAttribute('role', 'alert')
  const title = document.createElement('strong')
  title.textContent = `Could not ${doing} (${e.code}).`
  const text = document.createElement('span')
  text.textContent = ` ${e.message} ${e.advice}`
  const close = document.createElement('button')
  close.type = 'button'
  close.className = 'link'
  close.textContent = 'Dismiss'
  close.addEventListener('click', () => item.remove())
  item.append(title, text, close)
  region.prepend(item)
  while (region.children.length > 3) region.lastElementChild?.remove()
}
