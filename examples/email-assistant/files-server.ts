/**
 * The e-mail assistant's file store (docs/trifecta.md): a small MCP server (the
 * official SDK's low-level Server, over stdio) with the user's files, one of
 * them private (the payroll).
 *
 *   files_read { path }   a file's text
 *
 * Run: an MCP client starts it, through `authz mcp-proxy` (assistant.ts does).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

const FILES: Record<string, string> = {
  'payroll.csv': 'name,salary_usd\nalex,148000\ndana,131000\nlee,97000\n',
  'notes.txt': 'Q3: hire two engineers; move the offsite to October.\n',
};

const TOOLS: Tool[] = [
  {
    name: 'files_read',
    description: "One of the user's files",
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    // The user's own store, not the open world (the gateway labels what it reads private).
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
];

const server = new Server({ name: 'files', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
server.setRequestHandler(CallToolRequestSchema, (request): CallToolResult => {
  if (request.params.name !== 'files_read')
    return { content: [{ type: 'text', text: `no tool ${request.params.name}` }], isError: true };
  const path = String((request.params.arguments ?? {}).path ?? '');
  const text = Object.hasOwn(FILES, path) ? FILES[path] : undefined;
  if (text === undefined)
    return { content: [{ type: 'text', text: `no file ${JSON.stringify(path)}` }], isError: true };
  return { content: [{ type: 'text', text }] };
});
await server.connect(new StdioServerTransport());
