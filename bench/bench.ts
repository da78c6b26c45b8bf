/**
 * `npm run bench -- [--size 10000|100000] [--out FILE] [--only name,name] [--first-minute] [--runs N] [--cache-mb N] [--smoke]`
 *
 * Measures Engram and its peers (Orama, brute-force cosine, naive PGlite inserts) in the same
 * process on the same deterministic data, in Node (the engine in-process) and in headless
 * Chromium (the worker, served from dist/demo — run `npm run build` first). Writes JSON to
 * FILE (default bench/results/latest.json) and a Markdown table to stdout. Exits non-zero
 * on any error. `--smoke` is a tiny, quick run that checks the harness works. `--first-minute`
 * measures only the first minute in the browser (ready, first write, first searches, the model
 * ready), in fresh contexts and on a returning visit; `--runs` sets the browser's cold runs
 * (default 3). `--cache-mb` opens
 * the Node suite's memory with that `cacheMB` (Postgres' page cache; default 128).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { cpus, totalmem, type as osType, release } from 'node:os'
import { dirname } from 'node:path'
import { BROWSER_METRICS, chromiumVersion, FIRST_MINUTE_METRICS, runBrowserSuite } from './lib/browser-suite.ts'
import { type BenchResult, markdownReport } from './lib/metrics.ts'
import { NODE_METRICS, runNodeSuite, type SuiteOptions } from './lib/node-suite.ts'

interface Args {
  size: number
  out: string
  only: string[]
  smoke: boolean
  cacheMB?: number
  runs?: number
}

function parseArgs(argv: string[]): Args {
  const args: Args = { size: 10_000, out: 'bench/results/latest.json', only: [], smoke: false }
  let sizeGiven = false
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]
    const value = () => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${flag} needs a value`)
      return v
    }
    if (flag === '--size') {
      args.size = Number(value())
      sizeGiven = true
      if (!Number.isInteger(args.size) || args.size < 8) throw new Error('--size must be an integer ≥ 8')
    } else if (flag === '--out') args.out = value()
    else if (flag === '--only') args.only = value().split(',').map((s) => s.trim()).filter(Boolean)
    else if (flag === '--first-minute') args.only.push(...FIRST_MINUTE_METRICS)
    else if (flag === '--smoke') args.smoke = true
    else if (flag === '--cache-mb') args.cacheMB = Number(value())
    else if (flag === '--runs') {
      args.runs = Number(value())
      if (!Number.isInteger(args.runs) || args.runs < 1) throw new Error('--runs must be an integer ≥ 1')
    }
    else throw new Error(`unknown argument ${flag}; usage: npm run bench -- [--size n] [--out FILE] [--only a,b] [--first-minute] [--runs n] [--cache-mb n] [--smoke]`)
  }
  if (args.smoke && !sizeGiven) args.size = 400
  const known = new Set([...NODE_METRICS, ...BROWSER_METRICS])
  const unknown = args.only.filter((n) => !known.has(n))
  if (unknown.length > 0) throw new Error(`--only: unknown metric ${unknown.join(', ')}; known: ${[...known].join(', ')}`)
  return args
}

async function main(): Promise<void> {
  // bench/run.mjs is argv[1] and this file argv[2]; flags follow.
  const args = parseArgs(process.argv.slice(3))
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const wants = (name: string) => args.only.length === 0 || args.only.includes(name)
  const cache = {
    ...(args.cacheMB === undefined ? {} : { cacheMB: args.cacheMB }),
    ...(args.runs === undefined ? {} : { coldRuns: args.runs }),
  }
  const options: SuiteOptions & { coldRuns: number; webgpuSentences: number } = args.smoke
    ? { size: args.size, ops: 20, warmup: 3, embedPasses: 1, embedSentences: 64, bulkRuns: 1, naiveRows: 200, coldRuns: 1, webgpuSentences: 4, steady: { events: 400, seconds: 6 }, wants, log, ...cache }
    : { size: args.size, ops: 200, warmup: 20, embedPasses: 3, embedSentences: 200, bulkRuns: 3, naiveRows: 2000, coldRuns: 3, webgpuSentences: 16, steady: { events: 4000, seconds: 60 }, wants, log, ...cache }

  const started = Date.now()
  const command = `npm run bench -- ${process.argv.slice(3).join(' ')}`.trim().replace(/ --$/, '')
  const machine = {
    os: `${osType()} ${release()}`,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.versions.node,
    chromium: BROWSER_METRICS.some(wants) ? await chromiumVersion() : 'not used',
  }
  const node = await runNodeSuite(options)
  const browser = await runBrowserSuite(options)
  const result: BenchResult = {
    machine,
    date: new Date().toISOString(),
    size: args.size,
    command,
    metrics: { ...node.metrics, ...browser.metrics },
    skipped: { ...node.skipped, ...browser.skipped },
  }
  await mkdir(dirname(args.out), { recursive: true })
  await writeFile(args.out, `${JSON.stringify(result, null, 2)}\n`)
  process.stdout.write(markdownReport(result))
  log(`\nwrote ${args.out} in ${((Date.now() - started) / 1000).toFixed(0)} s`)
}

try {
  await main()
} catch (error) {
  console.error(error)
  process.exit(1)
}
