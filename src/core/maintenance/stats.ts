import type { Backend } from '../kernel/db.ts'
import { PGVECTOR_SQL } from '../db/vectors.ts'
import type { VaultStatus } from '../privacy/vault.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import type { IndexStatus } from './indexer.ts'

export interface Stats {
  /** Exact row count of every table, by table name. */
  counts: Record<string, number>
  /** Size of the database on disk (pg_database_size). */
  bytes: number
  /** Size on disk of every index, by index name (the HNSW and full-text ones included). */
  indexBytes: Record<string, number>
  schemaVersion: number
  /**
   * Postgres' page cache (buffer pool) this open runs with, in MiB: `cacheMB` when given,
   * else what the memory has grown to (bench/HISTORY.md, "The page cache").
   */
  cacheMB: number
  /** Chunks without a vector of the current model, still waiting for the indexer. */
  unembeddedChunks: number
  /** The background indexer: pending and done rows for the current model. */
  indexing: IndexStatus
  oldestEventAt: string | null
  newestEventAt: string | null
  /** Whether `high` is sealed at rest: `none`, `open` or `locked` (docs/privacy.md, "Encryption at rest"). */
  vault: VaultStatus
  /** What hosts the memory: `pglite`, or `postgres` (a server, `openMemory({ postgres })`). */
  backend: Backend
  /**
   * Whether `search` can rank by meaning: the memory has an embedder (loaded or loading) and its
   * database has pgvector. A server without pgvector is keyword-only.
   */
  vectorSearch: boolean
}

export function createStats(
  ctx: EngineContext,
  indexing: () => Promise<{ status: IndexStatus; waitingChunks: number }>,
) {
  return {
    /**
     * Row counts, sizes (the database's and each index's) and schema version — cheap enough
     * for a status bar.
     *
     * @example
     * const { counts, bytes } = await memory.stats()
     */
    async stats(): Promise<Stats> {
      const { rows } = await ctx.db.query<{
        counts: Record<string, number>
        bytes: number
        index_bytes: Record<string, number> | null
        schema_version: number
        cache_mb: number
        oldest: string | null
        newest: string | null
        pgvector: boolean
      }>(
        // term_stats and the mark of how far it has counted change when the writes pause, with
        // nothing written (schema/0009-keyword-pending.ts): left out of the counts.
        `SELECT (SELECT jsonb_object_agg(table_name, n) FROM engram_table_counts()
                 WHERE table_name NOT IN ('term_stats', 'keyword_counted')) AS counts,
                pg_database_size(current_database())::float8 AS bytes,
                (SELECT jsonb_object_agg(c.relname, pg_relation_size(c.oid)) FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = 'public' AND c.relkind = 'i') AS index_bytes,
                (SELECT coalesce(max(version), 0) FROM schema_migrations) AS schema_version,
                (pg_size_bytes(current_setting('shared_buffers')) / 1048576)::int AS cache_mb,
                (SELECT min(created_at) FROM events) AS oldest,
                (SELECT max(created_at) FROM events) AS newest,
                ${PGVECTOR_SQL} AS pgvector`,
      )
      const row = rows[0]
      // Counted once, by the indexer, through its two partial indexes: the cost follows what waits.
      const { status, waitingChunks } = await indexing()
      return {
        counts: row?.counts ?? {},
        bytes: row?.bytes ?? 0,
        indexBytes: row?.index_bytes ?? {},
        schemaVersion: row?.schema_version ?? 0,
        cacheMB: row?.cache_mb ?? 0,
        unembeddedChunks: waitingChunks,
        oldestEventAt: row?.oldest ? new Date(row.oldest).toISOString() : null,
        newestEventAt: row?.newest ? new Date(row.newest).toISOString() : null,
        indexing: status,
        vault: ctx.vault.status,
        backend: ctx.backend,
        vectorSearch: row?.pgvector === true && (ctx.embedder !== null || ctx.embedderLoading),
      }
    },
  }
}
