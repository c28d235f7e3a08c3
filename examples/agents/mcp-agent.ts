/**
 * An agent whose tools sit behind `authz mcp-proxy` (docs/mcp.md): it starts
 * the proxy in front of the support tools server (support-tools-server.ts),
 * connects to it with the official SDK's MCP client, lists the tools it may use
 * and calls a few, printing what was allowed and what was refused.
 *
 *   node dist/examples/agents/mcp-agent.js [CONFIG]
 *       starts `node bin/authz.js mcp-proxy --config CONFIG -- node support-tools-server.js`
 *       over stdio (CONFIG default: mcp.yaml); AUTHZ_URL and AUTHZ_API_KEY pass on to it
 *   node dist/examples/agents/mcp-agent.js --server bank bank.yaml
 *       the same in front of bank-tools-server.js, whose tools declare their own
 *       mappings (docs/mcp.md, "Mappings declared by the server"), and its calls
 *   node dist/examples/agents/mcp-agent.js --url http://127.0.0.1:8091/mcp
 *       a proxy already listening (`authz mcp-proxy ... --listen 127.0.0.1:8091`)
 *   node dist/examples/agents/mcp-agent.js --url http://127.0.0.1:8092/mcp --client ID:SECRET --issuer URL
 *       a gateway with `auth:` (docs/mcp.md, "One gateway for many agents"): the SDK's
 *       OAuth client finds the authorization server from the gateway's 401 and gets a
 *       token with the client-credentials grant, as client ID of the issuer URL
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: 'string' },
    client: { type: 'string' },
    issuer: { type: 'string' },
    server: { type: 'string', default: 'support' },
  },
});

type Call = { name: string; arguments: Record<string, unknown> };

/** The MCP servers this agent can start behind the proxy, and the calls it makes to each, in order. */
const SERVERS: Record<string, { script: string; calls: Call[] }> = {
  support: {
    script: './support-tools-server.js',
    calls: [
      { name: 'lookup_order', arguments: { order_id: '1001' } },
      { name: 'refund_order', arguments: { order_id: '1001', amount: 80 } },
      { name: 'add_note', arguments: { order_id: '1001', text: 'customer called about the refund' } },
      { name: 'add_note', arguments: { order_id: '2001', text: 'not one of ours' } },
      { name: 'delete_customer', arguments: { customer_id: 'cus_1' } },
    ],
  },
  bank: {
    script: './bank-tools-server.js',
    calls: [
      { name: 'get_balance', arguments: { account: 'acc-1' } },
      { name: 'transfer', arguments: { from: 'acc-1', amount: 20 } },
      { name: 'transfer', arguments: { from: 'acc-1', amount: 500 } },
    ],
  },
};
const chosen = SERVERS[values.server];
if (!chosen) {
  process.stderr.write(`--server must be one of ${Object.keys(SERVERS).join(', ')}\n`);
  process.exit(2);
}
const { script, calls: CALLS } = chosen;

/** With --client ID:SECRET: the SDK's client-credentials OAuth provider, for the issuer given by --issuer. */
function oauth(): { authProvider?: ClientCredentialsProvider } {
  if (values.client === undefined) return {};
  const colon = values.client.indexOf(':');
  if (colon < 1 || !values.issuer) {
    process.stderr.write(
      '--client takes ID:SECRET, and needs --issuer URL (the authorization server the credentials are for)\n',
    );
    process.exit(2);
  }
  const clientId = values.client.slice(0, colon);
  return {
    authProvider: new ClientCredentialsProvider({
      clientId,
      clientSecret: values.client.slice(colon + 1),
      expectedIssuer: values.issuer,
    }),
  };
}

function proxyTransport(): { transport: Transport; stderr: () => string } {
  if (values.url)
    return { transport: new StreamableHTTPClientTransport(new URL(values.url), oauth()), stderr: () => '' };
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      fileURLToPath(new URL('../../../bin/authz.js', import.meta.url)),
      'mcp-proxy',
      '--config',
      positionals[0] ?? 'mcp.yaml',
      '--',
      process.execPath,
      fileURLToPath(new URL(script, import.meta.url)),
    ],
    env,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  return { transport, stderr: () => err };
}

/** Why the client could not connect, in one line: the proxy it started, or the server at --url (refusing the client, or not there). */
function notConnected(error: unknown): string {
  const message = (error as Error).message;
  if (!values.url) return `could not start the proxy: ${message}`;
  const status = error instanceof StreamableHTTPError ? error.code : undefined;
  if (error instanceof OAuthError || error instanceof UnauthorizedError || status === 401 || status === 403) {
    const who = values.client
      ? `the client ${values.client.slice(0, values.client.indexOf(':'))} (--client)`
      : 'a client without credentials (no --client)';
    const advice = values.client
      ? `check its secret and that ${values.issuer} is the issuer the gateway trusts`
      : 'the gateway asks for a token: give --client ID:SECRET and --issuer URL';
    return `${values.url} refused ${who}: ${message}; ${advice}`;
  }
  return `could not connect to ${values.url}: ${message}`;
}

const text = (content: unknown) => ((content ?? []) as Array<{ text?: string }>).map((c) => c.text ?? '').join(' ');

const { transport, stderr } = proxyTransport();
const client = new Client({ name: 'support-agent', version: '1.0.0' });
try {
  await client.connect(transport);
} catch (error) {
  process.stderr.write(`${notConnected(error)}\n${stderr()}`);
  process.exit(1);
}
try {
  const { tools } = await client.listTools();
  console.log(`tools the agent sees: ${tools.map((t) => t.name).join(', ') || '(none)'}`);
  for (const call of CALLS) {
    const result = await client.callTool(call);
    console.log(
      `${call.name} ${JSON.stringify(call.arguments)}\n  -> ${result.isError ? 'refused' : 'allowed'}: ${text(result.content)}`,
    );
  }
} finally {
  await client.close();
}
