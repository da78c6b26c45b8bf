import { z } from './validate.ts'

/** A point in time as callers give it: an ISO-8601 string with offset, or a Date. */
export const timeInput = z.union([
  z.iso.datetime({ offset: true }),
  z.date().refine((d) => !Number.isNaN(d.getTime()), 'invalid Date'),
])

export type TimeInput = z.infer<typeof timeInput>

export function toDate(value: TimeInput): Date {
  return value instanceof Date ? value : new Date(value)
}

/** Timestamps leave the engine as ISO strings: plain, sortable, JSON-safe. */
export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString()
}

/** `asOf` for reads: rows created after it are invisible; edges tombstoned after it are visible. */
export const asOfOptions = z.object({ asOf: timeInput.optional() }).strict()

export function asOfParam(asOf: TimeInput | undefined): Date | null {
  return asOf === undefined ? null : toDate(asOf)
}
