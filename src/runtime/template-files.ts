import { MemoryFS } from '@electric-sql/pglite'
import { parseTar } from 'nanotar'

/** A folder or file of a data-directory template, its path relative to the data directory. */
export type TemplateEntry = { kind: 'dir'; path: string } | { kind: 'file'; path: string; data: Uint8Array; mtime?: number }

/**
 * The folders and files of a template (`dumpDataDir`, plain or gzipped), parents first. Paths
 * start with `/` and are relative to the data directory.
 */
export async function templateEntries(template: Blob): Promise<TemplateEntry[]> {
  let bytes = new Uint8Array(await template.arrayBuffer())
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    bytes = new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer())
  }
  const entries: TemplateEntry[] = []
  for (const item of parseTar(bytes)) {
    const path = `/${item.name.replace(/^\/+/, '').replace(/\/+$/, '')}`
    if (path === '/') continue
    if (item.type === 'directory') entries.push({ kind: 'dir', path })
    else if (item.type === 'file') {
      const mtime = item.attrs?.mtime
      entries.push({ kind: 'file', path, data: item.data ?? new Uint8Array(0), ...(mtime === undefined ? {} : { mtime: mtime * 1000 }) })
    }
  }
  return entries
}

/** The parts of PGlite's Emscripten module a template is copied in with. */
interface EmscriptenModule {
  ENV: { PGDATA: string }
  FS: {
    mkdirTree(path: string, mode: number): void
    mkdir(path: string, mode: number): void
    writeFile(path: string, data: Uint8Array, options: { mode: number; canOwn: boolean }): void
    utime(path: string, atime: number, mtime: number): void
  }
}

/** Parsed templates, by the Blob they came from: tests open hundreds of memories from one. */
const parsed = new WeakMap<Blob, Promise<TemplateEntry[]>>()

/**
 * An in-memory file system that starts as a copy of `template`. PGlite's `loadDataDir` parses
 * the tarball again at every open and looks each file's folders up one by one; copying parsed
 * entries makes a new in-memory database open in about a quarter less time (docs/BENCHMARKS.md,
 * "A memory in memory, from a parsed template").
 */
export class TemplateMemoryFS extends MemoryFS {
  readonly #template: Blob

  constructor(template: Blob) {
    super()
    this.#template = template
  }

  override async initialSyncFs(): Promise<void> {
    let entries = parsed.get(this.#template)
    if (!entries) {
      entries = templateEntries(this.#template)
      parsed.set(this.#template, entries)
      entries.catch(() => parsed.delete(this.#template))
    }
    const mod = this.pg!.Module as unknown as EmscriptenModule
    const root = mod.ENV.PGDATA
    mod.FS.mkdirTree(root, 0o700)
    for (const entry of await entries) {
      const path = root + entry.path
      if (entry.kind === 'dir') {
        mod.FS.mkdir(path, 0o700)
        continue
      }
      // A copy per database: the file system owns what it is given and writes into it.
      mod.FS.writeFile(path, entry.data.slice(), { mode: 0o600, canOwn: true })
      if (entry.mtime !== undefined) mod.FS.utime(path, entry.mtime, entry.mtime)
    }
  }
}
