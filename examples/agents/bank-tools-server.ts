/**
 * A small MCP server (the official SDK's low-level Server, over stdio) whose
 * tools say themselves how they are authorized: `x-authzen-mapping` in their
 * input schemas (the AuthZEN COAZ-MCP binding, draft 1). Behind
 * `authz mcp-proxy` with `declared_mappings: true` (docs/mcp.md, "Mappings
 * declared by the server"), each call is decided by its tool's mapping, with
 * no per-tool configuration; the proxy keeps the actions in the server's
 * namespace (`server: bank` in the configuration: `bank.small_transfer`).
 *
 *   get_balance { account }          action get_balance on account:<account>
 *   transfer    { from, amount }     small_transfer (amount <= 100) or
 *                                    large_transfer on account:<from>
 *
 * Run: `node dist/examples/agents/bank-tools-server.js` (an MCP client starts it;
 * `node dist/examples/agents/mcp-agent.js --server bank bank.yaml` does).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

const TOOLS: Tool[] = [
  {
    name: 'get_balance',
    description: "An account's balance",
    inputSchema: {
      type: 'object',
      properties: { account: { type: 'string' } },
      required: ['account'],
      'x-authzen-mapping': {
        evaluation: { action: { name: 'get_balance' }, resource: { type: 'account', id: '$params.arguments.account' } },
      },
    },
  },
  {
    name: 'transfer',
    description: 'Moves money between accounts',
    inputSchema: {
      type: 'object',
      properties: { from: { type: 'string' }, amount: { type: 'number' } },
      required: ['from', 'amount'],
      'x-authzen-mapping': {
        evaluation: {
          action: { name: "$params.arguments.amount > 100.0 ? 'large_transfer' : 'small_transfer'" },
          resource: { type: 'account', id: '$params.arguments.from' },
        },
      },
    },
  },
];

const server = new Server({ name: 'bank', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
server.setRequestHandler(CallToolRequestSchema, (request): CallToolResult => {
  const args = (request.params.arguments ?? {}) as Record<string, unknown>;
  switch (request.params.name) {
    case 'get_balance':
      return { content: [{ type: 'text', text: `account ${String(args.account)}: 1,250.00 USD` }] };
    case 'transfer':
      return { content: [{ type: 'text', text: `moved ${String(args.amount)} USD from ${String(args.from)}` }] };
    default:
      return { content: [{ type: 'text', text: `no tool ${request.params.name}` }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
