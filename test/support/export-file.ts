import { sha256Hex } from '../../src/core/kernel/hash.ts'

/**
 * An unencrypted export file with every row of `table` passed through `edit`, and that
 * table's checksum written anew: a file as a writer other than Engram could make it.
 */
export async function editedExport(file: Blob, table: string, edit: (row: Record<string, unknown>) => void): Promise<Blob> {
  const bytes = new Uint8Array(await file.arrayBuffer())
  const text = await new Response(new Blob([bytes.subarray(9)]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
  const lines = text.trimEnd().split('\n')
  const manifest = JSON.parse(lines[0] as string) as { tables: Record<string, { sha256: string }> }
  const prefix = `{"t":"${table}"`
  const body = lines.slice(1).map((line) => {
    if (!line.startsWith(prefix)) return line
    const row = JSON.parse(line) as { r: Record<string, unknown> }
    edit(row.r)
    return `${prefix},"r":${JSON.stringify(row.r)}}`
  })
  ;(manifest.tables[table] as { sha256: string }).sha256 = sha256Hex(body.filter((l) => l.startsWith(prefix)).join('\n'))
  const jsonl = `${[JSON.stringify(manifest), ...body].join('\n')}\n`
  const gz = await new Response(new Blob([jsonl]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer()
  return new Blob([bytes.subarray(0, 9), gz])
}
