/** A message from Ann in `conversationId`, as `record` takes it; `extra` overrides fields. */
export const say = (conversationId: string, text: string, extra: Record<string, unknown> = {}) => ({
  kind: 'message' as const,
  scope: { conversationId, userId: 'ann' },
  actor: { type: 'human' as const, id: 'ann' },
  content: { text },
  ...extra,
})
