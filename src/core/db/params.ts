import { compileFilter, type FilterColumn } from './filters.ts'

/** Numbered SQL parameters collected as a statement is put together; values are never spliced. */
export class Params {
  readonly values: unknown[] = []

  /** Adds a value and returns its placeholder (`$1`, `$2`, …). */
  add(value: unknown): string {
    this.values.push(value)
    return `$${this.values.length}`
  }

  /** A filter expression as SQL over `columns` (other fields in `jsonColumn`), or `true` without one. */
  filter(expr: unknown, columns: Record<string, FilterColumn>, jsonColumn: string): string {
    if (expr === undefined) return 'true'
    const f = compileFilter(expr, { columns, jsonColumn, paramOffset: this.values.length })
    this.values.push(...f.params)
    return f.sql
  }
}
