import type { EngineContext } from '../kernel/engine-context.ts'
import type { Queryable } from '../kernel/db.ts'
import { MemoryError } from '../kernel/errors.ts'
import { memoryHash, sha256Hex } from '../kernel/hash.ts'
import { judgeImportedRows, judgeImportedVectors, MAX_IMPORTED_COUNTER, redactImportedRows, refuseOversizedLine } from './import-rules.ts'
import type { RedactionCount } from '../privacy/redact.ts'
import { buildVectorIndexes, bulkWorthIt, dropVectorIndexes, INDEXED_CHUNKS_SQL, INDEXED_MEMORIES_SQL, MISSING_VECTORS_SQL, PGVECTOR_SQL } from '../db/vectors.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { SEALED_PREFIX, type Vault, vaultLocked } from '../privacy/vault.ts'

/**
 * One-file export and import of a memory's ground truth.
 *
 * File layout (all integers big-endian):
 *
 *   "ENGRAM" 0x00 <container version: 1 byte> <flags: 1 byte, bit 0 = encrypted>
 *   encrypted: <salt: 16 bytes> <iv: 12 bytes> <PBKDF2 iterations: uint32>
 *   body: gzip(JSON lines)                      — not encrypted
 *         AES-256-GCM(gzip(JSON lines))         — encrypted; the GCM tag authenticates it
 *
 * The first JSON line is the manifest (format and schema version, embedding models, per-table
 * row counts, columns and SHA-256 of the table's lines, creation time). Each following line is
 * `{"t": table, "r": row}`; chunk vectors, when included, are `{"t": "@vectors", "r": {...}}`
 * with the vector as base64 little-endian float32. Derived rows (chunks) are rebuilt on import.
 */
export const EXPORT_FORMAT = 'engram-export'
export const EXPORT_FORMAT_VERSION = 1
const CONTAINER_VERSION = 1
const MAGIC = new TextEncoder().encode('ENGRAM\u0000')
const PBKDF2_ITERATIONS = 600_000
/**
 * The iteration counts a file may name: a damaged or hostile file must not make a tab derive a
 * key for minutes (2³¹ iterations of PBKDF2-SHA-256 take about 7 minutes of a core: 2 million
 * took 403 ms in Node on the development machine).
 */
const MIN_FILE_ITERATIONS = 100_000
const MAX_FILE_ITERATIONS = 10_000_000
/**
 * How far a file may inflate: the body of a real export compresses about tenfold (JSON), so a
 * body that inflates past `MAX_INFLATION` times its size and past `INFLATION_FLOOR` bytes is
 * refused as it inflates, before it holds the memory of the tab (a decompression bomb).
 */
const MAX_INFLATION = 200
const INFLATION_FLOOR = 64 * 2 ** 20
const VECTORS = '@vectors'
const BATCH_ROWS = 500

/** Tables that are derived from the ground truth, or bookkeeping: never exported as rows. */
const NOT_EXPORTED = new Set([
  'chunks',
  'term_stats',
  'chunk_stats',
  'keyword_counted',
  'memory_stats',
  'actor_terms',
  'vector_debt',
  'vault',
  'schema_migrations',
  'writer_clock',
  'sync_aliases',
  'sync_devices',
  'sync_received',
  'sync_remotes',
  'sync_vaults',
])

export interface ExportOptions {
  /** Encrypts the file with AES-GCM under a key derived from this passphrase (PBKDF2-SHA-256). */
  passphrase?: string
  /** Include chunk and memory vectors (so the importer need not re-embed). Default true. */
  includeVectors?: boolean
}

export interface ImportOptions {
  /** `replace` empties the memory first; `merge` (default) adds rows it does not have. */
  mode?: 'replace' | 'merge'
  passphrase?: string
}

export interface TableManifest {
  count: number
  sha256: string
  columns: string[]
}

export interface ExportManifest {
  format: typeof EXPORT_FORMAT
  formatVersion: number
  schemaVersion: number
  createdAt: string
  embedModels: string[]
  includeVectors: boolean
  tables: Record<string, TableManifest>
}

export interface ImportReport {
  mode: 'replace' | 'merge'
  schemaVersion: number
  inserted: Record<string, number>
  skipped: Record<string, number>
  vectorsRestored: number
  /** Secrets the file held in its text, replaced on the way in as a write replaces them, by type. */
  redactions: RedactionCount[]
}

interface ColumnInfo {
  table: string
  column: string
  generated: boolean
  type: string
  sequence: string | null
}

export interface Catalog {
  /** Exported tables in an order where every foreign key points backwards. */
  tables: string[]
  columns: Map<string, ColumnInfo[]>
  /** Each table's primary key, in the key's order: the order its rows are exported in. */
  keys: Map<string, string[]>
}

const exportOptionsSchema = z
  .object({ passphrase: z.string().min(1).optional(), includeVectors: z.boolean().optional() })
  .strict()
const importOptionsSchema = z
  .object({ mode: z.enum(['replace', 'merge']).optional(), passphrase: z.string().min(1).optional() })
  .strict()

/** A file that is damaged or not an export (IMPORT_CORRUPT), for every reader of the format. */
export const corrupt = (message: string, cause?: unknown) =>
  new MemoryError('IMPORT_CORRUPT', `The import file is damaged or not an Engram export: ${message}`, {
    ...(cause === undefined ? {} : { cause }),
  })

export async function readCatalog(db: Queryable): Promise<Catalog> {
  const { rows: columns } = await db.query<ColumnInfo>(
    `SELECT c.relname AS table, a.attname AS column,
            -- Generated and always-identity columns are recomputed by the database on insert.
            (a.attgenerated <> '' OR a.attidentity = 'a') AS generated,
            format_type(a.atttypid, a.atttypmod) AS type,
            pg_get_serial_sequence(quote_ident(c.relname), a.attname) AS sequence
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid
      WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
  )
  const { rows: fks } = await db.query<{ child: string; parent: string }>(
    `SELECT cl.relname AS child, pl.relname AS parent
       FROM pg_constraint k
       JOIN pg_class cl ON cl.oid = k.conrelid
       JOIN pg_class pl ON pl.oid = k.confrelid
       JOIN pg_namespace n ON n.oid = cl.relnamespace
      WHERE k.contype = 'f' AND n.nspname = 'public' AND cl.relname <> pl.relname`,
  )
  const { rows: keyColumns } = await db.query<{ table: string; column: string }>(
    `SELECT c.relname AS table, a.attname AS column
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, pos)
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
      WHERE i.indisprimary AND n.nspname = 'public'
      ORDER BY c.relname, k.pos`,
  )
  const keys = new Map<string, string[]>()
  for (const k of keyColumns) keys.set(k.table, [...(keys.get(k.table) ?? []), k.column])
  const byTable = new Map<string, ColumnInfo[]>()
  for (const c of columns) {
    if (NOT_EXPORTED.has(c.table)) continue
    byTable.set(c.table, [...(byTable.get(c.table) ?? []), c])
  }
  // Parents before children; alphabetical otherwise, so exports are deterministic.
  const pending = [...byTable.keys()].sort()
  const ordered: string[] = []
  while (pending.length > 0) {
    const next = pending.findIndex((t) =>
      fks.every((fk) => fk.child !== t || ordered.includes(fk.parent) || !byTable.has(fk.parent)),
    )
    if (next < 0) throw new MemoryError('INTERNAL', 'Foreign keys between exported tables form a cycle.')
    ordered.push(...pending.splice(next, 1))
  }
  return { tables: ordered, columns: byTable, keys }
}

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

export function exportedColumns(catalog: Catalog, table: string, includeVectors: boolean): ColumnInfo[] {
  return (catalog.columns.get(table) ?? []).filter((c) => !c.generated && (includeVectors || c.type !== 'vector'))
}

function toBase64(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

function vectorToBase64(text: string): string {
  const values = text.slice(1, -1).split(',').map(Number)
  const buffer = new ArrayBuffer(values.length * 4)
  const view = new DataView(buffer)
  values.forEach((v, i) => view.setFloat32(i * 4, v, true))
  return toBase64(new Uint8Array(buffer))
}

function vectorFromBase64(text: string): string {
  const bytes = fromBase64(text)
  if (bytes.length % 4 !== 0) throw corrupt('a vector has a length that is not a multiple of 4 bytes')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const values: number[] = []
  for (let i = 0; i < bytes.length; i += 4) values.push(view.getFloat32(i, true))
  return `[${values.join(',')}]`
}

async function pipeBytes(bytes: Uint8Array, transform: CompressionStream | DecompressionStream, limit = Infinity): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(transform)
  if (limit === Infinity) return new Uint8Array(await new Response(stream).arrayBuffer())
  const chunks: Uint8Array<ArrayBuffer>[] = []
  let total = 0
  const reader = stream.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel()
      throw corrupt(`its body inflates past ${limit} bytes, ${MAX_INFLATION} times its size: not a file Engram wrote`)
    }
    chunks.push(value)
  }
  return new Uint8Array(await new Blob(chunks).arrayBuffer())
}

async function deriveKey(passphrase: string, salt: Uint8Array, iterations: number): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey('raw', new TextEncoder().encode(passphrase), 'PBKDF2', false, [
    'deriveKey',
  ])
  return crypto.subtle.deriveKey(
    { name: 'PBKDF2', hash: 'SHA-256', salt: salt as Uint8Array<ArrayBuffer>, iterations },
    material,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  )
}

async function seal(jsonl: string, passphrase: string | undefined): Promise<Blob> {
  const gz = await pipeBytes(new TextEncoder().encode(jsonl), new CompressionStream('gzip'))
  const header = new Uint8Array([...MAGIC, CONTAINER_VERSION, passphrase ? 1 : 0])
  if (!passphrase) return new Blob([header, gz as Uint8Array<ArrayBuffer>], { type: 'application/x-engram' })
  const salt = crypto.getRandomValues(new Uint8Array(16))
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const iterations = new Uint8Array(4)
  new DataView(iterations.buffer).setUint32(0, PBKDF2_ITERATIONS)
  const key = await deriveKey(passphrase, salt, PBKDF2_ITERATIONS)
  const body = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, gz as Uint8Array<ArrayBuffer>))
  return new Blob([header, salt, iv, iterations, body], { type: 'application/x-engram' })
}

async function unseal(file: Blob, passphrase: string | undefined): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer())
  if (bytes.length < MAGIC.length + 2 || MAGIC.some((b, i) => bytes[i] !== b)) {
    throw corrupt('it does not start with the Engram signature')
  }
  const version = bytes[MAGIC.length] as number
  if (version > CONTAINER_VERSION) {
    throw new MemoryError(
      'IMPORT_UNSUPPORTED_VERSION',
      `This file was written by a newer Engram (container format ${version}; this version reads up to ${CONTAINER_VERSION}). Update Engram to import it.`,
    )
  }
  const encrypted = ((bytes[MAGIC.length + 1] as number) & 1) === 1
  let gz = bytes.subarray(MAGIC.length + 2)
  if (encrypted) {
    if (!passphrase) throw new MemoryError('WRONG_PASSPHRASE', 'This file is encrypted: pass its passphrase to import it.')
    if (gz.length < 32 + 16) throw corrupt('the encryption header is truncated')
    const salt = gz.subarray(0, 16)
    const iv = gz.subarray(16, 28)
    const iterations = new DataView(gz.buffer, gz.byteOffset + 28, 4).getUint32(0)
    if (iterations < MIN_FILE_ITERATIONS || iterations > MAX_FILE_ITERATIONS) {
      throw corrupt(`its key derivation names ${iterations} iterations, outside ${MIN_FILE_ITERATIONS} to ${MAX_FILE_ITERATIONS}`)
    }
    const key = await deriveKey(passphrase, salt, iterations)
    try {
      gz = new Uint8Array(
        await crypto.subtle.decrypt(
          { name: 'AES-GCM', iv: iv },
          key,
          gz.subarray(32),
        ),
      )
    } catch (cause) {
      throw new MemoryError('WRONG_PASSPHRASE', 'Wrong passphrase, or the encrypted file was altered.', { cause })
    }
  }
  const limit = Math.max(INFLATION_FLOOR, gz.length * MAX_INFLATION)
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(await pipeBytes(gz, new DecompressionStream('gzip'), limit))
  } catch (cause) {
    if (MemoryError.is(cause)) throw cause
    throw corrupt('its compressed body does not decompress (truncated or altered)', cause)
  }
}

export interface ParsedFile {
  manifest: ExportManifest
  rows: Map<string, Record<string, unknown>[]>
  vectors: { source_id: string; ord: number; model: string; v: string }[]
}

const manifestSchema = z.object({
  format: z.literal(EXPORT_FORMAT),
  formatVersion: z.number().int().positive(),
  schemaVersion: z.number().int().positive(),
  createdAt: z.string(),
  embedModels: z.array(z.string()),
  includeVectors: z.boolean(),
  tables: z.record(
    z.string(),
    z.object({ count: z.number().int().nonnegative(), sha256: z.string().length(64), columns: z.array(z.string()) }),
  ),
})

function parseFile(text: string): ParsedFile {
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  let manifest: ExportManifest
  try {
    const parsed = manifestSchema.safeParse(JSON.parse(lines[0] ?? ''))
    if (!parsed.success) throw parsed.error
    manifest = parsed.data
  } catch (cause) {
    if (cause instanceof MemoryError) throw cause
    throw corrupt('the manifest is missing or malformed', cause)
  }
  if (manifest.formatVersion > EXPORT_FORMAT_VERSION) {
    throw new MemoryError(
      'IMPORT_UNSUPPORTED_VERSION',
      `This file uses export format ${manifest.formatVersion}; this Engram reads up to ${EXPORT_FORMAT_VERSION}. Update Engram to import it.`,
    )
  }
  const byTable = new Map<string, { lines: string[]; rows: Record<string, unknown>[] }>()
  const rowsSeen = new Map<string, number>()
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string
    refuseOversizedLine(line, rowsSeen)
    let parsed: { t?: unknown; r?: unknown }
    try {
      parsed = JSON.parse(line) as { t?: unknown; r?: unknown }
    } catch (cause) {
      throw corrupt(`line ${i + 1} is not valid JSON`, cause)
    }
    if (typeof parsed.t !== 'string' || parsed.r === null || typeof parsed.r !== 'object') {
      throw corrupt(`line ${i + 1} is not a row`)
    }
    const group = byTable.get(parsed.t) ?? { lines: [], rows: [] }
    group.lines.push(line)
    group.rows.push(parsed.r as Record<string, unknown>)
    byTable.set(parsed.t, group)
    rowsSeen.set(parsed.t, group.rows.length)
  }
  const rows = new Map<string, Record<string, unknown>[]>()
  const vectors: ParsedFile['vectors'] = []
  for (const [table, { lines: tableLines, rows: parsed }] of byTable) {
    const expected = manifest.tables[table]
    if (!expected) throw corrupt(`rows of "${table}" are not listed in the manifest`)
    if (expected.count !== tableLines.length) {
      throw corrupt(`"${table}" has ${tableLines.length} rows, the manifest says ${expected.count}`)
    }
    if (sha256Hex(tableLines.join('\n')) !== expected.sha256) {
      throw corrupt(`the checksum of "${table}" does not match`)
    }
    if (table === VECTORS) vectors.push(...(parsed as unknown as ParsedFile['vectors']))
    else rows.set(table, parsed)
  }
  for (const [table, info] of Object.entries(manifest.tables)) {
    if (info.count > 0 && !byTable.has(table)) throw corrupt(`the rows of "${table}" are missing (truncated file?)`)
  }
  return { manifest, rows, vectors }
}

/** Opens a file and checks it whole (signature, passphrase, per-table counts and checksums), without a database. */
export async function readExportFile(file: Blob, passphrase?: string): Promise<ParsedFile> {
  return parseFile(await unseal(file, passphrase))
}

/**
 * Which rows a partial file holds (an archive): for each table named, a condition on its
 * rows, and one on the chunks whose vectors go with them. Written by the engine, never input.
 */
export interface RowSelection {
  tables: Record<string, string>
  vectors: string
}

/**
 * The file format's two halves, each inside the caller's transaction: `write` serialises the
 * memory (or the rows `only` selects) to one compressed file, `load` adds a file's rows.
 * `rebuildDerived` recreates chunks (and anything else derived) for the loaded ground truth.
 */
export function createFileFormat(
  ctx: EngineContext,
  schemaVersion: number,
  rebuildDerived: (tx: Queryable, eventIds?: readonly string[]) => Promise<unknown>,
) {
  return {
    /** The memory's exported tables, their columns and keys (for several `write`s in one transaction). */
    catalog: readCatalog,
    /** Cuts the chunks of these events (every event without any, when not given). */
    rebuild: rebuildDerived,

    async write(
      tx: Queryable,
      options: {
        includeVectors: boolean
        passphrase?: string | undefined
        only?: RowSelection
        catalog?: Catalog
        /** Writes sealed text opened (an export, which its own passphrase protects); an archive keeps it sealed. */
        open?: boolean
      },
    ): Promise<Blob> {
      const { includeVectors, only } = options
      const catalog = options.catalog ?? (await readCatalog(tx))
      const tables: Record<string, TableManifest> = {}
      const body: string[] = []
      for (const table of catalog.tables) {
        const where = only ? only.tables[table] : 'true'
        if (where === undefined) continue
        const columns = exportedColumns(catalog, table, includeVectors)
        const list = columns.map((c) => quoteIdent(c.column)).join(', ')
        // By primary key, so the same rows give the same lines however they were written; a
        // table without one (none today) by every column.
        const key = (catalog.keys.get(table) ?? columns.map((c) => c.column)).map(quoteIdent).join(', ')
        const { rows } = await tx.query<{ row: string }>(
          `SELECT to_jsonb(x)::text AS row FROM (SELECT ${list} FROM ${quoteIdent(table)} WHERE ${where} ORDER BY ${key}) x`,
        )
        const prefix = `{"t":${JSON.stringify(table)},"r":`
        let lines = rows.map((r) => `${prefix}${r.row}}`)
        if (options.open && ctx.vault.status !== 'none') lines = await openLines(ctx.vault, table, lines)
        tables[table] = { count: lines.length, sha256: sha256Hex(lines.join('\n')), columns: columns.map((c) => c.column) }
        body.push(...lines)
      }
      const vectorsWhere = only ? only.vectors : 'true'
      const { rows: models } = await tx.query<{ model: string }>(
        `SELECT DISTINCT embed_model AS model FROM chunks WHERE embed_model IS NOT NULL AND ${vectorsWhere} ORDER BY 1`,
      )
      if (includeVectors) {
        const { rows } = await tx.query<{ source_id: string; ord: number; model: string; v: string }>(
          `SELECT source_id, ord, embed_model AS model, embedding::text AS v
             FROM chunks WHERE embedding IS NOT NULL AND ${vectorsWhere} ORDER BY source_id, ord`,
        )
        const lines = rows.map((r) =>
          JSON.stringify({ t: VECTORS, r: { source_id: r.source_id, ord: r.ord, model: r.model, v: vectorToBase64(r.v) } }),
        )
        tables[VECTORS] = { count: lines.length, sha256: sha256Hex(lines.join('\n')), columns: [] }
        body.push(...lines)
      }
      const manifest: ExportManifest = {
        format: EXPORT_FORMAT,
        formatVersion: EXPORT_FORMAT_VERSION,
        schemaVersion,
        createdAt: ctx.now().toISOString(),
        embedModels: models.map((m) => m.model),
        includeVectors,
        tables,
      }
      return seal(`${[JSON.stringify(manifest), ...body].join('\n')}\n`, options.passphrase)
    },

    /**
     * Checks a file and adds its rows (`merge`), or replaces everything with them. Chunks are
     * then rebuilt for every event without any, or with `rebuild: 'file'` only for the file's.
     */
    async load(
      tx: Queryable,
      file: Blob,
      options: {
        mode: 'replace' | 'merge'
        passphrase?: string | undefined
        rebuild?: 'all' | 'file'
        /** An archive this memory wrote (its sealed rows stay sealed), or a file from anyone (`judgeRows`). */
        from?: 'file' | 'archive'
      },
    ): Promise<ImportReport> {
      const { mode } = options
      const { manifest, rows, vectors } = parseFile(await unseal(file, options.passphrase))
      if (manifest.schemaVersion > schemaVersion) {
        throw new MemoryError(
          'IMPORT_UNSUPPORTED_VERSION',
          `This file holds schema version ${manifest.schemaVersion}; this Engram has ${schemaVersion}. Update Engram to import it.`,
        )
      }
      let redactions: RedactionCount[] = []
      if (options.from !== 'archive') {
        // Every row is judged by the write path's rules before anything is written.
        judgeImportedRows(rows, (await readCatalog(tx)).keys)
        judgeImportedVectors(vectors)
        redactions = redactImportedRows(rows)
        judgeRows(rows)
      }
      const report: ImportReport = {
        mode,
        schemaVersion: manifest.schemaVersion,
        inserted: {},
        skipped: {},
        vectorsRestored: 0,
        redactions,
      }
      try {
        const only = options.rebuild === 'file' ? (rows.get('events') ?? []).map((r) => String(r.id)) : undefined
        await loadRows(tx, { manifest, rows, vectors }, mode, report, (t) => rebuildDerived(t, only))
      } catch (error) {
        if (error instanceof MemoryError) throw error
        throw corrupt(`its rows do not fit this memory's schema (${(error as Error).message})`, error)
      }
      return report
    },
  }
}

export type FileFormat = ReturnType<typeof createFileFormat>

/** Export and import of the whole memory, each in a transaction of its own. */
export function createPortable(ctx: EngineContext, format: FileFormat) {
  return {
    /**
     * Writes the whole memory to one compressed (optionally encrypted) file.
     *
     * @example
     * const file = await memory.exportFile({ passphrase: 'correct horse' })
     */
    async exportFile(options: ExportOptions = {}): Promise<Blob> {
      const opts = parseInput(exportOptionsSchema, options, 'export options')
      return ctx.db.transaction((tx) =>
        format.write(tx, { includeVectors: opts.includeVectors ?? true, passphrase: opts.passphrase, open: true }),
      )
    },

    /**
     * Reads a file written by `exportFile`. Everything is checked (signature, version,
     * passphrase, checksums, counts, row shapes) before anything changes, and the rows are
     * applied in one transaction: on any failure the memory is exactly as it was. `merge` is
     * idempotent.
     *
     * @example
     * await memory.importFile(file, { mode: 'replace', passphrase: 'correct horse' })
     */
    async importFile(file: Blob, options: ImportOptions = {}): Promise<ImportReport> {
      if (!(file instanceof Blob)) throw new MemoryError('INVALID_INPUT', 'importFile expects a Blob or File.')
      const opts = parseInput(importOptionsSchema, options, 'import options')
      return ctx.db.transaction((tx) => format.load(tx, file, { mode: opts.mode ?? 'merge', passphrase: opts.passphrase }))
    },
  }
}

/**
 * Export lines with their sealed text opened, as plain rows: an event loses its `sealed`
 * mark and a memory takes its plain hash again, so the memory that imports the file seals
 * them under its own vault, or keeps them plain without one.
 */
async function openLines(vault: Vault, table: string, lines: string[]): Promise<string[]> {
  return Promise.all(
    lines.map(async (line) => {
      const sealedText = line.includes(SEALED_PREFIX)
      if (!sealedText && !(table === 'events' && line.includes('"sealed": true'))) return line
      if (sealedText && vault.status !== 'open') throw vaultLocked('its sealed rows cannot be exported')
      const { t, r } = JSON.parse(line) as { t: string; r: Record<string, unknown> }
      const row = sealedText ? await vault.open(r) : { ...r }
      if (table === 'events' && row.meta && typeof row.meta === 'object') {
        const { sealed: _sealed, ...meta } = row.meta as Record<string, unknown>
        row.meta = meta
      }
      if (table === 'memories' && typeof row.content === 'string' && r.content !== row.content) {
        row.hash = memoryHash(row.content)
      }
      return JSON.stringify({ t, r: row })
    }),
  )
}

/** The columns a vault seals: an export writes them open, so a file never holds sealed text there. */
const SEALED_COLUMNS: Record<string, readonly string[]> = {
  events: ['content'],
  artifacts: ['content'],
  memories: ['content'],
  memory_history: ['old_value', 'new_value'],
}

/** Sets every `vector` column of the file's rows to null, and the `embed_model` naming its model. */
function dropVectorColumns(rows: ParsedFile['rows'], catalog: Catalog): void {
  for (const [table, tableRows] of rows) {
    const columns = (catalog.columns.get(table) ?? []).filter((c) => c.type === 'vector').map((c) => c.column)
    if (columns.length === 0) continue
    for (const row of tableRows) {
      for (const column of columns) row[column] = null
      if ('embed_model' in row) row.embed_model = null
    }
  }
}

/**
 * What an export file from anyone must say of itself: no sealed text where a vault seals (an
 * export opens it, so sealed text there was put by hand and no key of this memory opens it),
 * no event marked sealed; and each memory's hash is made again from its text, so a memory is
 * found as a duplicate of its own text only. A sync between memories of one vault key
 * (`sealed`) carries sealed rows as they are stored, each sealed memory with its keyed hash.
 */
export function judgeRows(rows: Map<string, Record<string, unknown>[]>, { sealed = false } = {}): void {
  if (sealed) {
    for (const row of rows.get('memories') ?? []) {
      if (typeof row.content === 'string' && !row.content.startsWith(SEALED_PREFIX)) row.hash = memoryHash(row.content)
    }
    return
  }
  for (const [table, columns] of Object.entries(SEALED_COLUMNS)) {
    for (const row of rows.get(table) ?? []) {
      for (const column of columns) {
        const value = row[column]
        const text = typeof value === 'string' ? value : value == null ? '' : JSON.stringify(value)
        if (text.includes(SEALED_PREFIX)) {
          throw corrupt(`"${table}" row ${JSON.stringify(row.id)} holds sealed text in ${column}, which an export writes open`)
        }
      }
    }
  }
  for (const row of rows.get('events') ?? []) {
    const meta = row.meta
    if (meta !== null && typeof meta === 'object' && 'sealed' in meta) {
      throw corrupt(`"events" row ${JSON.stringify(row.id)} is marked sealed, which an export never writes`)
    }
  }
  for (const row of rows.get('memories') ?? []) {
    if (typeof row.content === 'string') row.hash = memoryHash(row.content)
  }
}

export function checkCounters(table: string, rows: readonly Record<string, unknown>[]): void {
  const column = table === 'events' ? 'turn_index' : table === 'relations' ? 'id' : undefined
  if (!column) return
  for (const row of rows) {
    const value = row[column]
    if (value === null || value === undefined) continue
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_IMPORTED_COUNTER) {
      throw corrupt(`"${table}" has a ${column} of ${JSON.stringify(value)}, outside 0 to ${MAX_IMPORTED_COUNTER}`)
    }
  }
}

async function loadRows(
  tx: Queryable,
  { manifest, rows, vectors }: ParsedFile,
  mode: 'replace' | 'merge',
  report: ImportReport,
  rebuildDerived: (tx: Queryable) => Promise<unknown>,
): Promise<void> {
  const catalog = await readCatalog(tx)
  // Rows come in with their own, earlier times: the Cypher graph redraws itself whole.
  await tx.query(`SELECT nextval('graph_resets')`)
  for (const table of rows.keys()) {
    if (!catalog.columns.has(table)) throw corrupt(`unknown table "${table}"`)
    const known = new Set((catalog.columns.get(table) ?? []).filter((c) => !c.generated).map((c) => c.column))
    const unknown = (manifest.tables[table]?.columns ?? []).filter((c) => !known.has(c))
    if (unknown.length > 0) throw corrupt(`"${table}" has unknown columns: ${unknown.join(', ')}`)
  }
  if (mode === 'replace') {
    await tx.exec(`SET LOCAL engram.forgetting = 'on'`)
    for (const table of ['chunks', ...[...catalog.tables].reverse()]) {
      await tx.exec(`DELETE FROM ${quoteIdent(table)}`)
    }
  }
  // A database without pgvector (a keyword-only server) holds no vectors: the rows come without.
  const { rows: installed } = await tx.query<{ pgvector: boolean }>(`SELECT ${PGVECTOR_SQL} AS pgvector`)
  if (installed[0]?.pgvector !== true) dropVectorColumns(rows, catalog)
  // Many new memories with vectors: their HNSW index is built once after they are in.
  const memoryIds = (rows.get('memories') ?? []).flatMap((r) => (r.vector == null ? [] : [String(r.id)]))
  let droppedMemoryIndexes: string[] = []
  if (bulkWorthIt(memoryIds.length, 0)) {
    const { rows: counts } = await tx.query<{ incoming: number; indexed: number }>(
      `SELECT (SELECT count(*) FROM unnest($1::text[]) f(id) WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.id))::int AS incoming,
              ${INDEXED_MEMORIES_SQL}::int AS indexed`,
      [memoryIds],
    )
    if (bulkWorthIt(counts[0]?.incoming ?? 0, counts[0]?.indexed ?? 0)) droppedMemoryIndexes = await dropVectorIndexes(tx, 'memories')
  }
  let relationIds: Map<number, number> | undefined
  // The events this load added: only their chunks take the file's vectors.
  const newEvents: string[] = []
  for (const table of catalog.tables) {
    let tableRows = rows.get(table) ?? []
    checkCounters(table, tableRows)
    if (table === 'edges' && relationIds) {
      // Relation ids are local serials: an edge follows its relation by name.
      const map = relationIds
      tableRows = tableRows.map((r) => ({ ...r, rel: map.get(Number(r.rel)) ?? r.rel }))
    }
    // Relation ids are local serials: in a merge, relations are matched by name and get
    // this memory's ids. A replace keeps the file's (the table is empty), so the memory it
    // restores exports the same file.
    const columns = (manifest.tables[table]?.columns ?? [])
      .filter((c) => table !== 'relations' || c !== 'id' || mode === 'replace')
      .map(quoteIdent)
      .join(', ')
    let inserted = 0
    for (let i = 0; i < tableRows.length; i += BATCH_ROWS) {
      const batch = tableRows.slice(i, i + BATCH_ROWS)
      const result = await tx.query<{ id: string }>(
        `INSERT INTO ${quoteIdent(table)} (${columns})
         SELECT ${columns} FROM jsonb_populate_recordset(NULL::${quoteIdent(table)}, $1::jsonb)
         ON CONFLICT DO NOTHING${table === 'events' ? ' RETURNING id' : ''}`,
        [JSON.stringify(batch)],
      )
      if (table === 'events') {
        for (const r of result.rows) newEvents.push(r.id)
        inserted += result.rows.length
      } else inserted += result.affectedRows ?? 0
    }
    report.inserted[table] = inserted
    report.skipped[table] = tableRows.length - inserted
    if (table === 'relations' && tableRows.length > 0) {
      const { rows: mapped } = await tx.query<{ from: number; to: number }>(
        `SELECT x.id AS from, r.id AS to
           FROM jsonb_to_recordset($1::jsonb) AS x(id int, name text)
           JOIN relations r ON r.name = x.name`,
        [JSON.stringify(tableRows)],
      )
      relationIds = new Map(mapped.map((m) => [m.from, m.to]))
    }
    for (const c of catalog.columns.get(table) ?? []) {
      if (!c.sequence || tableRows.length === 0) continue
      await tx.query(
        `SELECT setval($1::regclass, GREATEST((SELECT max(${quoteIdent(c.column)}) FROM ${quoteIdent(table)}), 1))`,
        [c.sequence],
      )
    }
  }
  // Rebuilding every chunk and then writing its vector puts each chunk's terms into the
  // GIN index twice (an UPDATE of the vector is not a heap-only update). Gathered in the
  // index's pending list and merged once instead.
  await tx.exec(`ALTER INDEX chunks_tsv SET (fastupdate = on)`)
  await rebuildDerived(tx)
  // Many vectors: build the HNSW index once instead of inserting them one by one.
  // Only the chunks of the events this load added take the file's vectors.
  const added = new Set(newEvents)
  const restorable = installed[0]?.pgvector ? vectors.filter((v) => added.has(v.source_id)) : []
  let dropped: string[] = []
  if (bulkWorthIt(restorable.length, 0)) {
    const { rows: counts } = await tx.query<{ open: number; indexed: number }>(
      `SELECT ${MISSING_VECTORS_SQL}::int AS open, ${INDEXED_CHUNKS_SQL}::int AS indexed`,
    )
    // Only chunks without a vector take a restored one.
    const incoming = Math.min(restorable.length, counts[0]?.open ?? 0)
    if (bulkWorthIt(incoming, counts[0]?.indexed ?? 0)) dropped = await dropVectorIndexes(tx)
  }
  for (let i = 0; i < restorable.length; i += BATCH_ROWS) {
    const batch = restorable.slice(i, i + BATCH_ROWS).map((v) => ({ ...v, v: vectorFromBase64(v.v) }))
    const result = await tx.query(
      `UPDATE chunks c SET embedding = x.v::vector, embed_model = x.model
         FROM jsonb_to_recordset($1::jsonb) AS x(source_id text, ord int, model text, v text)
        WHERE c.source_id = x.source_id AND c.ord = x.ord AND c.embedding IS NULL`,
      [JSON.stringify(batch)],
    )
    report.vectorsRestored += result.affectedRows ?? 0
  }
  // Searches must not scan a pending list: merge it and write straight to the index again.
  await tx.query(`SELECT gin_clean_pending_list('chunks_tsv'::regclass)`)
  await tx.exec(`ALTER INDEX chunks_tsv SET (fastupdate = off)`)
  await buildVectorIndexes(tx, [...dropped, ...droppedMemoryIndexes])
}
