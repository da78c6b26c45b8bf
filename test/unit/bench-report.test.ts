import { describe, expect, it } from 'vitest'
import { type BenchResult, latency, markdownReport, median, percentile } from '../../bench/lib/metrics.ts'

function result(size: number, metrics: BenchResult['metrics']): BenchResult {
  return {
    machine: { cpu: 'cpu', cores: 2, memory: '1 GiB', os: 'os', node: '20', chromium: '1' },
    date: '2026-01-01T00:00:00.000Z',
    size,
    command: 'npm run bench',
    metrics,
    skipped: {},
  }
}

/** The table row of one metric, split into its cells. */
function row(markdown: string, name: string): string[] {
  const line = markdown.split('\n').find((l) => l.startsWith(`| \`${name}\` |`))
  if (!line) throw new Error(`no row for ${name}`)
  return line.split('|').map((cell) => cell.trim())
}

describe('the bench report', () => {
  it('judges search against its target only at 100,000 events or more', () => {
    const fast = { search_ms: latency(Array.from({ length: 40 }, () => 20)) }
    const slow = { search_ms: latency(Array.from({ length: 40 }, () => 31)) }
    expect(row(markdownReport(result(10_000, fast)), 'search_ms').at(-2)).toBe('not judged at this size')
    expect(row(markdownReport(result(10_000, slow)), 'search_ms').at(-2)).toBe('not judged at this size')
    expect(row(markdownReport(result(100_000, fast)), 'search_ms').at(-2)).toBe('met')
    expect(row(markdownReport(result(100_000, slow)), 'search_ms').at(-2)).toBe('not met')
  })

  it('judges the other targets at any size, a latency by its p95', () => {
    // 18 turns of 5 ms and two of 50: the 19th of 20 in order, the p95, is a slow one.
    const turns = latency([...Array.from({ length: 18 }, () => 5), 50, 50])
    expect(turns).toMatchObject({ p50: 5, p95: 50, value: 50, runs: 20 })
    const md = markdownReport(
      result(400, {
        record_turn_ms: turns,
        embed_wasm_per_s: median([140, 160, 170], 'per_s'),
        export_bytes: median([30], 'bytes'),
        raw_dump_bytes: median([100], 'bytes'),
      }),
    )
    expect(row(md, 'record_turn_ms').slice(-3, -1)).toEqual(['≤ 10 ms', 'not met'])
    expect(row(md, 'embed_wasm_per_s').slice(-3, -1)).toEqual(['≥ 150 /s', 'met'])
    expect(row(md, 'export_bytes').slice(-3, -1)).toEqual(['≤ raw_dump_bytes / 3', 'met'])
  })

  it('takes nearest-rank percentiles', () => {
    const sorted = Array.from({ length: 200 }, (_, i) => i + 1)
    expect(percentile(sorted, 50)).toBe(100)
    expect(percentile(sorted, 95)).toBe(190)
    expect(percentile([], 50)).toBeNaN()
  })
})
