import { describe, expect, it } from 'vitest'
import { chunkText, estimateTokens, MAX_CHUNK_TOKENS } from '../../src/core/kernel/tokens.ts'

describe('estimateTokens', () => {
  it('is the larger of the character and word estimates', () => {
    expect(estimateTokens('')).toBe(0)
    expect(estimateTokens('fix the login bug')).toBe(6) // 4 words × 1.35 = 5.4 → 6; 17 chars / 3.5 → 5
    expect(estimateTokens('a'.repeat(35))).toBe(10) // one word; 35 / 3.5
    expect(estimateTokens('日本語のテキスト')).toBe(8) // one token per non-ASCII code point
    expect(estimateTokens('😀😀')).toBe(2) // surrogate pairs count once
  })
})

describe('chunkText', () => {
  it('keeps short text whole and drops blank text', () => {
    expect(chunkText('  short note \n')).toEqual(['short note'])
    expect(chunkText(' \n\t ')).toEqual([])
  })

  it('splits long text on paragraph boundaries, every chunk within the cap', () => {
    const paragraph = `${'word '.repeat(300).trim()}.`
    const text = Array.from({ length: 6 }, () => paragraph).join('\n\n')
    const chunks = chunkText(text)
    expect(chunks.length).toBe(3)
    for (const c of chunks) {
      expect(estimateTokens(c)).toBeLessThanOrEqual(MAX_CHUNK_TOKENS)
      expect(c.startsWith('word')).toBe(true)
      expect(c.endsWith('.')).toBe(true)
    }
    expect(chunks.join('\n\n')).toBe(text)
  })

  it('falls back to lines, then words, then hard cuts', () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} of the log`).join('\n')
    const byLine = chunkText(lines, 100)
    for (const c of byLine) expect(estimateTokens(c)).toBeLessThanOrEqual(100)
    expect(byLine.join('\n')).toBe(lines)

    const blob = 'x'.repeat(10_000)
    const hard = chunkText(blob, 100)
    expect(hard.join('')).toBe(blob)
    for (const c of hard) expect(estimateTokens(c)).toBeLessThanOrEqual(100)
  })
})
