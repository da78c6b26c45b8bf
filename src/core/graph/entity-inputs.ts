// What the entity graph accepts: each method validates its input against one of these.
import { identifier } from '../kernel/scope.ts'
import { jsonRecord } from '../kernel/json.ts'
import { MAX_REVISION } from '../kernel/limits.ts'
import { z } from '../kernel/validate.ts'
import { timeDate } from '../kernel/time.ts'
import { entityId, storedName } from './edges.ts'

const RELATION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/

const tenant = identifier.default('default')
/** Whose the row is, and the run and task a write (or a read, in telemetry) belongs to. */
const provenance = {
  tenantId: tenant,
  runId: identifier.optional(),
  taskId: identifier.optional(),
}
export const entityIds = z.array(entityId).min(1).max(10_000)
const payloadSchema = jsonRecord

export const nodeInput = z.strictObject({
  id: entityId,
  type: storedName(200),
  payload: payloadSchema.default({}),
  scope: storedName(200).optional(),
  ...provenance,
})
export type NodeInput = z.input<typeof nodeInput>

export const edgeInput = z
  .strictObject({
    src: entityId,
    rel: z.string().min(1).max(64),
    dst: entityId,
    payload: payloadSchema.default({}),
    conversationId: identifier.optional(),
    /**
     * When the link started and stopped holding in the world (not when it was recorded).
     * Links of the same nodes and relation with other starts are other facts; the same start
     * with a new end revises the link.
     */
    validFrom: timeDate.optional(),
    validTo: timeDate.optional(),
    ...provenance,
  })
  .refine((e) => !e.validFrom || !e.validTo || e.validTo > e.validFrom, {
    message: 'validTo must come after validFrom',
    path: ['validTo'],
  })
export type EdgeInput = z.input<typeof edgeInput>

export type EdgeOptions = Omit<EdgeInput, 'src' | 'rel' | 'dst' | 'payload'>

export const removeOptions = z.strictObject(provenance)
export type RemoveOptions = z.input<typeof removeOptions>

const asOf = timeDate.optional()
export const nodeReadOptions = z
  .strictObject({ ...provenance, asOf, /** One revision of the node, by number. */ rev: z.number().int().min(1).max(MAX_REVISION).optional() })
  .refine((v) => v.asOf === undefined || v.rev === undefined, { message: 'give asOf or rev, not both' })
export type NodeReadOptions = z.input<typeof nodeReadOptions>
export const nodeHistoryOptions = z.strictObject(provenance)
export type NodeHistoryOptions = z.input<typeof nodeHistoryOptions>

export const nodesOptions = z.strictObject({
  ...provenance,
  asOf,
  /** Only these ids (those that name a live node). */
  ids: z.array(entityId).max(10_000).optional(),
  type: storedName(200).optional(),
  scope: storedName(200).optional(),
  limit: z.number().int().min(1).max(100_000).default(1000),
})
export type NodesOptions = z.input<typeof nodesOptions>

export const neighborsOptions = z.strictObject({
  ...provenance,
  asOf,
  /** Only links that held at this time in the world (`validFrom` ≤ it < `validTo`; an open end holds). */
  validAt: timeDate.optional(),
  direction: z.enum(['out', 'in', 'both']).default('out'),
  rel: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  limit: z.number().int().min(1).max(100_000).default(1000),
})
export type NeighborsOptions = z.input<typeof neighborsOptions>

export const relationName = z
  .string()
  .regex(RELATION_NAME, 'letters, digits, _ . : - (max 64), starting with a letter or _')

export const graphWriteInput = z.strictObject({
  /** Defined when they are not yet, so that the edges may use them. */
  relations: z.array(z.strictObject({ name: relationName, description: z.string().max(500).optional() })).max(1000).default([]),
  nodes: z.array(z.unknown()).default([]),
  edges: z.array(z.unknown()).default([]),
})
export type GraphWriteInput = z.input<typeof graphWriteInput>
