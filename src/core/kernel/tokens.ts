/**
 * Token counts without a tokenizer. The estimate is deliberately conservative (it errs high)
 * so that anything packed by it fits a real model's budget:
 *
 *   estimateTokens(text) = max(ceil(asciiChars / 3.5 + otherCodePoints), ceil(words × 1.35))
 *
 * English prose runs ~4 characters per token in common BPE vocabularies, code ~3–3.5; words
 * average ~1.3 tokens. A non-ASCII code point (CJK, emoji, accented letters) is counted as a
 * whole token, which over-counts Latin scripts slightly and matches CJK.
 *
 * @example
 * estimateTokens('fix the login bug') // → 6
 */
export function estimateTokens(text: string): number {
  return fromCounts(countText(text))
}

interface TextCounts {
  ascii: number
  other: number
  words: number
}

function countText(text: string): TextCounts {
  let ascii = 0
  let other = 0
  let words = 0
  let inWord = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) ascii++
    else if (c < 0xdc00 || c > 0xdfff) other++ // a low surrogate continues the previous code point
    const space = c === 32 || (c >= 9 && c <= 13)
    if (!space && !inWord) words++
    inWord = !space
  }
  return { ascii, other, words }
}

function fromCounts(c: TextCounts): number {
  return Math.max(Math.ceil(c.ascii / 3.5 + c.other), Math.ceil(c.words * 1.35))
}

/** The most estimated tokens one chunk holds; longer text is split into several chunks. */
export const MAX_CHUNK_TOKENS = 1000

/**
 * Splits text into retrieval chunks of at most `maxTokens` estimated tokens, preferring
 * paragraph breaks, then line breaks, then sentence ends, then spaces; a run with none of
 * those is cut hard. Whitespace-only text gives no chunks.
 *
 * @example
 * chunkText('short note') // → ['short note']
 */
export function chunkText(text: string, maxTokens: number = MAX_CHUNK_TOKENS): string[] {
  const trimmed = text.trim()
  if (trimmed.length === 0) return []
  if (estimateTokens(trimmed) <= maxTokens) return [trimmed]
  const out: string[] = []
  split(trimmed, 0, maxTokens, out)
  return out
}

const SEPARATORS = [/\n\s*\n/, /\n/, /(?<=[.!?])\s+/, /\s+/] as const

function split(text: string, level: number, maxTokens: number, out: string[]): void {
  const separator = SEPARATORS[level]
  if (separator === undefined) {
    hardCut(text, maxTokens, out)
    return
  }
  const joiner = level === 0 ? '\n\n' : level === 1 ? '\n' : ' '
  // Counts add up across a whitespace joiner, so the running estimate needs no re-scan.
  let parts: string[] = []
  let acc: TextCounts = { ascii: 0, other: 0, words: 0 }
  const flush = () => {
    if (parts.length > 0) out.push(parts.join(joiner))
    parts = []
    acc = { ascii: 0, other: 0, words: 0 }
  }
  for (const raw of text.split(separator)) {
    const piece = raw.trim()
    if (piece.length === 0) continue
    const c = countText(piece)
    if (fromCounts(c) > maxTokens) {
      flush()
      split(piece, level + 1, maxTokens, out)
      continue
    }
    const sep = parts.length > 0 ? joiner.length : 0
    const next = { ascii: acc.ascii + sep + c.ascii, other: acc.other + c.other, words: acc.words + c.words }
    if (fromCounts(next) > maxTokens) {
      flush()
      acc = c
    } else acc = next
    parts.push(piece)
  }
  flush()
}

function hardCut(text: string, maxTokens: number, out: string[]): void {
  // A code point never counts for more than one token, so maxTokens code points always fit.
  const points = Array.from(text)
  for (let i = 0; i < points.length; i += maxTokens) out.push(points.slice(i, i + maxTokens).join(''))
}
