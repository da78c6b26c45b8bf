import { storableText } from './json.ts'
import { MAX_ID_LENGTH } from './limits.ts'
import { z } from './validate.ts'

/** A caller-chosen identifier: tenant, user, agent, conversation, run, actor. */
export const identifier = storableText.pipe(
  z
    .string()
    .min(1, 'must not be empty')
    .max(MAX_ID_LENGTH, `must be at most ${MAX_ID_LENGTH} characters`)
    .refine((s) => s.trim() === s, 'must not start or end with whitespace'),
)

export const CHANNELS = ['private', 'public', 'team', 'agent'] as const
export type Channel = (typeof CHANNELS)[number]

/** Accepted on input so that a secret can be refused with a clear reason; never stored. */
export const SENSITIVITIES = ['none', 'low', 'high', 'secret'] as const
export type Sensitivity = (typeof SENSITIVITIES)[number]
export type StoredSensitivity = Exclude<Sensitivity, 'secret'>

/** Who a row belongs to. Every event lives in exactly one conversation. */
export const eventScope = z
  .object({
    tenantId: identifier.default('default'),
    userId: identifier.optional(),
    agentId: identifier.optional(),
    conversationId: identifier,
    runId: identifier.optional(),
  })
  .strict()

export type EventScopeInput = z.input<typeof eventScope>
export type EventScope = z.output<typeof eventScope>

/** The scope of a turn, whose conversation is given beside it. */
export const turnScope = eventScope.omit({ conversationId: true })
export type TurnScopeInput = z.input<typeof turnScope>
