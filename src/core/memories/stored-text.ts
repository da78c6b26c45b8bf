import type { JsonObject } from '../graph/entities.ts'
import { embedderFailed } from '../kernel/embedder.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { memoryHash, normalizeMemoryText } from '../kernel/hash.ts'
import { countRedactions, mergeRedactions, type RedactionCount, redact, redactUnknown } from '../privacy/redact.ts'

/** A memory's vector and the model that made it. */
export interface MemoryVector {
  value: Float32Array
  model: string
}

/** A memory's text as it is stored, with the hashes an existing memory of that text may have. */
export interface StoredText {
  sealed: boolean
  content: string
  hash: string
  plainHash: string
  mac: string | undefined
}

/** The vector of a memory's text by the engine's embedder, or null without one. */
export async function embedText(ctx: EngineContext, content: string): Promise<MemoryVector | null> {
  const embedder = ctx.embedder
  if (!embedder) return null
  try {
    return { value: await ctx.vectors.embed(embedder, content), model: embedder.id }
  } catch (cause) {
    throw embedderFailed(embedder, cause)
  }
}

/**
 * A memory's text as it is stored: sealed with its keyed hash when it is `high` under a
 * vault (no vector is kept of it), else plain with its plain hash. `mac` is the keyed hash
 * whenever the vault is open, so that a sealed memory of the same text is found.
 */
export async function sealedMemory(ctx: EngineContext, content: string, sensitivity: string): Promise<StoredText> {
  const plainHash = memoryHash(content)
  const { vault } = ctx
  const sealing = sensitivity === 'high' && vault.status !== 'none'
  const mac = vault.status === 'open' ? await vault.mac(normalizeMemoryText(content)) : undefined
  if (!sealing) return { sealed: false, content, hash: plainHash, plainHash, mac }
  const stored = await vault.seal(content)
  return { sealed: true, content: stored, hash: mac as string, plainHash, mac }
}

/** Secrets in a memory's text and metadata are replaced before it is hashed, embedded or stored. */
export function redactMemory<T extends { content: string; metadata: Record<string, unknown> }>(
  m: T,
): { value: T; redactions: RedactionCount[] } {
  const content = redact(m.content)
  const metadata = redactUnknown(m.metadata)
  return {
    value: { ...m, content: content.text, metadata: metadata.value as Record<string, unknown> },
    redactions: mergeRedactions(countRedactions(content.findings), metadata.redactions),
  }
}

/** Redaction counts as they are logged in a history entry. */
export function redactionList(redactions: readonly RedactionCount[]): JsonObject[] {
  return redactions.map((r) => ({ type: r.type, count: r.count }))
}
