/**
 * The gateway's limits (issue 44, item 7; docs/mcp.md#one-gateway-for-many-agents),
 * end to end with no mocks: a real service on loopback, the stand-in
 * authorization server of examples/oauth-issuer on 127.0.0.1 (tokens signed
 * with jose), the real gateway (`node bin/authz.js mcp-proxy --listen` with
 * `auth:`) in front of the real test tool server over Streamable HTTP, and the
 * SDK's own MCP client with bearer tokens:
 *
 * - one identity's sessions cannot take every slot (`--max-sessions-per-identity`);
 * - a `tools/call` whose `name` is not a string, or whose arguments nest too
 *   deep, is JSON-RPC invalid params (-32602), never an internal error;
 * - a token issued in the future, or living longer than
 *   `auth.max_token_lifetime_seconds`, is refused.
 */
import type { ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandInIssuer, type StandInIssuer } from '../../examples/oauth-issuer/server.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import {
  BIN,
  ensureProxyBuilt,
  recorded,
  scratch,
  startPrinting,
  stop,
  textOf,
  TOOLS_SERVER,
} from './helpers/proxy.js';

describe('the gateway limits sessions per identity, tools/call params and token times', () => {
  let rt: TestRuntime;
  let as: StandInIssuer;
  let upstream: ChildProcess;
  let gateway: ChildProcess;
  let url: string;
  let files: ReturnType<typeof scratch>;
  const clients: Client[] = [];

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime('embedded');
    await rt.setPolicies([{ id: 'pol_tools', effect: 'allow', actions: ['tools.*'] }]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
    as = await startStandInIssuer({
      clients: [
        { client_id: 'research-bot', client_secret: 'research-secret', user: 'alice' },
        { client_id: 'billing-bot', client_secret: 'billing-secret', user: 'bob' },
      ],
    });
    files = scratch(`server: tools
auth:
  issuer: ${as.issuer}
  scopes: [mcp:tools]
  max_token_lifetime_seconds: 7200
`);
    const tools = await startPrinting(process.execPath, [TOOLS_SERVER, '--http'], { RECORD_FILE: files.record }, (l) =>
      l.startsWith('{') ? (JSON.parse(l) as { url: string }).url : undefined,
    );
    upstream = tools.child;
    const started = await startPrinting(
      process.execPath,
      [
        BIN,
        'mcp-proxy',
        '--config',
        files.config,
        '--listen',
        '127.0.0.1:0',
        '--max-sessions',
        '5',
        '--max-sessions-per-identity',
        '2',
        '--upstream-url',
        tools.value,
        '--url',
        base,
        '--key',
        rt.testKey,
      ],
      {},
      (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1],
    );
    gateway = started.child;
    url = started.value;
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    if (gateway) await stop(gateway);
    if (upstream) await stop(upstream);
    await as?.close();
    await rt?.close();
  });

  const tokenFor = (clientId: string, user: string, times: { iat?: number; expiresIn?: number } = {}) =>
    as.mint({
      claims: {
        aud: url,
        client_id: clientId,
        sub: user,
        scope: 'mcp:tools',
        ...(times.iat === undefined ? {} : { iat: times.iat }),
      },
      ...(times.expiresIn === undefined ? {} : { expiresIn: times.expiresIn }),
    });
  async function connect(token: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    const client = new Client({ name: 'limits-test-agent', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  }
  /** The gateway's answer to an initialize with this token, read raw (status, WWW-Authenticate, JSON-RPC error). */
  async function initializeRaw(token: string) {
    const r = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const body = await r.text();
    return {
      status: r.status,
      challenge: r.headers.get('www-authenticate'),
      retryAfter: r.headers.get('retry-after'),
      body,
    };
  }

  it("caps one identity's sessions (429) while another identity still gets in, and frees a slot when a session ends", async () => {
    const alice = await tokenFor('research-bot', 'alice');
    const first = await connect(alice);
    const second = await connect(alice);
    // The third session of the same agent and user: refused by the SDK's transport with the gateway's 429.
    await expect(connect(alice)).rejects.toMatchObject({
      code: 429,
      message: expect.stringContaining('Too many MCP sessions for agent research-bot for user alice'),
    });
    const raw = await initializeRaw(alice);
    expect(raw.status).toBe(429);
    expect(raw.retryAfter).toBe('1');
    expect((JSON.parse(raw.body) as { error: { code: number; message: string } }).error).toEqual({
      code: -32000,
      message:
        'Too many MCP sessions for agent research-bot for user alice: at most 2 at once; end one (DELETE /mcp) or wait until one is idle for long enough to end',
    });
    // Another identity is not shut out: bob's agent opens its own sessions.
    const bob = await connect(await tokenFor('billing-bot', 'bob'));
    expect(textOf(await bob.client.callTool({ name: 'delete_file', arguments: { path: 'a' } }))).toBe('deleted a');
    // alice's open sessions keep working; ending one (DELETE) lets her open another.
    expect(textOf(await second.client.callTool({ name: 'delete_file', arguments: { path: 'a' } }))).toBe('deleted a');
    await first.transport.terminateSession();
    await first.client.close();
    const again = await connect(alice);
    expect(textOf(await again.client.callTool({ name: 'delete_file', arguments: { path: 'a' } }))).toBe('deleted a');
    for (const s of [second, again, bob]) {
      await s.transport.terminateSession();
      await s.client.close();
    }
  });

  it('answers a tools/call whose name is not a string, or whose arguments nest too deep, with invalid params (-32602), forwarding nothing', async () => {
    const { client, transport } = await connect(await tokenFor('research-bot', 'alice'));
    const before = recorded(files.record).length;
    const invalid = async (params: Record<string, unknown>) => {
      try {
        await client.callTool(params as { name: string });
      } catch (error) {
        return { code: (error as { code?: number }).code, message: (error as Error).message };
      }
      throw new Error('expected a JSON-RPC error');
    };
    expect(await invalid({ name: 42, arguments: {} })).toEqual({
      code: -32602,
      message: "MCP error -32602: Invalid params: params.name must be the tool's name, a string (not 42)",
    });
    expect(await invalid({ name: { tool: 'x' } })).toEqual({
      code: -32602,
      message: "MCP error -32602: Invalid params: params.name must be the tool's name, a string (not an object)",
    });
    expect(await invalid({ name: 'delete_file', arguments: ['a'] })).toEqual({
      code: -32602,
      message:
        "MCP error -32602: Invalid params: params.arguments must be an object of the tool's arguments (not an array)",
    });
    const nested = (depth: number): Record<string, unknown> => {
      let value: Record<string, unknown> = { leaf: 'x' };
      for (let i = 1; i < depth; i++) value = { a: [value] };
      return value;
    };
    // 62 levels (the arguments object, then each { a: [...] } is two) and 2,000 (a stack overflow in the argument digest before the limit): both refused the same way.
    for (const depth of [31, 1000]) {
      expect(await invalid({ name: 'delete_file', arguments: { path: 'a', extra: nested(depth) } })).toEqual({
        code: -32602,
        message:
          'MCP error -32602: Invalid params: params.arguments is nested deeper than 61 levels of objects and arrays',
      });
    }
    expect(recorded(files.record).length).toBe(before);
    // 61 levels (what a decision's context takes) are decided and forwarded as any call.
    expect(
      textOf(await client.callTool({ name: 'delete_file', arguments: { path: 'deep', extra: [nested(30)] } })),
    ).toBe('deleted deep');
    expect(recorded(files.record).length).toBe(before + 1);
    await transport.terminateSession();
  });

  it('refuses a token issued in the future (beyond the 60 s leeway) or living longer than auth.max_token_lifetime_seconds', async () => {
    const now = Math.floor(Date.now() / 1000);
    const future = await tokenFor('research-bot', 'alice', { iat: now + 600, expiresIn: 3600 });
    await expect(connect(future)).rejects.toMatchObject({ code: 401 });
    const refusedFuture = await initializeRaw(future);
    expect(refusedFuture.status).toBe(401);
    expect(refusedFuture.challenge).toContain('error="invalid_token"');
    expect(refusedFuture.challenge).toContain(
      'error_description="the token was issued in the future (its \\"iat\\" is later than now)"',
    );

    const long = await tokenFor('research-bot', 'alice', { expiresIn: 7201 });
    await expect(connect(long)).rejects.toMatchObject({ code: 401 });
    const refusedLong = await initializeRaw(long);
    expect(refusedLong.status).toBe(401);
    expect(refusedLong.challenge).toContain(
      'the token lives longer than this gateway accepts: 7201 s from \\"iat\\" to \\"exp\\", at most 7200 s (auth.max_token_lifetime_seconds)',
    );

    // Within the leeway and the lifetime: accepted.
    const { client, transport } = await connect(
      await tokenFor('research-bot', 'alice', { iat: now + 30, expiresIn: 7200 }),
    );
    expect(textOf(await client.callTool({ name: 'delete_file', arguments: { path: 'a' } }))).toBe('deleted a');
    await transport.terminateSession();
  });
});
