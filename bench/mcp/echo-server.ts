/**
 * The MCP server of the proxy benchmark (run.ts): the official SDK's McpServer
 * over stdio with two tools that answer at once, so that what is measured is
 * the MCP round trip and, through the proxy, what the proxy adds.
 *
 *   lookup { order_id }   -> "order <id>"     (mapped to orders.read: allowed)
 *   remove { order_id }   -> "removed <id>"   (mapped to orders.delete: denied, never reached through the proxy)
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'bench-echo', version: '1.0.0' });
server.registerTool(
  'lookup',
  { description: 'Look up an order', inputSchema: { order_id: z.string() } },
  async ({ order_id }) => ({
    content: [{ type: 'text', text: `order ${order_id}` }],
  }),
);
server.registerTool(
  'remove',
  { description: 'Remove an order', inputSchema: { order_id: z.string() } },
  async ({ order_id }) => ({
    content: [{ type: 'text', text: `removed ${order_id}` }],
  }),
);
await server.connect(new StdioServerTransport());
