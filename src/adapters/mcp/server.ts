import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js'
import { MemoryError } from '../../core/kernel/errors.ts'
import { anthropicTools, MEMORY_GUIDELINES, TOOL_NAMES, type ToolIdentity, toolIdentity, type ToolName } from '../../core/tools/agent-tools.ts'
import { parseInput, z } from '../../core/kernel/validate.ts'

/** What the server needs of a memory: `openMemory`'s in Node, or `createMemory`'s in a page. */
export interface McpMemory {
  callTool(name: string, args: unknown, identity?: ToolIdentity): Promise<unknown>
}

export interface McpServerOptions {
  /** Who the tools act for: every call sees and changes this user's memories only. */
  identity?: ToolIdentity
  /** The tools offered (default all: `save_memory`, `recall_memories`, `manage_memory`, …). */
  tools?: readonly ToolName[]
  /** Reported to the client in `initialize` (default `engram`). */
  name?: string
}

/** The prompt that tells a model when to save and recall (`MEMORY_GUIDELINES`). */
export const GUIDELINES_PROMPT = 'memory_guidelines'

const optionsSchema = z.strictObject({
  identity: toolIdentity.default({}),
  tools: z
    .array(z.enum(TOOL_NAMES as [ToolName, ...ToolName[]]))
    .min(1)
    .default(TOOL_NAMES),
  name: z.string().min(1).default('engram'),
})

/**
 * A Model Context Protocol server over a memory: its agent tools (the same definitions and
 * handlers as `openAITools` / `callTool`) and the `memory_guidelines` prompt, which is also
 * sent as the server's instructions. Connect it to a transport, e.g. stdio (`engram-mcp`).
 *
 * A tool that refuses its input or fails answers as a tool error (`isError`, with the
 * MemoryError's code), so the model can read why and try again.
 *
 * @example
 * const server = createMcpServer(memory, { identity: { userId: 'me' } })
 * await server.connect(new StdioServerTransport())
 */
export function createMcpServer(memory: McpMemory, options: McpServerOptions = {}): Server {
  const o = parseInput(optionsSchema, options, 'MCP server options')
  const identity = o.identity as ToolIdentity
  const offered = new Set<string>(o.tools)
  const server = new Server(
    { name: o.name, version: VERSION },
    { capabilities: { tools: {}, prompts: {} }, instructions: MEMORY_GUIDELINES },
  )

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: anthropicTools(o.tools).map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.input_schema as { type: 'object'; [key: string]: unknown },
    })),
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params
    try {
      if (!offered.has(name)) {
        throw new MemoryError('INVALID_INPUT', `Unknown tool "${name}"; this server offers: ${[...offered].join(', ')}`)
      }
      const result = await memory.callTool(name, args ?? {}, identity)
      return { content: [{ type: 'text', text: JSON.stringify(result ?? null) }] }
    } catch (error) {
      const code = MemoryError.is(error) ? error.code : 'INTERNAL'
      const message = error instanceof Error ? error.message : String(error)
      return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] }
    }
  })

  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: [
      {
        name: GUIDELINES_PROMPT,
        description: 'When and how to save and recall memories with these tools: put it in the system prompt.',
      },
    ],
  }))

  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    if (request.params.name !== GUIDELINES_PROMPT) {
      throw new McpError(ErrorCode.InvalidParams, `No prompt "${request.params.name}"; this server offers: ${GUIDELINES_PROMPT}`)
    }
    return {
      description: 'When and how to use the memory tools',
      messages: [{ role: 'user' as const, content: { type: 'text' as const, text: MEMORY_GUIDELINES } }],
    }
  })

  return server
}

/** The version the server reports; kept with the package's. */
const VERSION = '0.1.0'
