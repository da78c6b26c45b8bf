import type { FilterColumn } from '../db/filters.ts'
import type { Params } from '../db/params.ts'
import type { Selector } from './inputs.ts'
import type { MemoryScope } from './records.ts'
import type { MemoryRow } from './rows.ts'

/**
 * A memory that `user` may read (placeholders): a global one, one of the user's, or a project
 * memory of the user's in `project` (a project memory is seen only in its own project).
 */
export function readableBy(user: string, project: string, alias = 'm'): string {
  return `(${alias}.scope = 'global'
        OR (${alias}.scope = 'user' AND ${alias}.user_id IS NOT DISTINCT FROM ${user})
        OR (${alias}.scope = 'project' AND ${alias}.user_id IS NOT DISTINCT FROM ${user} AND ${alias}.project_id = ${project}))`
}

/** `readableBy` for a row in hand. */
export function readableRow(r: MemoryRow, user: string | null, project: string | null): boolean {
  return r.scope === 'global' || (r.user_id === user && (r.scope === 'user' || (r.scope === 'project' && r.project_id === project)))
}

/** The identity fields of `selectWhere` (those a memory never changes) for a row in hand. */
export function selectedRow(r: MemoryRow, s: { userId?: string | undefined; agentId?: string | undefined; runId?: string | undefined; projectId?: string | undefined; scope?: string | undefined }): boolean {
  return (
    (s.userId === undefined || r.user_id === s.userId) &&
    (s.agentId === undefined || r.agent_id === s.agentId) &&
    (s.runId === undefined || r.run_id === s.runId) &&
    (s.projectId === undefined || r.project_id === s.projectId) &&
    (s.scope === undefined || r.scope === s.scope)
  )
}

/** A memory that has not expired at `at` (a parameter placeholder). */
export function unexpired(at: string, alias = 'm'): string {
  return `(${alias}.expires_at IS NULL OR ${alias}.expires_at > ${at})`
}

const text = (sql: string): FilterColumn => ({ sql, type: 'text' })
const num = (sql: string): FilterColumn => ({ sql, type: 'number' })
const time = (sql: string): FilterColumn => ({ sql, type: 'timestamp' })

/** Where a filter looks up a field that is not a column. */
export const MEMORY_FILTER_JSON = 'm.metadata'

/** Fields a filter may name besides metadata keys; snake_case and camelCase both work. */
export const MEMORY_FILTER_COLUMNS: Record<string, FilterColumn> = {
  id: text('m.id'),
  memory: text('m.content'),
  content: text('m.content'),
  hash: text('m.hash'),
  category: text('m.category'),
  source: text('m.source'),
  scope: text('m.scope'),
  user_id: text('m.user_id'),
  userId: text('m.user_id'),
  agent_id: text('m.agent_id'),
  agentId: text('m.agent_id'),
  run_id: text('m.run_id'),
  runId: text('m.run_id'),
  project_id: text('m.project_id'),
  projectId: text('m.project_id'),
  sensitivity: text('m.sensitivity'),
  confidence: num('m.confidence'),
  use_count: num('m.use_count'),
  useCount: num('m.use_count'),
  created_at: time('m.created_at'),
  createdAt: time('m.created_at'),
  updated_at: time('m.updated_at'),
  updatedAt: time('m.updated_at'),
  expires_at: time('m.expires_at'),
  expiresAt: time('m.expires_at'),
  last_used_at: time('m.last_used_at'),
  lastUsedAt: time('m.last_used_at'),
}

/**
 * Rows of this memory's scope (identity fields compared null-safely): its tenant, scope, user
 * and project, and with `dedupScope: 'identity'` its agent and run too.
 */
export function sameScope(
  p: Params,
  m: {
    tenantId: string
    scope: MemoryScope
    userId?: string | undefined
    agentId?: string | undefined
    runId?: string | undefined
    projectId?: string | undefined
    dedupScope: 'user' | 'identity'
  },
): string {
  const agentAndRun =
    m.dedupScope === 'identity'
      ? `AND m.agent_id IS NOT DISTINCT FROM ${p.add(m.agentId ?? null)}
    AND m.run_id IS NOT DISTINCT FROM ${p.add(m.runId ?? null)}`
      : ''
  return `m.tenant_id = ${p.add(m.tenantId)} AND m.scope = ${p.add(m.scope)}
    AND m.user_id IS NOT DISTINCT FROM ${p.add(m.userId ?? null)} ${agentAndRun}
    AND m.project_id IS NOT DISTINCT FROM ${p.add(m.projectId ?? null)}`
}

/** Exact-match selection on the identity fields given, plus category, scope and filters. */
export function selectWhere(p: Params, s: Selector): string {
  const parts = [`m.tenant_id = ${p.add(s.tenantId)}`]
  if (s.userId !== undefined) parts.push(`m.user_id = ${p.add(s.userId)}`)
  if (s.agentId !== undefined) parts.push(`m.agent_id = ${p.add(s.agentId)}`)
  if (s.runId !== undefined) parts.push(`m.run_id = ${p.add(s.runId)}`)
  if (s.projectId !== undefined) parts.push(`m.project_id = ${p.add(s.projectId)}`)
  if (s.scope !== undefined) parts.push(`m.scope = ${p.add(s.scope)}`)
  if (s.category !== undefined) parts.push(`m.category = ANY(${p.add([s.category].flat())}::text[])`)
  if (s.relevantTo !== undefined) parts.push(relevantTo(p, s.relevantTo))
  parts.push(p.filter(s.filters, MEMORY_FILTER_COLUMNS, MEMORY_FILTER_JSON))
  return parts.join(' AND ')
}

/** Memories with a live RELEVANT_TO link to any of `ids`. */
export function relevantTo(p: Params, ids: readonly string[]): string {
  return `EXISTS (SELECT 1 FROM edges e JOIN relations r ON r.id = e.rel AND r.name = 'RELEVANT_TO'
                  WHERE e.src = m.id AND e.dst = ANY(${p.add(ids)}::text[]) AND e.tombstoned_at IS NULL)`
}
