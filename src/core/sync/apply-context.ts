import type { Queryable } from '../kernel/db.ts'
import { type Catalog, exportedColumns, quoteIdent } from '../portable/portable.ts'
import type { SyncTable } from './rows.ts'

/**
 * Where rows are applied. A server numbers what it receives: a pushed turn whose number
 * another device's turn holds takes the next free number. A device takes the server's
 * numbers: its own rows the server does not hold yet (dated after `pushedUntil`, and not
 * received from the server) move out of their way. Both note what they received, and when.
 */
export type Side =
  | { kind: 'server'; deviceId: string; at: Date; pulledUntil: Date | null }
  | { kind: 'device'; pushedUntil: Date | null; at: Date }

/** What applying one page of rows works with. */
export interface Ctx {
  tx: Queryable
  catalog: Catalog
  side: Side
  tenantId: string
  /** Rows to note as received from the other side. */
  received: { tbl: SyncTable; id: string }[]
  /** The turn number the sender gave each new event. */
  sentTurns: Map<string, unknown>
}

/** The exported columns of `table`, quoted, as a list. */
export const columnsOf = (c: Ctx, table: string, skip: readonly string[] = []) =>
  exportedColumns(c.catalog, table, false)
    .map((col) => col.column)
    .filter((col) => !skip.includes(col))
    .map(quoteIdent)
    .join(', ')

/** Inserts the rows whose id is new here; returns their ids. */
export async function insertRows(c: Ctx, table: SyncTable, rows: readonly Record<string, unknown>[]): Promise<string[]> {
  if (rows.length === 0) return []
  const columns = columnsOf(c, table, table === 'relations' ? ['id'] : [])
  const { rows: added } = await c.tx.query<{ id: string }>(
    `INSERT INTO ${table} (${columns})
     SELECT ${columns} FROM jsonb_populate_recordset(NULL::${table}, $1::jsonb)
     ON CONFLICT (id) DO NOTHING RETURNING id::text`,
    [JSON.stringify(rows)],
  )
  for (const r of added) c.received.push({ tbl: table, id: r.id })
  return added.map((r) => r.id)
}

export async function insertNew(c: Ctx, table: SyncTable, rows: readonly Record<string, unknown>[]): Promise<number> {
  return (await insertRows(c, table, rows)).length
}
