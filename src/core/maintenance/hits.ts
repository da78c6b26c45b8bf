import type { Queryable } from '../kernel/db.ts'
import type { HitLog } from '../kernel/engine-context.ts'

export type { HitLog }

/** How long after a retrieval hit the hits noted are written, in the background. */
export const HIT_FLUSH_DELAY_MS = 60_000

/**
 * When searches and contexts last returned each conversation. Kept in memory as hits come,
 * so that a search never writes, and written in one statement a minute after the first hit
 * not yet written (in the background), when archiving reads them and when the engine stops.
 */
export function createHitLog(db: Queryable, options: { onError: (cause: unknown) => void; delayMs?: number }): HitLog {
  const pending = new Map<string, { tenantId: string; conversationId: string; at: Date }>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false

  /**
   * Writes the hits noted since the last flush (a hit never moves a later one back), of the
   * conversations that still exist, live or archived: a conversation forgotten after its hit
   * was noted (even while this write waited its turn) leaves no trace here.
   */
  async function flush(q: Queryable = db): Promise<void> {
    if (pending.size === 0) return
    const taken = [...pending.values()]
    await q.query(
      `INSERT INTO conversation_hits (tenant_id, conversation_id, last_hit_at)
       SELECT h.* FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS h (tenant_id, conversation_id, at)
       WHERE EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = h.tenant_id AND e.conversation_id = h.conversation_id)
          OR EXISTS (SELECT 1 FROM archives a WHERE a.tenant_id = h.tenant_id AND a.conversation_id = h.conversation_id)
       ON CONFLICT (tenant_id, conversation_id)
       DO UPDATE SET last_hit_at = GREATEST(conversation_hits.last_hit_at, EXCLUDED.last_hit_at)`,
      [taken.map((h) => h.tenantId), taken.map((h) => h.conversationId), taken.map((h) => h.at)],
    )
    for (const h of taken) {
      const key = `${h.tenantId}\u0000${h.conversationId}`
      if (pending.get(key) === h) pending.delete(key)
    }
  }

  return {
    /** The conversations of a retrieval's hits, at `at`. */
    note(tenantId: string, conversationIds: Iterable<string>, at: Date): void {
      for (const conversationId of conversationIds) {
        pending.set(`${tenantId}\u0000${conversationId}`, { tenantId, conversationId, at })
      }
      if (timer !== undefined || stopped || pending.size === 0) return
      timer = setTimeout(() => {
        timer = undefined
        flush().catch(options.onError)
      }, options.delayMs ?? HIT_FLUSH_DELAY_MS)
      // A pending write of hits never keeps a process alive on its own.
      if (typeof timer === 'object' && 'unref' in timer) timer.unref()
    },
    flush,
    /** No more background writes; writes what is noted (before closing the database). */
    async stop(): Promise<void> {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      await flush()
    },
  }
}

