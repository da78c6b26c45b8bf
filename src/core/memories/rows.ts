import type { JsonObject } from '../graph/entities.ts'
import type { Queryable } from '../kernel/db.ts'
import type { StoredSensitivity } from '../kernel/scope.ts'
import type { MemoryCategory, MemoryRecord, MemoryScope, MemorySource, MemoryStatus } from './records.ts'

/** The columns of a memory as read, with its contexts and links (`MemoryRow.links`). */
export const COLUMNS = `m.id, m.content, m.category, m.source, m.confidence, m.scope, m.tenant_id, m.user_id,
  m.agent_id, m.run_id, m.project_id, m.sensitivity, m.metadata, m.hash, m.status, m.superseded_by, m.use_count,
  m.last_used_at, m.embed_model, m.key, m.expires_at, m.created_at, m.updated_at,
  (SELECT jsonb_build_object(
            'contexts', coalesce(jsonb_agg(c.name ORDER BY c.name) FILTER (WHERE c.name IS NOT NULL), '[]'),
            'relatedTo', coalesce(jsonb_agg(e.dst ORDER BY e.dst) FILTER (WHERE r.name = 'RELEVANT_TO'), '[]'))
   FROM edges e
   JOIN relations r ON r.id = e.rel AND r.name IN ('BELONGS_TO_CONTEXT', 'RELEVANT_TO')
   LEFT JOIN memory_contexts c ON r.name = 'BELONGS_TO_CONTEXT' AND c.id = e.dst
   WHERE e.src = m.id AND e.tombstoned_at IS NULL) AS links`

export interface MemoryRow {
  id: string
  content: string
  category: MemoryCategory
  source: MemorySource
  confidence: number
  scope: MemoryScope
  tenant_id: string
  user_id: string | null
  agent_id: string | null
  run_id: string | null
  project_id: string | null
  sensitivity: StoredSensitivity
  metadata: JsonObject
  hash: string
  status: MemoryStatus
  superseded_by: string | null
  use_count: number
  last_used_at: Date | null
  embed_model: string | null
  key: string | null
  expires_at: Date | null
  /** The memory's contexts and the entities it is relevant to, read in one pass over its edges. */
  links: { contexts: string[]; relatedTo: string[] }
  created_at: Date
  updated_at: Date
}

export function toRecord(r: MemoryRow): MemoryRecord {
  return {
    id: r.id,
    content: r.content,
    category: r.category,
    source: r.source,
    confidence: r.confidence,
    scope: r.scope,
    tenantId: r.tenant_id,
    userId: r.user_id,
    agentId: r.agent_id,
    runId: r.run_id,
    projectId: r.project_id,
    sensitivity: r.sensitivity,
    metadata: r.metadata,
    hash: r.hash,
    status: r.status,
    supersededBy: r.superseded_by,
    useCount: r.use_count,
    lastUsedAt: r.last_used_at,
    embedModel: r.embed_model,
    contexts: r.links.contexts,
    relatedTo: r.links.relatedTo,
    key: r.key,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }
}

/** A memory of the tenant by id, whatever its status. */
export async function getRow(q: Queryable, id: string, tenantId: string): Promise<MemoryRow | undefined> {
  const { rows } = await q.query<MemoryRow>(`SELECT ${COLUMNS} FROM memories m WHERE m.id = $1 AND m.tenant_id = $2`, [
    id,
    tenantId,
  ])
  return rows[0]
}
