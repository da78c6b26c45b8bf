// Redaction throughput on text that agents store: build logs, source files, JSON.
//   node bench/run.mjs bench/redact.ts
import { redact } from '../src/core/privacy/redact.ts'
import { nearMissCorpus, needles, randomSeed, secretCorpus as fullCorpus } from '../test/support/secret-corpus.ts'
import { nearMisses, secretCorpus } from '../test/support/secrets.ts'

const source = `export function add(a: number, b: number): number {\n  return a + b // sums two numbers\n}\n`
const log = `[2025-02-09T10:00:00Z] INFO compiled 128 modules in 812ms (cache hit 97%)\n`
const json = `{"name": "engram", "version": "0.1.0", "integrity": "sha512-${'Ab3+'.repeat(21)}==", "id": "evt_01jq3x8r5ffq8t5m6pz0c9w2ak"}\n`
const plain = (source + log + json + nearMisses().join('\n')).repeat(1)
const mib = (text: string) => Buffer.byteLength(text) / 2 ** 20

function measure(name: string, text: string, runs = 5) {
  redact(text)
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    redact(text)
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  const median = times[Math.floor(runs / 2)] as number
  const rate = (mib(text) / (median / 1000)).toFixed(1)
  process.stdout.write(`${name}: ${mib(text).toFixed(2)} MiB, median ${median.toFixed(2)} ms, ${rate} MiB/s\n`)
}

let big = ''
while (Buffer.byteLength(big) < 2 ** 20) big += plain
measure('1 MiB of code, logs and JSON, no secrets', big)
const secrets = secretCorpus().map((s) => s.text).join('\n')
let mixed = ''
while (Buffer.byteLength(mixed) < 2 ** 20) mixed += plain + secrets
measure('1 MiB with the 44-secret corpus repeated through it', mixed)
measure('short message (80 bytes)', 'Can you check why the login test fails on CI since the last merge?', 200)

// The secret corpus (fresh values each run) against secretlint's recommended preset: what each
// catches, what each flags among the look-alikes, and how long one pass over the corpus takes.
//   npm install -D @secretlint/core @secretlint/secretlint-rule-preset-recommend
//   node bench/run.mjs bench/redact.ts [seed]
interface Secretlint {
  lintSource: (input: {
    source: { filePath: string; content: string; contentType: 'text' }
    options: { config: { rules: { id: string; rule: unknown }[] } }
  }) => Promise<{ messages: { range: readonly [number, number] }[] }>
}
// Named through a variable: secretlint is the bench's alone, and the type check must not need it.
const packages = { core: '@secretlint/core', preset: '@secretlint/secretlint-rule-preset-recommend' }
const secretlint = await Promise.all([
  import(/* @vite-ignore */ packages.core) as Promise<Secretlint>,
  import(/* @vite-ignore */ packages.preset) as Promise<{ creator: unknown }>,
]).catch(() => undefined)
if (!secretlint) process.stdout.write(`secretlint is not installed: its columns are left out (${packages.core})\n`)
const seed = Number(process.argv[3] ?? randomSeed())
const samples = fullCorpus(seed)
const looks = nearMissCorpus(seed)
const config = { rules: [{ id: packages.preset, rule: secretlint?.[1].creator }] }
const lint = async (text: string) =>
  secretlint
    ? (await secretlint[0].lintSource({ source: { filePath: 'memory.txt', content: text, contentType: 'text' }, options: { config } }))
        .messages
    : []

/** Caught: with the flagged spans taken out, no random run of the secret is left. */
const covered = (text: string, secret: string, spans: readonly (readonly [number, number])[]) => {
  let kept = text
  for (const [a, b] of [...spans].sort((x, y) => y[0] - x[0])) kept = `${kept.slice(0, a)}\0${kept.slice(b)}`
  return needles(secret).every((n) => !kept.includes(n))
}

async function timed(run: () => Promise<void> | void, runs = 5) {
  await run()
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    await run()
    times.push(performance.now() - t)
  }
  return (times.sort((a, b) => a - b)[Math.floor(runs / 2)] as number).toFixed(1)
}

const ours = { caught: new Set<string>(), missed: new Set<string>(), flagged: [] as string[] }
const theirs = { caught: new Set<string>(), missed: new Set<string>(), flagged: [] as string[] }
for (const s of samples) {
  const r = redact(s.text)
  ;(covered(s.text, s.secret, r.findings.map((f) => [f.start, f.end])) ? ours.caught : ours.missed).add(s.format)
  const m = await lint(s.text)
  ;(covered(s.text, s.secret, m.map((x) => x.range)) ? theirs.caught : theirs.missed).add(s.format)
}
for (const n of looks) {
  if (redact(n.text).findings.length > 0) ours.flagged.push(n.kind)
  if ((await lint(n.text)).length > 0) theirs.flagged.push(n.kind)
}
// A format counts as caught when every sample of it was.
for (const side of [ours, theirs]) for (const f of side.missed) side.caught.delete(f)
const formats = new Set(samples.map((s) => s.format)).size
const oursMs = await timed(() => {
  for (const s of samples) redact(s.text)
})
const theirsMs = await timed(async () => {
  for (const s of samples) await lint(s.text)
})
const lines = [
  `secret corpus (seed ${seed}): ${formats} formats, ${samples.length} samples; ${looks.length} look-alikes`,
  `  engram redact: ${ours.caught.size}/${formats} formats caught, ${ours.flagged.length} look-alikes flagged, ${oursMs} ms per pass`,
  `  engram missed: ${[...ours.missed].join(', ') || 'none'}; flagged: ${ours.flagged.join(', ') || 'none'}`,
]
if (secretlint) {
  lines.push(
    `  secretlint recommend: ${theirs.caught.size}/${formats} formats caught, ${theirs.flagged.length} look-alikes flagged, ${theirsMs} ms per pass`,
    `  secretlint caught and engram missed: ${[...theirs.caught].filter((f) => !ours.caught.has(f)).join(', ') || 'none'}`,
    `  secretlint missed: ${[...theirs.missed].join(', ')}`,
    `  secretlint flagged: ${theirs.flagged.join(', ') || 'none'}`,
  )
}
process.stdout.write(`${lines.join('\n')}\n`)
