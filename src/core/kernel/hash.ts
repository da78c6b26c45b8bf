import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'

const encoder = new TextEncoder()

/**
 * Hex SHA-256 of a string (UTF-8) or bytes. Computed in JavaScript, at once: Web Crypto's digest
 * resolves as a task, and while many calls keep a PGlite busy on microtasks, no task runs, so a
 * call awaiting one waited behind all the others.
 */
export function sha256Hex(input: string | Uint8Array): string {
  return bytesToHex(sha256(typeof input === 'string' ? encoder.encode(input) : input))
}

/** Lowercased, whitespace-collapsed, trimmed: two texts with the same normal form are the same memory. */
export function normalizeMemoryText(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim()
}

/** A memory's plain hash (a sealed memory's is a keyed one, src/core/privacy/vault.ts). */
export function memoryHash(text: string): string {
  return sha256Hex(normalizeMemoryText(text))
}
