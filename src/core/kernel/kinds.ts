/** What an event is. Every event in the log has one of these kinds. */
export const EVENT_KINDS = ['message', 'tool_call', 'tool_result', 'decision', 'task_update', 'artifact'] as const
export type EventKind = (typeof EVENT_KINDS)[number]

/** Who produced an event. */
export const ACTOR_TYPES = ['human', 'agent', 'tool'] as const
export type ActorType = (typeof ACTOR_TYPES)[number]
