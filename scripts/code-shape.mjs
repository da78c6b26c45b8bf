// Prints the shape of the source tree: the longest functions, files over 500 lines, import
// circles between files, and folder pairs that import each other.
//   node scripts/code-shape.mjs [folder]   (default: src)
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import ts from 'typescript'

const root = process.argv[2] ?? 'src'
const files = readdirSync(root, { recursive: true })
  .map((f) => join(root, String(f)))
  .filter((f) => f.endsWith('.ts'))
  .sort()

const functions = []
const imports = new Map()
const lines = new Map()
for (const file of files) {
  const text = readFileSync(file, 'utf8')
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  lines.set(file, source.getLineAndCharacterOfPosition(text.length).line + 1)
  const lineOf = (pos) => source.getLineAndCharacterOfPosition(pos).line
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const name = node.name?.getText(source) ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(source) : '(anonymous)')
      functions.push({ file, name, lines: lineOf(node.end) - lineOf(node.getStart(source)) + 1 })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  const targets = new Set()
  for (const statement of source.statements) {
    const spec = (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) && statement.moduleSpecifier
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue
    const target = normalize(join(dirname(file), spec.text))
    if (target.startsWith(root)) targets.add(target)
  }
  imports.set(file, targets)
}

functions.sort((a, b) => b.lines - a.lines)
console.log('Longest functions:')
for (const f of functions.slice(0, 10)) console.log(`  ${String(f.lines).padStart(4)}  ${f.name}  (${f.file})`)
console.log(`Functions of 150 lines or more: ${functions.filter((f) => f.lines >= 150).length}`)
console.log(`Functions of 80 lines or more: ${functions.filter((f) => f.lines >= 80).length}`)
const long = [...lines].filter(([, n]) => n > 500).sort((a, b) => b[1] - a[1])
console.log(`Files over 500 lines: ${long.length}`)
for (const [file, n] of long) console.log(`  ${String(n).padStart(4)}  ${file}`)

// Import circles: strongly connected components of more than one file (Tarjan).
let index = 0
const stack = []
const state = new Map()
const circles = []
const connect = (v) => {
  state.set(v, { index, low: index, on: true })
  index++
  stack.push(v)
  for (const w of imports.get(v) ?? []) {
    if (!imports.has(w)) continue
    if (!state.has(w)) {
      connect(w)
      state.get(v).low = Math.min(state.get(v).low, state.get(w).low)
    } else if (state.get(w).on) state.get(v).low = Math.min(state.get(v).low, state.get(w).index)
  }
  if (state.get(v).low === state.get(v).index) {
    const circle = []
    let w
    do {
      w = stack.pop()
      state.get(w).on = false
      circle.push(w)
    } while (w !== v)
    if (circle.length > 1) circles.push(circle)
  }
}
for (const file of files) if (!state.has(file)) connect(file)
console.log(`Import circles: ${circles.length}`)
for (const circle of circles) console.log(`  ${circle.length} files: ${circle.slice(0, 6).join(', ')}${circle.length > 6 ? ', …' : ''}`)

const folder = (file) => dirname(relative(root, file)) || '.'
const pairs = new Set()
for (const [file, targets] of imports) {
  for (const target of targets) {
    const [a, b] = [folder(file), folder(target)]
    if (a !== b && [...imports].some(([f, t]) => folder(f) === b && [...t].some((x) => folder(x) === a))) pairs.add([a, b].sort().join(' <-> '))
  }
}
console.log(`Folder pairs importing each other: ${pairs.size}`)
for (const pair of pairs) console.log(`  ${pair}`)
