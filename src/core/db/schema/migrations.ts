import type { Db } from '../../kernel/db.ts'
import { MemoryError } from '../../kernel/errors.ts'
import { base } from './0001-base.ts'
import { memories } from './0002-memories.ts'
import { privacy } from './0003-privacy.ts'
import { keywordStats } from './0004-keyword-stats.ts'
import { scanIndexes } from './0005-scan-indexes.ts'
import { edgesByDocument } from './0006-edges-by-document.ts'
import { actorNames } from './0007-actor-names.ts'
import { memoryStats } from './0008-memory-stats.ts'
import { keywordPending } from './0009-keyword-pending.ts'
import { actorTerms } from './0010-actor-terms.ts'
import { memoriesWaiting } from './0011-memories-waiting.ts'
import { memoryKeys } from './0012-memory-keys.ts'
import { sharedContents } from './0013-shared-contents.ts'
import { archives } from './0014-archives.ts'
import { vectorDebt } from './0015-vector-debt.ts'
import { vault } from './0016-vault.ts'
import { memoryExpiry } from './0017-memory-expiry.ts'
import { edgeValidity } from './0018-edge-validity.ts'
import { observedVersions } from './0019-observed-versions.ts'
import { archivedTurns } from './0020-archived-turns.ts'
import { graphCounters } from './0021-graph-counters.ts'
import { severalWriters } from './0022-several-writers.ts'
import { sync } from './0023-sync.ts'
import { syncAliases } from './0024-sync-aliases.ts'
import { contextChanges } from './0025-context-changes.ts'

export interface Migration {
  version: number
  name: string
  sql: string
}

/** Append-only: never edit a released migration, add the next number. */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'base', sql: base },
  { version: 2, name: 'memories', sql: memories },
  { version: 3, name: 'privacy', sql: privacy },
  { version: 4, name: 'keyword-stats', sql: keywordStats },
  { version: 5, name: 'scan-indexes', sql: scanIndexes },
  { version: 6, name: 'edges-by-document', sql: edgesByDocument },
  { version: 7, name: 'actor-names', sql: actorNames },
  { version: 8, name: 'memory-stats', sql: memoryStats },
  { version: 9, name: 'keyword-pending', sql: keywordPending },
  { version: 10, name: 'actor-terms', sql: actorTerms },
  { version: 11, name: 'memories-waiting', sql: memoriesWaiting },
  { version: 12, name: 'memory-keys', sql: memoryKeys },
  { version: 13, name: 'shared-contents', sql: sharedContents },
  { version: 14, name: 'archives', sql: archives },
  { version: 15, name: 'vector-debt', sql: vectorDebt },
  { version: 16, name: 'vault', sql: vault },
  { version: 17, name: 'memory-expiry', sql: memoryExpiry },
  { version: 18, name: 'edge-validity', sql: edgeValidity },
  { version: 19, name: 'observed-versions', sql: observedVersions },
  { version: 20, name: 'archived-turns', sql: archivedTurns },
  { version: 21, name: 'graph-counters', sql: graphCounters },
  { version: 22, name: 'several-writers', sql: severalWriters },
  { version: 23, name: 'sync', sql: sync },
  { version: 24, name: 'sync-aliases', sql: syncAliases },
  { version: 25, name: 'context-changes', sql: contextChanges },
]

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0

/**
 * Brings the database to SCHEMA_VERSION. Each migration runs in its own transaction with
 * its bookkeeping row, so a crash leaves the database at a whole version. Idempotent.
 * A database with migrations this code does not know (written by a newer Engram) is
 * refused with SCHEMA_TOO_NEW before anything is changed: this code would misread it.
 */
export async function migrate(db: Db): Promise<number> {
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    int PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`)
  const { rows: applied } = await db.query<{ version: number; name: string }>(
    'SELECT version, name FROM schema_migrations ORDER BY version',
  )
  checkKnownHistory(applied)
  const current = applied[applied.length - 1]?.version ?? 0
  for (const m of MIGRATIONS) {
    if (m.version <= current) continue
    await db.transaction(async (tx) => {
      await tx.exec(m.sql)
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name])
    })
  }
  return SCHEMA_VERSION
}

/** Refuses a migration history this code did not write: a newer version, or another name. */
function checkKnownHistory(applied: readonly { version: number; name: string }[]): void {
  const newest = applied[applied.length - 1]?.version ?? 0
  const foreign = applied.find((a) => MIGRATIONS.find((m) => m.version === a.version)?.name !== a.name)
  if (newest <= SCHEMA_VERSION && !foreign) return
  const details = { databaseVersion: newest, codeVersion: SCHEMA_VERSION }
  if (newest > SCHEMA_VERSION) {
    throw new MemoryError(
      'SCHEMA_TOO_NEW',
      `This memory's schema is at version ${newest}, newer than this Engram's ${SCHEMA_VERSION}: open it with a newer Engram.`,
      { details },
    )
  }
  throw new MemoryError(
    'SCHEMA_TOO_NEW',
    `This memory's migration ${foreign?.version} is "${foreign?.name}", which this Engram does not know: open it with the Engram that wrote it.`,
    { details: { ...details, migration: foreign } },
  )
}
