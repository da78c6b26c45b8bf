import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { emptyReport, type LoadReport, mergeReports } from './load.ts'

/**
 * Runs `processes` writer processes (test/support/load-writer.ts) of `agents` agents each on
 * the memory at `url` for `seconds`, started together once all are open; `during` runs
 * meanwhile (e.g. a reader). Resolves with their reports merged.
 */
export async function runWriterProcesses(
  url: string,
  o: { processes: number; agents: number; seconds: number; during?: (stop: AbortSignal) => Promise<void> },
): Promise<LoadReport> {
  const children = Array.from({ length: o.processes }, (_, p) => writer(url, p, o.agents))
  await Promise.all(children.map((c) => c.open))
  const stop = new AbortController()
  const during = o.during?.(stop.signal)
  for (const c of children) c.go(o.seconds)
  const reports = await Promise.all(children.map((c) => c.report))
  stop.abort()
  await during
  return reports.reduce(mergeReports, emptyReport())
}

function writer(url: string, p: number, agents: number) {
  const child = spawn(process.execPath, ['bench/run.mjs', 'test/support/load-writer.ts'], {
    env: { ...process.env, ENGRAM_POSTGRES: url, LOAD_PROCESS: String(p), LOAD_AGENTS: String(agents) },
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
  const lines = createInterface({ input: child.stdout })
  const open = new Promise<void>((resolve, reject) => {
    lines.on('line', (line) => line === 'open' && resolve())
    void exited.then((code) => reject(new Error(`writer ${p} exited (${code}) before it opened`)))
  })
  const report = new Promise<LoadReport>((resolve, reject) => {
    lines.on('line', (line) => line.startsWith('report ') && resolve(JSON.parse(line.slice('report '.length)) as LoadReport))
    void exited.then((code) => reject(new Error(`writer ${p} exited (${code}) without a report`)))
  })
  // Unhandled until awaited: the run awaits `open` first, then `report`.
  report.catch(() => {})
  return { open, report, go: (seconds: number) => child.stdin.write(`go ${seconds}\n`) }
}
