import { countChanged, type Queryable } from '../kernel/db.ts'
import type { HitLog } from './hits.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { MemoryError } from '../kernel/errors.ts'
import { newId } from '../kernel/ids.ts'
import type { FileFormat, ImportReport } from '../portable/portable.ts'
import { identifier } from '../kernel/scope.ts'
import { iso } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'

/** At most this many conversations per `archives.create` call (one transaction). */
export const MAX_ARCHIVE_BATCH = 1000


const createInput = z
  .object({
    tenantId: identifier.default('default'),
    /** Archive conversations with no event and no retrieval hit in this many milliseconds. */
    idleForMs: z.number().int().nonnegative().optional(),
    /** Only these conversations (still subject to `idleForMs` when it is given). */
    conversationIds: z.array(identifier).min(1).max(MAX_ARCHIVE_BATCH).optional(),
    limit: z.number().int().positive().max(MAX_ARCHIVE_BATCH).default(100),
    /**
     * Keep the chunks' vectors in the archive (default), so a restore puts them back as they
     * were; `false` makes archives smaller and a restore re-embeds in the background.
     */
    vectors: z.boolean().default(true),
  })
  .strict()
  .refine((o) => o.idleForMs !== undefined || o.conversationIds !== undefined, {
    message: 'name the conversations (conversationIds) or how long they must have been idle (idleForMs)',
  })

export type ArchiveOptions = z.input<typeof createInput>

export interface ArchiveCounts {
  events: number
  chunks: number
  artifacts: number
  edges: number
  /** Chunk vectors kept in the archive (0 with `vectors: false`). */
  vectors: number
}

export interface ArchiveInfo {
  id: string
  tenantId: string
  conversationId: string
  /** The rows moved out of the live memory. */
  counts: ArchiveCounts
  /** The conversation's first and last event. */
  firstEventAt: string
  lastEventAt: string
  /** Size of the archive's compressed file. */
  bytes: number
  createdAt: string
}

export interface RestoreResult {
  archiveId: string
  conversationId: string
  /** Rows added back per table, as `importFile` reports them. */
  inserted: ImportReport['inserted']
  vectorsRestored: number
}

interface ArchiveRow {
  id: string
  tenant_id: string
  conversation_id: string
  counts: ArchiveCounts
  first_event_at: Date | string
  last_event_at: Date | string
  bytes: number
  created_at: Date | string
}

const ARCHIVE_COLUMNS = 'id, tenant_id, conversation_id, counts, first_event_at, last_event_at, bytes, created_at'

function toArchive(row: ArchiveRow): ArchiveInfo {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    conversationId: row.conversation_id,
    counts: row.counts,
    firstEventAt: iso(row.first_event_at),
    lastEventAt: iso(row.last_event_at),
    bytes: row.bytes,
    createdAt: iso(row.created_at),
  }
}

/** The rows of the conversation in `archive_events` / `archive_edges` that its archive holds. */
const ARCHIVED_ROWS = {
  tables: {
    events: 'id IN (SELECT id FROM archive_events)',
    artifacts: 'event_id IN (SELECT id FROM archive_events)',
    edges: 'id IN (SELECT id FROM archive_edges)',
    // The names of the edges' relations: a restore maps them to this memory's ids.
    relations: 'id IN (SELECT e.rel FROM archive_edges a JOIN edges e ON e.id = a.id)',
  },
  vectors: 'source_id IN (SELECT id FROM archive_events)',
}

/** The live rows an archive holds: what archiving deletes and restoring adds back. */
function rowsOf(counts: ArchiveCounts): number {
  return counts.events + counts.chunks + counts.edges + counts.artifacts
}

/**
 * Restores archives inside the caller's transaction (of `tenantId` only, when given): each
 * file is merged back (its chunks rebuilt, its vectors put back) and the archive row deleted.
 * Returns each with the live rows it added back.
 */
export async function restoreArchives(
  tx: Queryable,
  format: FileFormat,
  ids: readonly string[],
  tenantId: string | null = null,
  /**
   * An archive whose file cannot be read (damaged, or brought in by an import that never read
   * it): `throw` its IMPORT_CORRUPT; `drop` it (forget: what it holds must go, and nothing can
   * read it); `keep` it as it is.
   */
  unreadable: 'throw' | 'drop' | 'keep' = 'throw',
): Promise<(RestoreResult & { rows: number })[]> {
  const restored: (RestoreResult & { rows: number })[] = []
  for (const id of ids) {
    if (unreadable === 'keep') await tx.exec('SAVEPOINT engram_archive')
    const { rows } = await tx.query<{ conversation_id: string; counts: ArchiveCounts; file: Uint8Array; event_ids: string[] }>(
      `DELETE FROM archives WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2) RETURNING conversation_id, counts, file, event_ids`,
      [id, tenantId],
    )
    const row = rows[0]
    if (!row) continue
    if (unreadable === 'drop') await tx.exec('SAVEPOINT engram_archive')
    let report: Awaited<ReturnType<FileFormat['load']>>
    try {
      report = await format.load(tx, new Blob([row.file as Uint8Array<ArrayBuffer>]), { mode: 'merge', rebuild: 'file', from: 'archive' })
    } catch (error) {
      if (unreadable === 'throw' || !MemoryError.is(error, 'IMPORT_CORRUPT')) throw error
      // Back to before the load (and, to keep it, before the archive's removal).
      await tx.exec('ROLLBACK TO SAVEPOINT engram_archive')
      if (unreadable === 'drop') restored.push({ archiveId: id, conversationId: row.conversation_id, inserted: {}, vectorsRestored: 0, rows: 0 })
      continue
    }
    if (unreadable !== 'throw') await tx.exec('RELEASE SAVEPOINT engram_archive')
    // The archive took every edge touching its events, other conversations' too (another
    // conversation's reference to one of them, a memory drawn from one): those whose other end,
    // an event or a memory, was forgotten while it was archived stay forgotten. An event in
    // another archive is not forgotten.
    const { rows: was } = await tx.query<{ on: string | null }>(
      `SELECT current_setting('engram.forgetting', true) AS on, set_config('engram.forgetting', 'on', true)`,
    )
    await tx.query(
      `DELETE FROM edges e
       WHERE (e.src = ANY($1::text[]) OR e.dst = ANY($1::text[]))
         AND EXISTS (SELECT 1 FROM unnest(ARRAY[e.src, e.dst]) AS x (id)
                     WHERE (x.id LIKE 'evt\\_%' AND NOT EXISTS (SELECT 1 FROM events WHERE id = x.id)
                            AND NOT EXISTS (SELECT 1 FROM archives WHERE event_ids @> ARRAY[x.id]))
                        OR (x.id LIKE 'mem\\_%' AND NOT EXISTS (SELECT 1 FROM memories WHERE id = x.id)))`,
      [row.event_ids],
    )
    await tx.query(`SELECT set_config('engram.forgetting', $1, true)`, [was[0]?.on ?? 'off'])
    restored.push({
      archiveId: id,
      conversationId: row.conversation_id,
      inserted: report.inserted,
      vectorsRestored: report.vectorsRestored,
      rows: rowsOf(row.counts),
    })
  }
  return restored
}

/** A conversation `archives.create` would take, as `archives.candidates` lists it. */
export interface ArchiveCandidate {
  conversationId: string
  events: number
  firstEventAt: string
  lastEventAt: string
  /** When a search or a context last returned one of its events; null when never. */
  lastHitAt: string | null
}

function cutoffOf(o: { idleForMs?: number | undefined }, now: Date): Date | null {
  return o.idleForMs === undefined ? null : new Date(now.getTime() - o.idleForMs)
}

interface ChosenRow {
  conversation_id: string
  events: number
  first_at: Date
  last_at: Date
  hit_at: Date | null
}

/** The conversations the options select, oldest last event first (hits written beforehand). */
async function chooseConversations(
  tx: Queryable,
  o: z.output<typeof createInput>,
  cutoff: Date | null,
): Promise<ChosenRow[]> {
  const { rows } = await tx.query<ChosenRow>(
    `SELECT e.conversation_id, count(*)::int AS events, min(e.created_at) AS first_at, max(e.created_at) AS last_at,
            (SELECT h.last_hit_at FROM conversation_hits h
             WHERE h.tenant_id = $1 AND h.conversation_id = e.conversation_id) AS hit_at
     FROM events e
     WHERE e.tenant_id = $1 AND ($2::text[] IS NULL OR e.conversation_id = ANY($2))
     GROUP BY e.conversation_id
     HAVING $3::timestamptz IS NULL OR (
       max(e.created_at) <= $3
       AND NOT EXISTS (SELECT 1 FROM conversation_hits h
                       WHERE h.tenant_id = $1 AND h.conversation_id = e.conversation_id AND h.last_hit_at > $3))
     ORDER BY max(e.created_at), e.conversation_id
     LIMIT $4`,
    [o.tenantId, o.conversationIds ?? null, cutoff, o.limit],
  )
  return rows
}

/** `archives`: cold storage for conversations nobody finds any more. */
export function createArchives(ctx: EngineContext, format: FileFormat, hits: HitLog) {
  return {
    /**
     * Moves whole conversations out of the live memory into archives, in one transaction:
     * those of a tenant with no event and no retrieval hit (a search or a context returning
     * one of their events) in the last `idleForMs`, oldest first, at most `limit`; or the
     * `conversationIds` named. Each archive is one compressed file of the conversation's
     * events, artifacts, edges and chunk vectors, kept in the memory (and in its exports);
     * the live rows, their chunks and their index entries go. Searches, contexts and reads no
     * longer see them, until `archives.restore`. Document versions stay where they are.
     *
     * @example
     * const made = await memory.archives.create({ idleForMs: 90 * 86_400_000 })
     * made.map((a) => a.conversationId)
     */
    async create(options: ArchiveOptions): Promise<ArchiveInfo[]> {
      const o = parseInput(createInput, options, 'archive options')
      const now = ctx.now()
      const cutoff = cutoffOf(o, now)
      const archived = await ctx.db.transaction(async (tx) => {
        await hits.flush(tx)
        const chosen = await chooseConversations(tx, o, cutoff)
        if (chosen.length === 0) return []
        await tx.query(`SET LOCAL engram.forgetting = 'on'`)
        await tx.query(`CREATE TEMP TABLE archive_events (id text PRIMARY KEY) ON COMMIT DROP`)
        await tx.query(`CREATE TEMP TABLE archive_edges (id text PRIMARY KEY) ON COMMIT DROP`)
        const made: ArchiveInfo[] = []
        const catalog = await format.catalog(tx)
        for (const { conversation_id: conversationId } of chosen) {
          await tx.query(`TRUNCATE archive_events, archive_edges`)
          await tx.query(`INSERT INTO archive_events SELECT id FROM events WHERE tenant_id = $1 AND conversation_id = $2`, [
            o.tenantId,
            conversationId,
          ])
          // The planner knows nothing of a temporary table until it is analysed: without this it
          // would scan every edge and chunk instead of looking up the conversation's.
          await tx.query(`ANALYZE archive_events`)
          await tx.query(
            `INSERT INTO archive_edges
             SELECT id FROM edges WHERE tenant_id = $1 AND conversation_id = $2
             UNION SELECT id FROM edges WHERE src IN (SELECT id FROM archive_events)
             UNION SELECT id FROM edges WHERE dst IN (SELECT id FROM archive_events)`,
            [o.tenantId, conversationId],
          )
          await tx.query(`ANALYZE archive_edges`)
          const file = await format.write(tx, { includeVectors: o.vectors, only: ARCHIVED_ROWS, catalog })
          const bytes = new Uint8Array(await file.arrayBuffer())
          // The chunks go, counting those whose vectors the file kept.
          const { rows: gone } = await tx.query<{ chunks: number; vectors: number }>(
            `WITH gone AS (DELETE FROM chunks WHERE source_id IN (SELECT id FROM archive_events) RETURNING embedding IS NOT NULL AS v)
             SELECT count(*)::int AS chunks, count(*) FILTER (WHERE v AND $1)::int AS vectors FROM gone`,
            [o.vectors],
          )
          const counts: ArchiveCounts = {
            chunks: gone[0]?.chunks ?? 0,
            artifacts: await countChanged(tx, `DELETE FROM artifacts WHERE event_id IN (SELECT id FROM archive_events)`),
            edges: await countChanged(tx, `DELETE FROM edges WHERE id IN (SELECT id FROM archive_edges)`),
            events: 0,
            vectors: gone[0]?.vectors ?? 0,
          }
          const { rows } = await tx.query<ArchiveRow & { events: number }>(
            `WITH gone AS (
               DELETE FROM events WHERE id IN (SELECT id FROM archive_events)
               RETURNING id, user_id, agent_id, created_at, turn_index
             )
             INSERT INTO archives (id, tenant_id, conversation_id, event_ids, user_ids, agent_ids, counts,
                                   first_event_at, last_event_at, bytes, file, created_at, next_turn_index)
             SELECT $1, $2, $3, array_agg(id ORDER BY id),
                    coalesce(array_agg(DISTINCT user_id) FILTER (WHERE user_id IS NOT NULL), '{}'),
                    coalesce(array_agg(DISTINCT agent_id) FILTER (WHERE agent_id IS NOT NULL), '{}'),
                    $4::jsonb || jsonb_build_object('events', count(*)),
                    min(created_at), max(created_at), $5, $6, $7,
                    -- With an archive made before, the turns it holds come first.
                    greatest(max(turn_index) + 1,
                             (SELECT max(next_turn_index) FROM archives WHERE tenant_id = $2 AND conversation_id = $3))
             FROM gone
             RETURNING ${ARCHIVE_COLUMNS}`,
            [newId('archive'), o.tenantId, conversationId, JSON.stringify(counts), bytes.length, bytes, now],
          )
          made.push(toArchive(rows[0] as ArchiveRow))
        }
        return made
      })
      // Rows deleted are rows the planner statistics and the next vacuum must hear of.
      ctx.changed(archived.reduce((n, a) => n + rowsOf(a.counts), 0))
      return archived
    },

    /**
     * What `archives.create` with the same options would take, without taking it: each
     * conversation with its event count, first and last event and last retrieval hit.
     *
     * @example
     * const due = await memory.archives.candidates({ idleForMs: 90 * 86_400_000 })
     */
    async candidates(options: ArchiveOptions): Promise<ArchiveCandidate[]> {
      const o = parseInput(createInput, options, 'archive options')
      const cutoff = cutoffOf(o, ctx.now())
      const rows = await ctx.db.transaction(async (tx) => {
        await hits.flush(tx)
        return chooseConversations(tx, o, cutoff)
      })
      return rows.map((r) => ({
        conversationId: r.conversation_id,
        events: r.events,
        firstEventAt: iso(r.first_at),
        lastEventAt: iso(r.last_at),
        lastHitAt: r.hit_at === null ? null : iso(r.hit_at),
      }))
    },

    /**
     * A tenant's archives (optionally one conversation's), oldest conversation first,
     * without their files.
     *
     * @example
     * const archived = await memory.archives.list()
     */
    async list(options: { tenantId?: string; conversationId?: string } = {}): Promise<ArchiveInfo[]> {
      const o = parseInput(
        z.object({ tenantId: identifier.default('default'), conversationId: identifier.optional() }).strict(),
        options,
        'archive list options',
      )
      const { rows } = await ctx.db.query<ArchiveRow>(
        `SELECT ${ARCHIVE_COLUMNS} FROM archives
         WHERE tenant_id = $1 AND ($2::text IS NULL OR conversation_id = $2)
         ORDER BY last_event_at, id`,
        [o.tenantId, o.conversationId ?? null],
      )
      return rows.map(toArchive)
    },

    /**
     * Puts an archived conversation back, in one transaction: its rows are merged into the
     * memory as an import would (chunks rebuilt, vectors restored) and the archive is removed.
     * Anything written to the conversation since it was archived stays beside it.
     *
     * @example
     * await memory.archives.restore(archiveId)
     */
    async restore(archiveId: string, options: { tenantId?: string } = {}): Promise<RestoreResult> {
      parseInput(identifier, archiveId, 'archive id')
      const o = parseInput(z.object({ tenantId: identifier.default('default') }).strict(), options, 'restore options')
      const { rows, ...restored } = await ctx.db.transaction(async (tx) => {
        const [done] = await restoreArchives(tx, format, [archiveId], o.tenantId)
        if (!done) throw new MemoryError('NOT_FOUND', `No archive ${archiveId}`)
        return done
      })
      ctx.changed(rows)
      return restored
    },
  }
}
