import { CHANNELS, type Channel, type StoredSensitivity } from '../kernel/scope.ts'
import { z } from '../kernel/validate.ts'

/**
 * What each channel may load, least privilege first. `secret` is in no list: it is never
 * stored, so never loaded. `low` is kept out of `public` (a public answer carries no
 * preferences or private decisions); `high` only reaches the private and team channels;
 * `agent` (one agent handing work to another) sees what a public reader sees plus `low`.
 */
export const CHANNEL_SENSITIVITIES: Readonly<Record<Channel, readonly StoredSensitivity[]>> = Object.freeze({
  public: Object.freeze(['none'] as const),
  agent: Object.freeze(['none', 'low'] as const),
  team: Object.freeze(['none', 'low', 'high'] as const),
  private: Object.freeze(['none', 'low', 'high'] as const),
})

/** Reads default to the owner's own view: the private channel, which sees everything stored. */
export const DEFAULT_READ_CHANNEL: Channel = 'private'

/** A read option: the channel the answer will be shown in. */
export const readChannel = z.enum(CHANNELS).default(DEFAULT_READ_CHANNEL)

/**
 * The sensitivities a read for `channel` may return.
 *
 * @example
 * allowedSensitivities('public') // → ['none']
 * allowedSensitivities('team')   // → ['none', 'low', 'high']
 */
export function allowedSensitivities(channel: Channel): StoredSensitivity[] {
  return [...CHANNEL_SENSITIVITIES[channel]]
}

/** Whether a row of `sensitivity` may be shown in `channel`. */
export function isVisibleIn(channel: Channel, sensitivity: string): boolean {
  return (CHANNEL_SENSITIVITIES[channel] as readonly string[]).includes(sensitivity)
}
