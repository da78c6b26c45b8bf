import { documentSight, type Observation, observeInTx, type PreparedSight, prepareSight } from '../documents/documents.ts'
import type { EngineContext } from '../kernel/engine-context.ts'
import { refuseSealedLookalike, type Vault, vaultMadeSince } from '../privacy/vault.ts'
import {
  type EventDraft,
  insertEvents,
  type PreparedEvent,
  prepareEvent,
  redactionMeta,
  requireConversation,
  sealPrepared,
  tag,
} from '../log/events.ts'
import { BUILTIN_RELATIONS, type EdgeWrite, insertEdges, relationName } from '../graph/edges.ts'
import { type JsonObject, jsonObject, storableText, toStoredJson } from '../kernel/json.ts'
import { MAX_PROCEDURES_PER_TURN, MAX_TAGS } from '../kernel/limits.ts'
import { CHANNELS, identifier, SENSITIVITIES, turnScope } from '../kernel/scope.ts'
import { iso, timeInput, toDate } from '../kernel/time.ts'
import { parseInput, z } from '../kernel/validate.ts'
import { mergeRedactions, type RedactionCount, redactJson } from '../privacy/redact.ts'

const speech = z.union([
  storableText,
  z.object({ text: storableText, actorId: identifier.optional() }).strict(),
])

const procedure = z
  .object({
    /** The tool name; it becomes the relation of the procedure's edge. */
    tool: relationName.refine(
      (t) => !(BUILTIN_RELATIONS as readonly string[]).includes(t),
      `must not be a builtin relation (${BUILTIN_RELATIONS.join(', ')})`,
    ),
    args: jsonObject.optional(),
    /** The document the tool read or wrote, as it was after the call. */
    document: z
      .object({
        path: z.string().optional(),
        url: z.string().optional(),
        content: z.string().optional(),
        contentHash: z.string().optional(),
        effect: z.enum(['read', 'write']),
      })
      .strict()
      .optional(),
    /** The tool's output for a procedure without a document; stored as a tool_result event. */
    output: storableText.optional(),
  })
  .strict()
  .refine((p) => !(p.document && p.output !== undefined), {
    message: 'a procedure with a document keeps its content in the document; drop output',
  })

const turnInput = z
  .object({
    conversationId: identifier,
    scope: turnScope.default({ tenantId: 'default' }),
    channel: z.enum(CHANNELS).default('private'),
    sensitivity: z.enum(SENSITIVITIES).default('none'),
    tags: z.array(tag).max(MAX_TAGS).default([]),
    user: speech,
    agent: speech,
    procedures: z.array(procedure).max(MAX_PROCEDURES_PER_TURN).default([]),
    createdAt: timeInput.optional(),
  })
  .strict()

/**
 * One exchange: the user's text, the agent's reply, and the tool calls the agent made.
 * A procedure with a `document` points at the version it read or produced; one without
 * is stored as a tool_call event (and a tool_result event when `output` is given).
 */
export type RecordTurnInput = z.input<typeof turnInput>

export interface ProcedureRecord {
  tool: string
  /** The edge from the reply to the version or tool call. */
  edgeId: string
  documentId?: string
  versionId?: string
  version?: number
  /** Whether this procedure created the version it points at. */
  versionCreated?: boolean
  provenance?: Observation['provenance']
  canonicalKey?: string
  toolCallEventId?: string
  toolResultEventId?: string
}

export interface TurnRecord {
  turnIndex: number
  userEventId: string
  agentEventId: string
  /** tool_call and tool_result events of procedures without a document. */
  toolEventIds: string[]
  /** Every edge written: MESSAGE, one per procedure, RESULT, VERSION_OF of new versions. */
  edgeIds: string[]
  /** Versions this turn created (a procedure may also point at an existing one). */
  versionIds: string[]
  /** Documents this turn created. */
  documentIds: string[]
  chunkIds: string[]
  procedures: ProcedureRecord[]
  createdAt: string
}

type PreparedProcedure =
  | { tool: string; args: JsonObject; kind: 'document'; effect: 'read' | 'write'; sight: PreparedSight }
  | { tool: string; args: JsonObject; kind: 'call'; call: PreparedEvent; result: PreparedEvent | undefined }

/** `recordTurn`: a whole turn in one transaction. */
export function createTurns(ctx: EngineContext) {
  return {
    /**
     * Records a whole turn atomically: the user message, the agent reply, a MESSAGE edge
     * between them, and one edge per procedure (relation = tool name, properties =
     * arguments) from the reply to the document version read or written — observing the
     * document in the same transaction — or to a tool_call event. The turn index is the
     * number of turns the conversation already has. If anything fails, nothing is stored.
     *
     * @example
     * await memory.recordTurn({
     *   conversationId: 'c1',
     *   user: 'what is this project for?',
     *   agent: 'A CLI that converts invoices.',
     *   procedures: [{ tool: 'read_file', args: { path: 'README.md' },
     *                  document: { path: 'README.md', content: readme, effect: 'read' } }],
     * })
     */
    recordTurn: (input: RecordTurnInput): Promise<TurnRecord> => writeTurn(input, false),
    /**
     * Every statement of `recordTurn`, in its transaction, rolled back at the end: nothing is
     * stored (`warmUp`).
     */
    rehearseTurn: async (input: RecordTurnInput): Promise<void> => {
      try {
        await writeTurn(input, true)
      } catch (error) {
        if (!(error instanceof Rehearsal)) throw error
      }
    },
  }

  async function writeTurn(input: RecordTurnInput, rehearsal: boolean): Promise<TurnRecord> {
    requireConversation(input, 'top')
    const i = parseInput(turnInput, input, 'turn')
    // Without a time given, the turn is stamped as it takes its number, in the transaction:
    // a turn prepared first may commit second (a long document to hash), and its time must
    // not come before that of the turn numbered ahead of it. Nothing prepared reads the time.
    const given = i.createdAt === undefined ? undefined : toDate(i.createdAt)
    let createdAt = given ?? new Date(0)
    const scope = { ...i.scope, conversationId: i.conversationId }
    const speaker = (s: z.output<typeof speech>, fallback: string) =>
      typeof s === 'string' ? { text: s, actorId: fallback } : { text: s.text, actorId: s.actorId ?? fallback }
    const user = speaker(i.user, scope.userId ?? 'user')
    const agent = speaker(i.agent, scope.agentId ?? 'agent')
    const common: Omit<EventDraft, 'kind' | 'actor' | 'content'> = {
      scope,
      channel: i.channel,
      sensitivity: i.sensitivity,
      tags: i.tags,
      refs: [],
      createdAt,
    }
    const userEvent = await prepareEvent({
      ...common,
      kind: 'message',
      actor: { type: 'human', id: user.actorId },
      content: { text: user.text },
    })
    const agentEvent = await prepareEvent({
      ...common,
      kind: 'message',
      actor: { type: 'agent', id: agent.actorId },
      content: { text: agent.text },
    })

    const procedures: PreparedProcedure[] = []
    // Secrets in the arguments and documents of document procedures are recorded on the reply.
    let replyRedactions: RedactionCount[] = []
    for (const [n, p] of i.procedures.entries()) {
      const redactedArgs = redactJson(toStoredJson(p.args ?? {}))
      const args = redactedArgs.value
      refuseSealedLookalike(args, `procedures[${n}].args`)
      if (p.document) {
        const { effect, ...ref } = p.document
        const sight = prepareSight(parseInput(documentSight, ref, `procedure ${n} document`), ctx.workspace, ctx.resolvePath)
        replyRedactions = mergeRedactions(replyRedactions, redactedArgs.redactions, sight.redactions)
        procedures.push({ tool: p.tool, args, kind: 'document', effect, sight })
        continue
      }
      const call = await prepareEvent({
        ...common,
        kind: 'tool_call',
        actor: { type: 'agent', id: agent.actorId },
        content: { tool: p.tool, args },
        redactions: redactedArgs.redactions,
      })
      const result =
        p.output === undefined
          ? undefined
          : await prepareEvent({
              ...common,
              kind: 'tool_result',
              actor: { type: 'tool', id: p.tool },
              content: { tool: p.tool, output: p.output },
              refs: [call.id],
            })
      procedures.push({ tool: p.tool, args, kind: 'call', call, result })
    }
    if (replyRedactions.length > 0) {
      agentEvent.redactions = mergeRedactions(agentEvent.redactions, replyRedactions)
      agentEvent.meta = { ...agentEvent.meta, ...redactionMeta(agentEvent.redactions) }
    }
    // A `high` turn under a vault: its events, and the arguments its edges carry, sealed.
    const sealTurn = async (vault: Vault) => {
      if (i.sensitivity !== 'high' || vault.status === 'none') return
      await Promise.all([
        sealPrepared(vault, [
          userEvent,
          agentEvent,
          ...procedures.flatMap((p) => (p.kind === 'call' ? [p.call, ...(p.result ? [p.result] : [])] : [])),
        ]),
        ...procedures.map(async (p) => {
          if (p.kind === 'document') p.args = await vault.sealJson(p.args)
        }),
      ])
      // A tool call's edge carries the arguments its event holds, sealed once.
      for (const p of procedures) if (p.kind === 'call') p.args = p.call.content.args as JsonObject
    }
    const { vault } = ctx
    await sealTurn(vault)

    return ctx.db.transaction(async (tx) => {
      if (vaultMadeSince(vault, ctx.vault)) await sealTurn(ctx.vault)
      // Every event of the turn in one statement, in the order of the turn.
      const events = [userEvent, agentEvent]
      for (const p of procedures) {
        if (p.kind !== 'call') continue
        events.push(p.call)
        if (p.result) events.push(p.result)
      }
      if (!given) {
        createdAt = ctx.now()
        for (const e of events) e.createdAt = createdAt
      }
      const turnIndex = (await insertEvents(tx, events, { turnOf: true })) as number
      const edgeBase = {
        tenantId: scope.tenantId,
        conversationId: scope.conversationId,
        runId: scope.runId,
        turnIndex,
        createdAt,
      }
      const edges: EdgeWrite[] = [{ ...edgeBase, src: userEvent.id, rel: 'MESSAGE', dst: agentEvent.id }]
      const records: (Omit<ProcedureRecord, 'edgeId'> & { edgeIndex: number })[] = []
      const toolEventIds: string[] = []
      const versionIds: string[] = []
      const documentIds: string[] = []
      const chunkIds = [...userEvent.chunks, ...agentEvent.chunks].map((c) => c.id)
      const versionOfEdges: string[] = []

      for (const p of procedures) {
        if (p.kind === 'document') {
          const seen = await observeInTx(tx, {
            ...p.sight,
            tenantId: scope.tenantId,
            mode: ctx.workspace.mode,
            cause: p.effect === 'write' ? 'agent_write' : 'read',
            conversationId: scope.conversationId,
            eventId: agentEvent.id,
            createdAt,
            now: ctx.now(),
          })
          if (seen.created) versionIds.push(seen.versionId)
          if (seen.documentCreated) documentIds.push(seen.documentId)
          if (seen.versionOfEdgeId) versionOfEdges.push(seen.versionOfEdgeId)
          const edgeIndex = edges.length
          edges.push({
            ...edgeBase,
            src: agentEvent.id,
            rel: p.tool,
            dst: seen.versionId,
            props: { args: p.args, effect: p.effect },
          })
          records.push({
            edgeIndex,
            tool: p.tool,
            documentId: seen.documentId,
            versionId: seen.versionId,
            version: seen.version,
            versionCreated: seen.created,
            provenance: seen.provenance,
            canonicalKey: seen.canonicalKey,
          })
          continue
        }
        toolEventIds.push(p.call.id)
        chunkIds.push(...p.call.chunks.map((c) => c.id))
        const edgeIndex = edges.length
        edges.push({ ...edgeBase, src: agentEvent.id, rel: p.tool, dst: p.call.id, props: { args: p.args } })
        if (p.result) {
          toolEventIds.push(p.result.id)
          chunkIds.push(...p.result.chunks.map((c) => c.id))
          edges.push({ ...edgeBase, src: p.call.id, rel: 'RESULT', dst: p.result.id })
        }
        records.push({
          edgeIndex,
          tool: p.tool,
          toolCallEventId: p.call.id,
          ...(p.result ? { toolResultEventId: p.result.id } : {}),
        })
      }

      const edgeIds = await insertEdges(tx, edges)
      if (rehearsal) throw new Rehearsal()
      return {
        turnIndex,
        userEventId: userEvent.id,
        agentEventId: agentEvent.id,
        toolEventIds,
        edgeIds: [...edgeIds, ...versionOfEdges],
        versionIds,
        documentIds,
        chunkIds,
        procedures: records.map(({ edgeIndex, ...r }) => ({ ...r, edgeId: edgeIds[edgeIndex] as string })),
        createdAt: iso(createdAt),
      }
    })
  }
}

/** Thrown out of a rehearsal's transaction so that it rolls back. */
class Rehearsal extends Error {
  constructor() {
    super('rehearsal: rolled back')
  }
}


/** One procedure's and one speaker's schemas, for what assembles a turn piece by piece (turn-recorder.ts). */
export { procedure as procedureInput, speech as speechInput, turnInput }
