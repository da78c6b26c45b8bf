// The section names, their caps and priorities, and the checked input of `buildContext` and `turns`.
import { type Channel, CHANNELS, identifier } from '../kernel/scope.ts'
import { type TimeInput, timeInput } from '../kernel/time.ts'
import { z } from '../kernel/validate.ts'

export const SECTION_NAMES = [
  'identity',
  'rules',
  'task_state',
  'decision_ledger',
  'retrieved_evidence',
  'recent_window',
  'handoff_packet',
] as const
export type SectionName = (typeof SECTION_NAMES)[number]

/** The budget the default section caps are written for; caps scale with `maxTokens`. */
export const DEFAULT_CONTEXT_BUDGET = 65_000

/**
 * Section caps for a 65,000-token bundle. What is left (8,800) is headroom for the user's
 * message and tool payloads; every cap scales with the budget asked for.
 */
export const DEFAULT_SECTION_CAPS: Readonly<Record<SectionName, number>> = Object.freeze({
  identity: 1_200,
  rules: 6_000,
  task_state: 3_000,
  decision_ledger: 4_000,
  retrieved_evidence: 28_000,
  recent_window: 8_000,
  handoff_packet: 6_000,
})

/**
 * What a section weighs when the budget cannot hold every cap: sections asked for more than
 * `maxTokens` in all are given their caps highest priority first (the last one what is left),
 * and an item dropped to fit comes from the lowest-priority section holding one.
 */
export const SECTION_PRIORITIES: Readonly<Record<SectionName, number>> = Object.freeze({
  identity: 10,
  rules: 9,
  task_state: 8,
  decision_ledger: 7,
  handoff_packet: 7,
  retrieved_evidence: 6,
  recent_window: 5,
})

/** The smallest `maxTokens` `buildContext` takes. */
export const MIN_CONTEXT_BUDGET = 64

/** Who the bundle is for, named as `recordTurn` and `search` name it. */
const contextScope = z
  .object({
    tenantId: identifier.optional(),
    userId: identifier.optional(),
    agentId: identifier.optional(),
    /** The project the call is made in: the user's memories of other projects stay out. */
    projectId: identifier.optional(),
  })
  .strict()

const SCOPE_KEYS = ['tenantId', 'userId', 'agentId', 'projectId'] as const

export const contextInput = z
  .object({
    query: z.string().trim().min(1).max(20_000),
    conversationId: identifier.optional(),
    scope: contextScope.optional(),
    /** @deprecated Use `scope.tenantId`. */
    tenantId: identifier.optional(),
    /** @deprecated Use `scope.userId`. */
    userId: identifier.optional(),
    /** @deprecated Use `scope.agentId`. */
    agentId: identifier.optional(),
    /** @deprecated Use `scope.projectId`. */
    projectId: identifier.optional(),
    channel: z.enum(CHANNELS).default('private'),
    intent: z.string().max(200).optional(),
    /** The budget in tokens, 64 at least: below that no section could hold one item. */
    maxTokens: z.number().int().min(MIN_CONTEXT_BUDGET).max(2_000_000).default(DEFAULT_CONTEXT_BUDGET),
    sections: z
      .object(Object.fromEntries(SECTION_NAMES.map((n) => [n, z.number().int().min(0).optional()])))
      .strict()
      .optional(),
    now: timeInput.optional(),
    retrieval: z.boolean().default(true),
  })
  .strict()
  .superRefine((i, issues) => {
    for (const key of SCOPE_KEYS) {
      const flat = i[key]
      const scoped = i.scope?.[key]
      if (flat !== undefined && scoped !== undefined && flat !== scoped) {
        issues.addIssue({ code: 'custom', path: [key], message: `differs from scope.${key}: give it once, in scope` })
      }
    }
  })
  .transform(({ scope, ...i }) => ({
    ...i,
    tenantId: scope?.tenantId ?? i.tenantId ?? 'default',
    userId: scope?.userId ?? i.userId,
    agentId: scope?.agentId ?? i.agentId,
    projectId: scope?.projectId ?? i.projectId,
  }))

/**
 * What the next model call is about and for whom. Declared by hand, not inferred from the
 * schema, so that each field's comment reaches editors through the published types; the
 * check below keeps the two the same.
 */
export interface BuildContextInput {
  /** The question or task the bundle is for; retrieval searches for it. */
  query: string
  /** The conversation the call belongs to: its recent window and handoff notes come in. */
  conversationId?: string | undefined
  /** Who the bundle is for, as `recordTurn` and `search` take it. */
  scope?: { tenantId?: string | undefined; userId?: string | undefined; agentId?: string | undefined; projectId?: string | undefined } | undefined
  /** @deprecated Use `scope.tenantId`. */
  tenantId?: string | undefined
  /** @deprecated Use `scope.userId`. */
  userId?: string | undefined
  /** @deprecated Use `scope.agentId`. */
  agentId?: string | undefined
  /** @deprecated Use `scope.projectId`. */
  projectId?: string | undefined
  /** Where the answer goes (default `private`): only sensitivities allowed there are loaded. */
  channel?: Channel | undefined
  /** A short label of what the call is for (`repo_onboarding`), returned in `provenance.intent`. */
  intent?: string | undefined
  /** The budget in tokens (default 65,000), 64 at least: below that no section could hold one item. */
  maxTokens?: number | undefined
  /** Caps in tokens that replace the defaults of the named sections. */
  sections?: Partial<Record<SectionName, number>> | undefined
  /** The time the bundle is built at (default now): what was true then. */
  now?: TimeInput | undefined
  /** `false` skips search, for a fast bundle of rules, tasks, decisions and the recent window. */
  retrieval?: boolean | undefined
}

// The hand-written type and the schema's input are the same type.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const sameInput: Same<BuildContextInput, z.input<typeof contextInput>> = true
void sameInput

/** `buildContext`'s input once checked: the scope flattened, the tenant defaulted. */
export type ContextInput = z.output<typeof contextInput>

export const turnsOptions = z
  .object({
    tenantId: identifier.default('default'),
    /** Events above what this channel may show are left out (default 'private'). */
    channel: z.enum(CHANNELS).default('private'),
    /** Staleness as of this time (default now); procedures' links as the memory knew them then. */
    asOf: timeInput.optional(),
  })
  .strict()
export type TurnsOptions = z.input<typeof turnsOptions>

/** `turns`' options once checked: the tenant and channel defaulted. */
export type CheckedTurnsOptions = z.output<typeof turnsOptions>
