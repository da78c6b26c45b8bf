// What the entity graph returns, and how a stored node row becomes one.
import { MemoryError } from '../kernel/errors.ts'

export type JsonObject = { [key: string]: unknown }

export interface NodeRecord {
  id: string
  type: string
  payload: JsonObject
  rev: number
  scope: string | null
  runId: string | null
  taskId: string | null
  tenantId: string
  /** When this revision was written. */
  updatedAt: Date
}

export interface Neighbor {
  edgeId: string
  src: string
  rel: string
  dst: string
  /** The id at the other end, seen from the node asked about. */
  neighbor: string
  direction: 'out' | 'in'
  payload: JsonObject
  /** Type of the neighbour when it is a live entity node, else null. */
  neighborType: string | null
  /** When the link held in the world (`putEdge`'s `validFrom` / `validTo`), null when open. */
  validFrom: Date | null
  validTo: Date | null
  runId: string | null
  taskId: string | null
  createdAt: Date
}

export interface RelationRecord {
  id: number
  name: string
  description: string | null
  builtin: boolean
}

export interface GraphVerifyReport {
  ok: true
  nodes: number
  edges: number
  tombstonedEdges: number
  tombstonedNodes: number
  tombstoneRatio: number
  warnings: string[]
}

export interface NodeRow {
  id: string
  type: string
  payload: unknown
  rev: number
  scope: string | null
  run_id: string | null
  task_id: string | null
  tenant_id: string
  created_at: Date
  tombstone: boolean
}

export function corrupt(message: string, details: Record<string, unknown>): MemoryError {
  return new MemoryError('CORRUPT', message, { details })
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function toNode(row: NodeRow): NodeRecord {
  if (!isJsonObject(row.payload)) {
    throw corrupt(`Node "${row.id}" rev ${row.rev} has a payload that is not an object`, { id: row.id })
  }
  return {
    id: row.id,
    type: row.type,
    payload: row.payload,
    rev: row.rev,
    scope: row.scope,
    runId: row.run_id,
    taskId: row.task_id,
    tenantId: row.tenant_id,
    updatedAt: row.created_at,
  }
}
