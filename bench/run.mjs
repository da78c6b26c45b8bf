// Runs a TypeScript bench script through Vite's module runner (Node 20 cannot strip types):
//   node bench/run.mjs bench/embed-node.ts [args…]
import { resolve } from 'node:path'
import { runnerImport } from 'vite'

const [file] = process.argv.slice(2)
if (!file) throw new Error('usage: node bench/run.mjs bench/<script>.ts [args…]')
await runnerImport(resolve(file))
