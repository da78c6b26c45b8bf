import { jsonSchema, type ToolSet, tool } from 'ai'
import { jsonSchemaOf, TOOL_NAMES, TOOL_SCHEMAS, type ToolIdentity, type ToolName } from '../../core/tools/agent-tools.ts'

/** What the tools need of a memory: one from `createMemory` or `openMemory` has it. */
export interface ToolMemory {
  callTool(name: string, args: unknown, identity?: ToolIdentity): Promise<unknown>
}

/**
 * Engram's memory tools (`save_memory`, `recall_memories`, `manage_memory`, …) as AI SDK tools,
 * for `generateText({ tools })`. Each runs `memory.callTool` for `identity`: the model sees and
 * changes only that user's memories. `names` picks some of them.
 *
 * @example
 * import { generateText } from 'ai'
 * import { memoryTools } from 'engram/ai-sdk'
 * const { text } = await generateText({
 *   model,
 *   tools: memoryTools(memory, { userId: 'alice' }, ['save_memory', 'recall_memories']),
 *   prompt: 'Remember that I prefer tabs.',
 * })
 */
export function memoryTools(memory: ToolMemory, identity: ToolIdentity = {}, names: readonly ToolName[] = TOOL_NAMES): ToolSet {
  const tools: ToolSet = {}
  for (const name of names) {
    tools[name] = tool({
      description: TOOL_SCHEMAS[name].description,
      inputSchema: jsonSchema<Record<string, unknown>>(jsonSchemaOf(name)),
      execute: (args: Record<string, unknown>) => memory.callTool(name, args, identity),
    })
  }
  return tools
}
