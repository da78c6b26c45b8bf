import { transferHandlers } from 'comlink'
import { isErrorCode, MemoryError } from '../core/kernel/errors.ts'

export interface WireError {
  name: string
  message: string
  stack?: string
  code?: string
  details?: Record<string, unknown>
  cause?: WireError | { value: unknown }
}

export type WireValue = WireError | { value: unknown }

/** A structured-cloneable form of a thrown value that keeps MemoryError's code, details and cause. */
export function toWire(error: unknown, depth = 0): WireValue {
  if (!(error instanceof Error)) {
    try {
      return { value: structuredClone(error) }
    } catch {
      return { value: String(error) }
    }
  }
  const wire: WireError = { name: error.name, message: error.message }
  if (error.stack !== undefined) wire.stack = error.stack
  if (error instanceof MemoryError) {
    wire.code = error.code
    if (error.details !== undefined) wire.details = error.details
  }
  if (error.cause !== undefined && depth < 4) wire.cause = toWire(error.cause, depth + 1)
  return wire
}

/** The inverse of {@link toWire}: a MemoryError comes back as a MemoryError. */
export function fromWire(wire: WireValue): unknown {
  if ('value' in wire) return wire.value
  const cause = wire.cause === undefined ? undefined : fromWire(wire.cause)
  const error = isErrorCode(wire.code)
    ? new MemoryError(wire.code, wire.message, {
        ...(wire.details === undefined ? {} : { details: wire.details }),
        ...(cause === undefined ? {} : { cause }),
      })
    : Object.assign(new Error(wire.message, cause === undefined ? undefined : { cause }), { name: wire.name })
  if (wire.stack !== undefined) error.stack = wire.stack
  return error
}

/**
 * Comlink's built-in handler for thrown values keeps only name, message and stack. This one
 * replaces it (on both sides of the worker boundary) so a MemoryError arrives as a
 * MemoryError with its code, details and cause chain.
 */
export function installErrorTransfer(): void {
  transferHandlers.set('throw', {
    canHandle: (value: unknown): value is { value: unknown } =>
      typeof value === 'object' &&
      value !== null &&
      Object.getOwnPropertySymbols(value).some((s) => s.description === 'Comlink.thrown'),
    serialize: (thrown: { value: unknown }) => [toWire(thrown.value), []],
    deserialize: (wire: WireValue) => {
      throw fromWire(wire)
    },
  })
}
