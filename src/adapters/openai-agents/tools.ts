import { type FunctionTool, tool } from '@openai/agents'
import { jsonSchemaOf, TOOL_NAMES, TOOL_SCHEMAS, type ToolIdentity, type ToolName } from '../../core/tools/agent-tools.ts'

/** What the tools need of a memory: one from `createMemory` or `openMemory` has it. */
export interface ToolMemory {
  callTool(name: string, args: unknown, identity?: ToolIdentity): Promise<unknown>
}

/**
 * Engram's memory tools (`save_memory`, `recall_memories`, …) as function tools of the OpenAI
 * Agents SDK. Each runs `memory.callTool` for `identity`, so the agent sees and changes only
 * that user's memories; the result goes back to the model as JSON. `names` picks some of them.
 *
 * @example
 * import { Agent } from '@openai/agents'
 * import { memoryFunctionTools } from 'engram/openai-agents'
 * const agent = new Agent({ name: 'helper', tools: memoryFunctionTools(memory, { userId: 'alice' }) })
 */
export function memoryFunctionTools(
  memory: ToolMemory,
  identity: ToolIdentity = {},
  names: readonly ToolName[] = TOOL_NAMES,
): FunctionTool[] {
  return names.map((name) => {
    const schema = jsonSchemaOf(name) as { properties?: Record<string, never>; required?: string[] }
    return tool({
      name,
      description: TOOL_SCHEMAS[name].description,
      // Non-strict: the schemas have optional fields; callTool checks the arguments itself.
      strict: false,
      parameters: { type: 'object', properties: schema.properties ?? {}, required: schema.required ?? [], additionalProperties: true },
      execute: async (args: unknown) => JSON.stringify(await memory.callTool(name, args, identity)),
    }) as FunctionTool
  })
}
