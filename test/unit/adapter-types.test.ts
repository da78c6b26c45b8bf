import { expectTypeOf, it } from 'vitest'
import type { ContextMemory, ToolMemory } from '../../src/adapters/ai-sdk/index.ts'
import type { ChatHistoryMemory } from '../../src/adapters/chat-history/index.ts'
import type { HistoryMemory, SearchMemory } from '../../src/adapters/langchain/index.ts'
import type { StoreMemory } from '../../src/adapters/langgraph/index.ts'
import type { SessionMemory, ToolMemory as AgentToolMemory } from '../../src/adapters/openai-agents/index.ts'
import type { Memory } from '../../src/index.ts'
import type { openMemory } from '../../src/node/index.ts'

type NodeMemory = Awaited<ReturnType<typeof openMemory>>

// Every integration takes a browser memory (`createMemory`) and a Node one (`openMemory`).
it('a memory from createMemory or openMemory fits every integration', () => {
  expectTypeOf<Memory>().toExtend<ContextMemory & ToolMemory & ChatHistoryMemory & HistoryMemory & SearchMemory>()
  expectTypeOf<Memory>().toExtend<StoreMemory & SessionMemory & AgentToolMemory>()
  expectTypeOf<NodeMemory>().toExtend<ContextMemory & ToolMemory & ChatHistoryMemory & HistoryMemory & SearchMemory>()
  expectTypeOf<NodeMemory>().toExtend<StoreMemory & SessionMemory & AgentToolMemory>()
})
