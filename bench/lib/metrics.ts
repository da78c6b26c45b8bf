/** Metric records, percentiles and the Markdown report of `npm run bench`. */

export type Unit = 'ms' | 'bytes' | 'per_s'

export interface Metric {
  /** For latencies: the p95 when there are ≥ 20 runs, else the median. For rates and sizes: the median. */
  value: number
  unit: Unit
  p50?: number
  p95?: number
  runs: number
  /** What exactly was measured, when the name alone does not say. */
  note?: string
}

export interface BenchResult {
  machine: Record<string, string | number>
  date: string
  size: number
  command: string
  metrics: Record<string, Metric>
  /** Metrics that could not be measured in this build, with the reason. */
  skipped: Record<string, string>
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!
}

const round = (n: number) => (Math.abs(n) >= 100 ? Math.round(n) : Number(n.toPrecision(4)))

/** A latency metric from per-operation timings. */
export function latency(samples: readonly number[], note?: string): Metric {
  if (samples.length === 0) throw new Error('latency: no samples')
  const sorted = [...samples].sort((a, b) => a - b)
  const p50 = round(percentile(sorted, 50))
  const p95 = round(percentile(sorted, 95))
  return {
    value: sorted.length >= 20 ? p95 : p50,
    unit: 'ms',
    p50,
    p95,
    runs: sorted.length,
    ...(note ? { note } : {}),
  }
}

/** A rate or size metric: the median of the runs. */
export function median(samples: readonly number[], unit: Exclude<Unit, 'ms'>, note?: string): Metric {
  if (samples.length === 0) throw new Error('median: no samples')
  const sorted = [...samples].sort((a, b) => a - b)
  return { value: round(percentile(sorted, 50)), unit, runs: sorted.length, ...(note ? { note } : {}) }
}

/** What a first visit meets, in order (see `firstMinute` in browser-suite.ts). */
export const FIRST_MINUTE_METRICS = [
  'first_minute_ready_ms',
  'first_minute_first_write_ms',
  'first_minute_next_writes_ms',
  'first_minute_keyword_search_ms',
  'first_minute_model_ready_ms',
  'first_minute_vector_search_ms',
  'first_minute_returning_ready_ms',
  'first_minute_returning_first_write_ms',
  'first_minute_returning_keyword_search_ms',
  'first_minute_returning_model_ready_ms',
  'first_minute_returning_vector_search_ms',
] as const

/** Table order: the headline metrics first, then the peers, then the extras. */
export const METRIC_ORDER = [
  ...FIRST_MINUTE_METRICS,
  'record_turn_ms',
  'record_turn_no_index_ms',
  'record_turn_model_busy_ms',
  'record_turn_idb_ms',
  'record_turn_sealed_ms',
  'record_turn_beside_sealed_ms',
  'takeover_ms',
  'takeover_pglite_worker_ms',
  'search_ms',
  'build_context_ms',
  'build_context_fast_ms',
  'cold_start_new_ms',
  'cold_start_existing_ms',
  'cold_start_new_idb_ms',
  'cold_start_existing_idb_ms',
  'cold_start_existing_returning_ms',
  'cold_start_new_returning_ms',
  'export_ms',
  'export_bytes',
  'import_ms',
  'raw_dump_bytes',
  'remember_ms',
  'remember_one_session_ms',
  'indexing_under_writes_per_s',
  'indexing_one_session_per_s',
  'embed_node_per_s',
  'embed_wasm_per_s',
  'embed_wasm_one_thread_per_s',
  'embed_webgpu_per_s',
  'orama_search_ms',
  'orama_insert_per_s',
  'orama_restore_ms',
  'bruteforce_search_ms',
  'naive_pglite_insert_per_s',
]

interface Target {
  op: '<=' | '>='
  value: (metrics: Record<string, Metric>) => number | undefined
  label: string
  /** The fewest events a run must have for the target to apply. */
  minSize?: number
}

const fixed = (op: '<=' | '>=', n: number, unit: string): Target => ({
  op,
  value: () => n,
  label: `${op === '<=' ? '≤' : '≥'} ${n} ${unit}`,
})

/** Targets reported against (never asserted). search_ms's target is for 100k events. */
export const TARGETS: Record<string, Target> = {
  record_turn_ms: fixed('<=', 10, 'ms'),
  takeover_ms: fixed('<=', 1000, 'ms'),
  remember_ms: fixed('<=', 50, 'ms'),
  search_ms: { op: '<=', value: () => 25, label: '≤ 25 ms (at 100k)', minSize: 100_000 },
  build_context_ms: fixed('<=', 60, 'ms'),
  build_context_fast_ms: fixed('<=', 15, 'ms'),
  first_minute_ready_ms: fixed('<=', 1500, 'ms'),
  first_minute_first_write_ms: fixed('<=', 100, 'ms'),
  first_minute_model_ready_ms: fixed('<=', 5000, 'ms'),
  first_minute_vector_search_ms: fixed('<=', 100, 'ms'),
  first_minute_returning_ready_ms: fixed('<=', 1000, 'ms'),
  first_minute_returning_model_ready_ms: fixed('<=', 2000, 'ms'),
  cold_start_new_ms: fixed('<=', 1500, 'ms'),
  cold_start_existing_ms: fixed('<=', 1000, 'ms'),
  embed_wasm_per_s: fixed('>=', 150, '/s'),
  export_bytes: {
    op: '<=',
    value: (m) => (m.raw_dump_bytes ? m.raw_dump_bytes.value / 3 : undefined),
    label: '≤ raw_dump_bytes / 3',
  },
}

function format(n: number | undefined, unit: Unit): string {
  if (n === undefined) return ''
  if (unit === 'bytes') return n >= 1e6 ? `${(n / 1e6).toFixed(2)} MB` : `${(n / 1e3).toFixed(1)} kB`
  if (unit === 'per_s') return `${round(n)}/s`
  return `${round(n)} ms`
}

function verdict(name: string, metrics: Record<string, Metric>, size: number): [string, string] {
  const target = TARGETS[name]
  const metric = metrics[name]
  if (!target || !metric) return [target?.label ?? '', '']
  if (size < (target.minSize ?? 0)) return [target.label, 'not judged at this size']
  const bound = target.value(metrics)
  if (bound === undefined) return [target.label, '?']
  const met = target.op === '<=' ? metric.value <= bound : metric.value >= bound
  return [target.label, met ? 'met' : 'not met']
}

function ratio(a: Metric | undefined, b: Metric | undefined, key: 'p50' | 'p95' | 'value'): string {
  const x = a?.[key]
  const y = b?.[key]
  if (x === undefined || y === undefined || y === 0) return 'n/a'
  return `${(x / y).toFixed(2)}×`
}

/** The Markdown printed by `npm run bench` and pasted into docs/BENCHMARKS.md. */
export function markdownReport(result: BenchResult): string {
  const { metrics, skipped, size } = result
  const lines: string[] = []
  lines.push(`### ${size.toLocaleString('en-US')} events — ${result.date}`)
  lines.push('')
  lines.push(`\`${result.command}\``)
  lines.push('')
  lines.push(
    `Machine: ${result.machine.cpu} ×${result.machine.cores}, ${result.machine.memory}, ${result.machine.os}; ` +
      `Node ${result.machine.node}; Chromium ${result.machine.chromium}.`,
  )
  lines.push('')
  lines.push('| metric | value | p50 | p95 | runs | target | |')
  lines.push('| --- | ---: | ---: | ---: | ---: | --- | --- |')
  const present = [...Object.keys(metrics), ...Object.keys(skipped)]
  const names = [...new Set([...METRIC_ORDER.filter((n) => present.includes(n)), ...present])]
  for (const name of names) {
    const metric = metrics[name]
    if (!metric) {
      lines.push(`| \`${name}\` | not available | | | 0 | ${TARGETS[name]?.label ?? ''} | ${skipped[name] ?? ''} |`)
      continue
    }
    const [target, met] = verdict(name, metrics, size)
    lines.push(
      `| \`${name}\` | ${format(metric.value, metric.unit)} | ${format(metric.p50, metric.unit)} | ` +
        `${format(metric.p95, metric.unit)} | ${metric.runs} | ${target} | ${met} |`,
    )
  }
  lines.push('')
  lines.push('Side by side (same process, same data; ratio > 1 means the first is slower or bigger):')
  lines.push('')
  lines.push('| comparison | p50 | p95 |')
  lines.push('| --- | ---: | ---: |')
  const pairs: [string, string][] = [
    ['search_ms', 'orama_search_ms'],
    ['search_ms', 'bruteforce_search_ms'],
    ['orama_search_ms', 'bruteforce_search_ms'],
    ['cold_start_existing_ms', 'orama_restore_ms'],
    ['cold_start_existing_returning_ms', 'cold_start_existing_ms'],
    ['record_turn_ms', 'record_turn_no_index_ms'],
    ['record_turn_model_busy_ms', 'record_turn_no_index_ms'],
    ['record_turn_sealed_ms', 'record_turn_beside_sealed_ms'],
    ['remember_ms', 'remember_one_session_ms'],
  ]
  for (const [a, b] of pairs) {
    lines.push(`| \`${a}\` / \`${b}\` | ${ratio(metrics[a], metrics[b], 'p50')} | ${ratio(metrics[a], metrics[b], 'p95')} |`)
  }
  lines.push('')
  lines.push('| comparison | ratio |')
  lines.push('| --- | ---: |')
  const valuePairs: [string, string][] = [
    ['engine_write_events_per_s', 'naive_pglite_insert_per_s'],
    ['engine_vector_fill_per_s', 'naive_pglite_insert_per_s'],
    ['orama_insert_per_s', 'engine_write_events_per_s'],
    ['export_bytes', 'raw_dump_bytes'],
    ['embed_node_per_s', 'embed_wasm_per_s'],
    ['indexing_under_writes_per_s', 'indexing_one_session_per_s'],
  ]
  for (const [a, b] of valuePairs) {
    lines.push(`| \`${a}\` / \`${b}\` | ${ratio(metrics[a], metrics[b], 'value')} |`)
  }
  const notes = Object.entries(metrics).filter(([, m]) => m.note)
  if (notes.length > 0) {
    lines.push('')
    for (const [name, m] of notes) lines.push(`- \`${name}\`: ${m.note}`)
  }
  return `${lines.join('\n')}\n`
}
