import { describe, expect, it } from 'vitest'
import type { ContextBundle } from '../../src/core/retrieval/context.ts'
import { openTestMemory } from '../support/memory.ts'

describe('many agents on one memory', () => {
  it('twelve agents of three users at once: every turn recorded once in order, nothing of one user in another\'s answers', async () => {
    await using memory = await openTestMemory()
    const users = ['ann', 'bob', 'cyd']
    const agents = Array.from({ length: 12 }, (_, n) => ({ userId: users[n % 3] as string, agentId: `agent-${n}` }))
    const ROUNDS = 4
    await Promise.all(
      agents.map(async (who) => {
        for (let r = 0; r < ROUNDS; r++) {
          // All of them in one conversation id, as a team's stand-up might be.
          await memory.callTool(
            'record_turn',
            { conversation_id: 'standup', user: `${who.userId} asks round ${r} of ${who.agentId}`, reply: `${who.agentId} answers ${who.userId}` },
            who,
          )
          if (r === 1) {
            await memory.callTool('save_memory', { content: `${who.userId} prefers tabs (noted by ${who.agentId})`, category: 'preference' }, who)
          }
          const bundle = (await memory.callTool('build_context', { query: `round ${r}`, conversation_id: 'standup' }, who)) as ContextBundle
          // Whatever the others are writing meanwhile, a bundle holds this user's words only.
          const text = bundle.sections.flatMap((s) => s.items.map((i) => i.text)).join('\n')
          for (const other of users.filter((u) => u !== who.userId)) expect(text).not.toContain(`${other} asks`)
        }
      }),
    )
    const events = await memory.events.list({ conversationId: 'standup' })
    // Twelve agents × four rounds, each turn once, numbered without gaps or repeats.
    expect(events.filter((e) => e.actor.type === 'human').map((e) => e.turnIndex)).toEqual(Array.from({ length: 12 * ROUNDS }, (_, n) => n))
    for (const userId of users) {
      expect(events.filter((e) => e.scope.userId === userId)).toHaveLength(2 * 4 * ROUNDS)
      const recalled = (await memory.callTool('recall_memories', { query: 'prefers tabs', limit: 50 }, { userId })) as { memories: { content: string }[] }
      expect(recalled.memories.length).toBeGreaterThan(0)
      expect(recalled.memories.every((m) => m.content.startsWith(`${userId} prefers`))).toBe(true)
    }
  })
})
