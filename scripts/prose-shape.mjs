// Prints how long the sentences of the user docs run: words per sentence (median, 90th
// percentile, longest) per file and over all of them. Code blocks, tables, headings and
// list markers are left out; a list item counts as its own sentences.
//   node scripts/prose-shape.mjs [file …]   (default: README.md and docs/*.md but BENCHMARKS.md)
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const files = process.argv.length > 2
  ? process.argv.slice(2)
  : ['README.md', ...readdirSync('docs').filter((f) => f.endsWith('.md') && f !== 'BENCHMARKS.md').map((f) => join('docs', f))]

/** The prose of a Markdown text, one paragraph or list item per entry. */
function paragraphs(text) {
  const out = []
  let fenced = false
  let current = []
  const flush = () => {
    if (current.length) out.push(current.join(' '))
    current = []
  }
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced
      flush()
      continue
    }
    if (fenced || /^\s*(#|\||<|!\[)/.test(line) || !line.trim()) {
      flush()
      continue
    }
    if (/^\s*([-*+]|\d+\.)\s/.test(line)) flush()
    current.push(line.replace(/^\s*([-*+]|\d+\.)\s+/, '').trim())
  }
  flush()
  return out
}

/** Words per sentence: a sentence ends at . ! or ? before a space and a capital, or at the end. */
function sentenceLengths(paragraph) {
  const plain = paragraph
    .replace(/`[^`]*`/g, 'code')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\b(e\.g|i\.e|etc|vs)\./g, '$1')
  return plain
    .split(/(?<=[.!?:])\s+(?=[A-Z`"(])/)
    .map((s) => s.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length)
    .filter((n) => n > 0)
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
const line = (name, lengths) => {
  const sorted = [...lengths].sort((a, b) => a - b)
  return `${String(quantile(sorted, 0.5)).padStart(6)} ${String(quantile(sorted, 0.9)).padStart(6)} ${String(sorted.at(-1) ?? 0).padStart(7)} ${String(sorted.length).padStart(9)}  ${name}`
}

const all = []
console.log(' median    p90 longest sentences  file')
for (const file of files) {
  const lengths = paragraphs(readFileSync(file, 'utf8')).flatMap(sentenceLengths)
  all.push(...lengths)
  console.log(line(file, lengths))
}
console.log(line('all', all))
