/**
 * A small MCP server (the official SDK's McpServer, over stdio): the tools of a
 * customer-support agent at Northpeak Outfitters, the fictional retailer of
 * examples/support. It is the "real MCP server" behind `authz mcp-proxy` in
 * docs/mcp.md and in mcp-agent.ts.
 *
 *   lookup_order    { order_id }             an order's status
 *   refund_order    { order_id, amount }     refunds an order (USD)
 *   add_note        { order_id, text }       adds a note to an order
 *   delete_customer { customer_id }          deletes a customer record
 *
 * Like any downstream service, it checks the permit the proxy passes in
 * `_meta["agent-authz/permit"]` before acting: the signature against the
 * service's JWKS, and that the permit was issued for this tool's action (as
 * docs/mcp.md's mcp.yaml maps it) and these exact arguments
 * (`verify(token, { action, arguments })`), and that it is a permit of its own
 * account and environment. AUTHZ_URL names the service (default
 * http://127.0.0.1:8080), AUTHZ_ISSUER the tokens' `iss` if it differs,
 * AUTHZ_ACCOUNT the account (`acc_...`, required), AUTHZ_ENVIRONMENT the
 * environment (default: that of AUTHZ_API_KEY, `svc_live_...` live, else test).
 *
 * Run: `node dist/examples/agents/support-tools-server.js` (an MCP client starts it).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { createPermitVerifier, PermitError } from '../../permit-verifier/index.js';

const service = (process.env.AUTHZ_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
const environment =
  process.env.AUTHZ_ENVIRONMENT || (process.env.AUTHZ_API_KEY?.startsWith('svc_live_') ? 'live' : 'test');
if (environment !== 'test' && environment !== 'live')
  throw new Error(`AUTHZ_ENVIRONMENT must be test or live, not ${environment}`);
const account = process.env.AUTHZ_ACCOUNT ?? '';
if (account === '')
  throw new Error(
    'AUTHZ_ACCOUNT is required: the account (acc_...) whose permits these tools accept (`authz serve` prints it at start)',
  );
const verifier = createPermitVerifier({
  jwksUrl: `${service}/.well-known/jwks.json`,
  issuer: process.env.AUTHZ_ISSUER ?? service,
  account,
  environment,
});

type Meta = Record<string, unknown> | undefined;

/** Each tool's action, as the proxy's configuration in docs/mcp.md maps it (add_note unmapped: `<server>.add_note`). */
const ACTIONS = {
  lookup_order: 'orders.read',
  refund_order: 'payments.refund',
  add_note: 'support.add_note',
  delete_customer: 'customers.delete',
} as const;

/** Runs `act` only with a valid permit for this tool's action and these arguments; the text says so. */
async function withPermit(
  tool: keyof typeof ACTIONS,
  meta: Meta,
  args: Record<string, unknown>,
  act: () => string,
): Promise<CallToolResult> {
  const token = meta?.['agent-authz/permit'];
  if (typeof token !== 'string')
    return { content: [{ type: 'text', text: 'refused: no agent-authz permit' }], isError: true };
  try {
    await verifier.verify(token, { action: ACTIONS[tool], arguments: args });
  } catch (error) {
    const code = error instanceof PermitError ? error.code : 'error';
    return {
      content: [{ type: 'text', text: `refused: the permit is not valid for this call (${code})` }],
      isError: true,
    };
  }
  return { content: [{ type: 'text', text: `${act()} (permit checked)` }] };
}

const server = new McpServer({ name: 'northpeak-support', version: '1.0.0' });

server.registerTool(
  'lookup_order',
  { description: "An order's status", inputSchema: { order_id: z.string() } },
  async (args, extra) =>
    withPermit('lookup_order', extra._meta, args, () => `order ${args.order_id}: 2 items, shipped`),
);
server.registerTool(
  'refund_order',
  { description: 'Refund an order, in USD', inputSchema: { order_id: z.string(), amount: z.number() } },
  async (args, extra) =>
    withPermit('refund_order', extra._meta, args, () => `refunded ${args.amount} USD on order ${args.order_id}`),
);
server.registerTool(
  'add_note',
  { description: 'Add a note to an order', inputSchema: { order_id: z.string(), text: z.string() } },
  async (args, extra) => withPermit('add_note', extra._meta, args, () => `note added to order ${args.order_id}`),
);
server.registerTool(
  'delete_customer',
  { description: 'Delete a customer record', inputSchema: { customer_id: z.string() } },
  async (args, extra) => withPermit('delete_customer', extra._meta, args, () => `customer ${args.customer_id} deleted`),
);

await server.connect(new StdioServerTransport());
