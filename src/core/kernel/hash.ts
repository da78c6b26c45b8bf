const encoder = new TextEncoder()

/** Hex SHA-256 of a string (UTF-8) or bytes, via Web Crypto (Node 20+, browsers, workers). */
export async function sha256Hex(input: string | Uint8Array): Promise<string> {
  const bytes = typeof input === 'string' ? encoder.encode(input) : input
  const digest = await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('')
}

/** Lowercased, whitespace-collapsed, trimmed: two texts with the same normal form are the same memory. */
export function normalizeMemoryText(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim()
}

/** A memory's plain hash (a sealed memory's is a keyed one, src/core/privacy/vault.ts). */
export function memoryHash(text: string): Promise<string> {
  return sha256Hex(normalizeMemoryText(text))
}
