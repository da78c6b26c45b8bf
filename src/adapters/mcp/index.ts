// `engram/mcp`: an MCP server over a memory, for any transport, and the same over HTTP for
// several clients at once.
export { createMcpServer, GUIDELINES_PROMPT, type McpMemory, type McpServerOptions } from './server.ts'
export { type HttpMcp, MCP_PATH, serveMcpOverHttp } from './http.ts'
