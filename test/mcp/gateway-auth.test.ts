/**
 * One MCP gateway for many agents and users (issue 31;
 * docs/mcp.md#one-gateway-for-many-agents), end to end with no
 * mocks: a real service on loopback (both stores), the stand-in authorization server of
 * examples/oauth-issuer on 127.0.0.1 (metadata, JWKS, client-credentials
 * tokens signed with jose), the real proxy (`node bin/authz.js mcp-proxy
 * --listen` with `auth:`) in front of the real test tool server, and the SDK's
 * own MCP client, with a bearer token, or with its own OAuth support
 * (ClientCredentialsProvider as the transport's authProvider) finding the
 * authorization server from the gateway's 401 and metadata.
 */
import { createServer } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandInIssuer, type StandInIssuer } from '../../examples/oauth-issuer/server.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { startReverseProxy, type ReverseProxy } from './helpers/reverse-proxy.js';
import {
  BIN,
  ensureProxyBuilt,
  recorded,
  runProxyToExit,
  scratch,
  startPrinting,
  stop,
  textOf,
  TOOLS_SERVER,
} from './helpers/proxy.js';
import type { JsonObject } from '../helpers/json.js';

const gatewayConfig = (issuer: string, extra = '') => `server: tools
auth:
  issuer: ${issuer}
  scopes: [mcp:tools]
${extra}tools:
  write_file: { action: files.write, resource: "file:{path}" }
  charge: { action: payments.charge, resource: "customer:{customer_id}", amount: amount }
`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** An SDK client over Streamable HTTP sending a fixed bearer token. */
async function clientWithToken(
  url: string,
  token: string,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'gateway-test-agent', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** An SDK client that gets its own token: the gateway's 401 -> its metadata -> the issuer's metadata -> client credentials. */
async function clientWithOAuth(url: string, issuer: string, clientId: string, clientSecret: string): Promise<Client> {
  const authProvider = new ClientCredentialsProvider({
    clientId,
    clientSecret,
    expectedIssuer: issuer,
    scope: 'mcp:tools',
  });
  const client = new Client({ name: 'gateway-oauth-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider }));
  return client;
}

describe.each(STORE_KINDS)('one MCP gateway for many agents and users (auth:, %s store)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  let as: StandInIssuer;
  let upstream: ChildProcess;
  let upstreamUrl: string;
  const children: ChildProcess[] = [];
  const clients: Client[] = [];
  let files: ReturnType<typeof scratch>;

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { id: 'pol_write', effect: 'allow', actions: ['files.write'], resources: ['file:notes/*'] },
      // Charges count per user, whichever agent asks.
      {
        id: 'pol_charge_user',
        effect: 'allow',
        actions: ['payments.charge'],
        resources: ['customer:*'],
        budget: { unit: 'USD', limit: 100, period: 'monthly', scope: 'user' },
      },
      // And per agent, whichever user it acts for (scope agent, the default).
      {
        id: 'pol_charge_agent',
        effect: 'allow',
        actions: ['payments.charge'],
        resources: ['customer:*'],
        budget: { unit: 'USD', limit: 100, period: 'monthly' },
      },
    ]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
    as = await startStandInIssuer({
      clients: [
        { client_id: 'research-bot', client_secret: 'research-secret', user: 'alice' },
        { client_id: 'billing-bot', client_secret: 'billing-secret', user: 'bob' },
      ],
    });
    files = scratch(gatewayConfig(as.issuer));
    const tools = await startPrinting(process.execPath, [TOOLS_SERVER, '--http'], { RECORD_FILE: files.record }, (l) =>
      l.startsWith('{') ? (JSON.parse(l) as { url: string }).url : undefined,
    );
    upstream = tools.child;
    upstreamUrl = tools.value;
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const c of children) await stop(c);
    if (upstream) await stop(upstream);
    await as?.close();
    await rt?.close();
  });

  /** The gateway: `mcp-proxy --listen` with auth:, its URL (the one it printed) and its output. */
  async function gateway(args: string[] = [], config = files.config) {
    const started = await startPrinting(
      process.execPath,
      [
        BIN,
        'mcp-proxy',
        '--config',
        config,
        '--listen',
        '127.0.0.1:0',
        '--upstream-url',
        upstreamUrl,
        '--url',
        base,
        '--key',
        rt.testKey,
        ...args,
      ],
      {},
      (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1],
    );
    children.push(started.child);
    return { url: started.value, output: started.output, child: started.child };
  }
  const tokenFor = (aud: string, clientId: string, user: string) =>
    as.mint({ claims: { aud, client_id: clientId, sub: user, scope: 'mcp:tools' } });
  const decisionsOf = async (agentId: string) =>
    (await rt.getOk(`/v1/decisions?agent_id=${encodeURIComponent(agentId)}`)).data as Array<JsonObject>;

  describe('one gateway, on its own address', () => {
    let gw: Awaited<ReturnType<typeof gateway>>;
    beforeAll(async () => {
      gw = await gateway();
    });

    it('answers 401 with the metadata URL without a token (and invalid_token for a wrong audience or no agent claim), 403 insufficient_scope without the scope, and serves the metadata', async () => {
      expect(gw.output.join('\n')).toContain(`agents and users from the tokens of ${as.issuer}`);
      const r = await fetch(gw.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        }),
      });
      expect(r.status).toBe(401);
      const metadataUrl = `${new URL(gw.url).origin}/.well-known/oauth-protected-resource/mcp`;
      expect(r.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", scope="mcp:tools"`);
      expect(await (await fetch(metadataUrl)).json()).toEqual({
        resource: gw.url,
        authorization_servers: [as.issuer],
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
      });
      const wrongAudience = await fetch(gw.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${await tokenFor('http://127.0.0.1:1/mcp', 'research-bot', 'alice')}` },
        body: '{}',
      });
      expect(wrongAudience.status).toBe(401);
      expect(wrongAudience.headers.get('www-authenticate')).toContain('error="invalid_token"');
      const noAgent = await fetch(gw.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await as.mint({ claims: { aud: gw.url, sub: 'alice', scope: 'mcp:tools' } })}`,
        },
        body: '{}',
      });
      expect(noAgent.status).toBe(401);
      expect(noAgent.headers.get('www-authenticate')).toContain(
        'error_description="the token has no agent claim (client_id or azp)"',
      );
      const noScope = await fetch(gw.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await as.mint({ claims: { aud: gw.url, client_id: 'research-bot', sub: 'alice', scope: 'mcp:read' } })}`,
        },
        body: '{}',
      });
      expect(noScope.status).toBe(403);
      expect(noScope.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${metadataUrl}", error="insufficient_scope", scope="mcp:tools", error_description="the token lacks the scope mcp:tools"`,
      );
    });

    it('two agents acting for two users land on their own identities, sessions and per-user budgets', async () => {
      const aliceViaResearch = await clientWithToken(gw.url, await tokenFor(gw.url, 'research-bot', 'alice'));
      const aliceViaBilling = await clientWithToken(gw.url, await tokenFor(gw.url, 'billing-bot', 'alice'));
      const bobViaBilling = await clientWithToken(gw.url, await tokenFor(gw.url, 'billing-bot', 'bob'));
      clients.push(aliceViaResearch.client, aliceViaBilling.client, bobViaBilling.client);

      const first = await aliceViaResearch.client.callTool({
        name: 'charge',
        arguments: { customer_id: 'c1', amount: 60 },
      });
      expect(first.isError).toBeFalsy();
      // Alice's 100 USD are shared by every agent acting for her: 60 + 60 is past it.
      const second = await aliceViaBilling.client.callTool({
        name: 'charge',
        arguments: { customer_id: 'c1', amount: 60 },
      });
      expect(second.isError).toBe(true);
      expect(textOf(second)).toContain('budget.exceeded');
      // Bob's budget is his own.
      const third = await bobViaBilling.client.callTool({
        name: 'charge',
        arguments: { customer_id: 'c2', amount: 60 },
      });
      expect(third.isError).toBeFalsy();
      expect(
        recorded(files.record)
          .filter((c) => c.tool === 'charge')
          .map((c) => c.arguments.customer_id),
      ).toEqual(['c1', 'c2']);

      const research = await decisionsOf('research-bot');
      expect(research.map((d) => [d.action, d.effect, d.on_behalf_of, d.session_id])).toEqual([
        ['payments.charge', 'allow', 'alice', `mcp-${aliceViaResearch.transport.sessionId}`],
      ]);
      const billing = (await decisionsOf('billing-bot'))
        .map((d) => [d.effect, d.reason, d.on_behalf_of, d.session_id])
        .sort((a, b) => String(a[2]).localeCompare(String(b[2])));
      expect(billing).toEqual([
        ['deny', 'budget.exceeded', 'alice', `mcp-${aliceViaBilling.transport.sessionId}`],
        ['allow', 'policy.matched', 'bob', `mcp-${bobViaBilling.transport.sessionId}`],
      ]);
      const budgets = (user: string) =>
        rt
          .getOk(`/v1/budgets?on_behalf_of=${user}`)
          .then((b) =>
            (b.data as Array<JsonObject>).map((x) => [
              x.policy_id,
              x.scope,
              x.agent_id,
              Number(x.consumed) + Number(x.held),
            ]),
          );
      expect(await budgets('alice')).toEqual([['pol_charge_user', 'user', null, 60]]);
      expect(await budgets('bob')).toEqual([['pol_charge_user', 'user', null, 60]]);
    });

    it("an agent's budget stops that agent and not the other, acting for the same user", async () => {
      // research-bot has 60 of its 100 USD spent (alice's charge above), billing-bot 60 (bob's); carol has spent nothing.
      const carolViaResearch = await clientWithToken(gw.url, await tokenFor(gw.url, 'research-bot', 'carol'));
      const carolViaBilling = await clientWithToken(gw.url, await tokenFor(gw.url, 'billing-bot', 'carol'));
      clients.push(carolViaResearch.client, carolViaBilling.client);
      const refused = await carolViaResearch.client.callTool({
        name: 'charge',
        arguments: { customer_id: 'c3', amount: 50 },
      });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('budget.exceeded');
      const allowed = await carolViaBilling.client.callTool({
        name: 'charge',
        arguments: { customer_id: 'c3', amount: 30 },
      });
      expect(allowed.isError).toBeFalsy();
      expect(
        recorded(files.record)
          .filter((c) => c.tool === 'charge')
          .map((c) => [c.arguments.customer_id, c.arguments.amount]),
      ).toEqual([
        ['c1', 60],
        ['c2', 60],
        ['c3', 30],
      ]);
      const spent = async (query: string) =>
        ((await rt.getOk(`/v1/budgets?${query}`)).data as JsonObject[])
          .map((x) => [x.policy_id, x.scope, x.agent_id, x.on_behalf_of ?? null, Number(x.consumed) + Number(x.held)])
          .sort((a, b) => String(a).localeCompare(String(b)));
      expect(await spent('agent_id=research-bot')).toContainEqual([
        'pol_charge_agent',
        'agent',
        'research-bot',
        null,
        60,
      ]);
      expect(await spent('agent_id=billing-bot')).toContainEqual([
        'pol_charge_agent',
        'agent',
        'billing-bot',
        null,
        90,
      ]);
      expect(await spent('on_behalf_of=carol')).toEqual([['pol_charge_user', 'user', null, 'carol', 30]]);
    });

    it('a session stays bound to the identity that opened it: another token in it is refused 403', async () => {
      const alice = await clientWithToken(gw.url, await tokenFor(gw.url, 'research-bot', 'alice'));
      clients.push(alice.client);
      const sessionId = alice.transport.sessionId!;
      const send = async (token: string) =>
        fetch(gw.url, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'mcp-session-id': sessionId,
            'mcp-protocol-version': '2025-11-25',
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 7,
            method: 'tools/call',
            params: { name: 'write_file', arguments: { path: 'notes/hijack.txt', content: 'x' } },
          }),
        });
      for (const other of [
        await tokenFor(gw.url, 'research-bot', 'bob'),
        await tokenFor(gw.url, 'billing-bot', 'alice'),
      ]) {
        const r = await send(other);
        expect(r.status).toBe(403);
        expect(await r.json()).toMatchObject({ error: { message: expect.stringContaining('another identity') } });
      }
      expect(recorded(files.record).some((c) => c.arguments.path === 'notes/hijack.txt')).toBe(false);
      // The identity that opened it goes on, with a fresh token of its own.
      const own = await send(await tokenFor(gw.url, 'research-bot', 'alice'));
      expect(own.status).toBe(200);
      expect(await own.text()).toContain('wrote 1 bytes to notes/hijack.txt');
    });

    it("the SDK's own OAuth client (client credentials) finds the issuer, gets a token for the gateway and calls tools as its agent", async () => {
      const client = await clientWithOAuth(gw.url, as.issuer, 'billing-bot', 'billing-secret');
      clients.push(client);
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('write_file');
      expect(
        textOf(await client.callTool({ name: 'write_file', arguments: { path: 'notes/oauth.txt', content: 'sdk' } })),
      ).toBe('wrote 3 bytes to notes/oauth.txt');
      const write = (await decisionsOf('billing-bot')).find((d) => d.action === 'files.write');
      expect(write).toMatchObject({
        effect: 'allow',
        agent_id: 'billing-bot',
        on_behalf_of: 'bob',
        resource: 'file:notes/oauth.txt',
      });
    });
  });

  it('behind a reverse proxy: --public-url (another host, port and path) is the audience, the metadata and the challenge; a token for the inner address is refused', async () => {
    const inner = await freePort();
    // The front publishes the gateway's /mcp as /tools/mcp on another host name and port, and rewrites Host.
    const front: ReverseProxy = await startReverseProxy(inner, '/tools');
    try {
      const publicUrl = `${front.origin}/tools/mcp`;
      const started = await startPrinting(
        process.execPath,
        [
          BIN,
          'mcp-proxy',
          '--config',
          files.config,
          '--listen',
          `127.0.0.1:${inner}`,
          '--public-url',
          publicUrl,
          '--upstream-url',
          upstreamUrl,
          '--url',
          base,
          '--key',
          rt.testKey,
        ],
        {},
        (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1],
      );
      children.push(started.child);
      const metadataUrl = `${front.origin}/.well-known/oauth-protected-resource/tools/mcp`;
      expect(started.output.join('\n')).toContain(
        `tokens from ${as.issuer} for ${publicUrl}; metadata at ${metadataUrl}`,
      );
      const r = await fetch(publicUrl, { method: 'POST', body: '{}' });
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", scope="mcp:tools"`);
      const metadata = {
        resource: publicUrl,
        authorization_servers: [as.issuer],
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
      };
      expect(await (await fetch(metadataUrl)).json()).toEqual(metadata);
      expect(await (await fetch(`${front.origin}/.well-known/oauth-protected-resource`)).json()).toEqual(metadata);
      const forInner = await fetch(publicUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${await tokenFor(started.value, 'research-bot', 'alice')}` },
        body: '{}',
      });
      expect(forInner.status).toBe(401);
      expect(forInner.headers.get('www-authenticate')).toContain(`its audience must include ${publicUrl}`);

      // The SDK's OAuth client knows only the public URL: it finds the metadata through the front, gets a token for it and calls.
      const client = await clientWithOAuth(publicUrl, as.issuer, 'research-bot', 'research-secret');
      clients.push(client);
      expect(
        textOf(
          await client.callTool({
            name: 'write_file',
            arguments: { path: 'notes/front.txt', content: 'via the front' },
          }),
        ),
      ).toBe('wrote 13 bytes to notes/front.txt');
      expect((await decisionsOf('research-bot')).find((d) => d.resource === 'file:notes/front.txt')).toMatchObject({
        effect: 'allow',
        on_behalf_of: 'alice',
      });
      expect(front.forwarded).toContain('/.well-known/oauth-protected-resource/tools/mcp');
      expect(front.forwarded.filter((p) => p === '/mcp').length).toBeGreaterThan(1);
    } finally {
      await front.close();
    }
  });
});

describe('start-up rules of --listen and auth:', () => {
  const ENV = { AUTHZ_URL: 'http://127.0.0.1:9', AUTHZ_API_KEY: 'svc_test_sk_unused00000000000000000000000000' };
  const upstreamCommand = ['--', process.execPath, TOOLS_SERVER];
  beforeAll(() => ensureProxyBuilt());

  it('a non-loopback --listen without auth: is refused at start (exit 2), before anything listens', async () => {
    const { config } = scratch('agent_id: bot\nserver: tools\n');
    for (const address of ['0.0.0.0:0', '[::]:0']) {
      const r = await runProxyToExit(['--config', config, '--listen', address, ...upstreamCommand], ENV);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('without auth: in the configuration the proxy serves loopback addresses only');
      expect(r.stderr).not.toContain('listening on');
    }
  });

  it('auth: without --listen is refused at start (exit 2); without auth: agent_id stays required', async () => {
    const { config } = scratch('server: tools\nauth:\n  issuer: http://127.0.0.1:9\n');
    const r = await runProxyToExit(['--config', config, ...upstreamCommand], ENV);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'auth: in the configuration checks the tokens of HTTP requests: it needs --listen HOST:PORT',
    );
    const noAgent = scratch('server: tools\n');
    const r2 = await runProxyToExit(['--config', noAgent.config, ...upstreamCommand], ENV);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toContain('agent_id: required');
    const badAuth = scratch('server: tools\nauth:\n  issuer: nope\n  scopes: mcp:tools\n');
    const r3 = await runProxyToExit(['--config', badAuth.config, '--listen', '127.0.0.1:0', ...upstreamCommand], ENV);
    expect(r3.code).toBe(1);
    expect(r3.stderr).toContain('auth.issuer: required');
    expect(r3.stderr).toContain('auth.scopes: a list of scope names');
  });
});
