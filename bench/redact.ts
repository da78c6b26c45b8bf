// Redaction throughput on text that agents store: build logs, source files, JSON.
//   node bench/run.mjs bench/redact.ts
import { redact } from '../src/core/redact.ts'
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
