import type { Channel, StoredSensitivity } from './scope.ts'

const ALLOWED: Record<Channel, readonly StoredSensitivity[]> = {
  public: ['none'],
  team: ['none', 'low'],
  agent: ['none', 'low'],
  private: ['none', 'low', 'high'],
}

/**
 * The sensitivities a reader on `channel` may see. Reads filter by it inside SQL, so content
 * above the channel's level never leaves the database.
 *
 * @example
 * allowedSensitivities('public') // → ['none']
 */
export function allowedSensitivities(channel: Channel): StoredSensitivity[] {
  return [...ALLOWED[channel]]
}
