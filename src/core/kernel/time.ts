import { z } from './validate.ts'

/** Years a time may fall in: those Postgres reads back from an ISO string (four digits, AD). */
const inYears = (d: Date) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999

/** A point in time as callers give it: an ISO-8601 string with offset, or a Date; years 1–9999. */
export const timeInput = z.union([
  z.iso.datetime({ offset: true }).refine((s) => inYears(new Date(s)), 'a time between the years 1 and 9999 is required'),
  z
    .date()
    .refine((d) => !Number.isNaN(d.getTime()), 'invalid Date')
    .refine((d) => Number.isNaN(d.getTime()) || inYears(d), 'a time between the years 1 and 9999 is required'),
])

/** `timeInput`, read as a Date. */
export const timeDate = timeInput.transform(toDate)

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
