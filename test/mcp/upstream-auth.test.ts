/**
 * `upstream_auth:`, an upstream over Streamable HTTP that wants a token, no
 * mocks: a stand-in authorization server and a protected MCP server (the
 * SDK's McpServer) on 127.0.0.1 (helpers/protected-upstream.ts), reached by
 * the SDK's own client through the proxy's authorizing fetch (on a stepped
 * clock), then end to end through the real `node bin/authz.js mcp-proxy
 * --listen` with a real service as a gateway (`auth:`), the agent sending a
 * real token of its own authorization server (examples/oauth-issuer), which
 * the upstream's record of headers must never show.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  authorizedFetch,
  ClientCredentials,
  resourceMetadataOf,
  type UpstreamAuthConfig,
} from '../../clients/mcp-proxy/upstream-auth/index.js';
import { parseProxyConfig } from '../../clients/mcp-proxy/config.js';
import { startStandInIssuer, type StandInIssuer } from '../../examples/oauth-issuer/server.js';
import { ROOT } from '../helpers/server-process.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { BIN, ensureProxyBuilt, runProxyToExit, scratch, startPrinting, stop, textOf } from './helpers/proxy.js';
import { JsonHost, ProtectedUpstream, StandInAuthServer } from './helpers/protected-upstream.js';

const CLIENT = { clientId: 'authz-gateway', secret: 's3cret with spaces:&' };

/** The servers of one test, closed after it. */
const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close().catch(() => undefined);
});

async function servers(
  options: { authMethods?: string[]; openidOnly?: boolean; advertise?: boolean; issuerPath?: string } = {},
) {
  const auth = await new StandInAuthServer({ ...CLIENT, ...options }).start();
  const upstream = await new ProtectedUpstream({
    auth,
    ...(options.advertise === undefined ? {} : { advertise: options.advertise }),
  }).start();
  opened.push(auth, upstream);
  return { auth, upstream };
}

/** An SDK client to the upstream through the proxy's authorizing fetch, on a clock the test moves; the upstream's authorization server allowed. */
async function clientThrough(
  upstream: ProtectedUpstream,
  config: Partial<UpstreamAuthConfig> = {},
  secret = CLIENT.secret,
) {
  const clock = { now: 1_800_000_000_000 };
  const tokens = new ClientCredentials({
    config: {
      client_id: CLIENT.clientId,
      client_secret_env: 'UNUSED',
      issuers: [upstream.options.auth.issuer],
      ...config,
    },
    secret,
    upstream: new URL(upstream.url),
    now: () => clock.now,
  });
  const client = new Client({ name: 'upstream-auth-test', version: '1.0.0' });
  opened.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(upstream.url), { fetch: authorizedFetch(tokens) }));
  return {
    client,
    tokens,
    clock,
    echo: async (text: string) => textOf(await client.callTool({ name: 'echo', arguments: { text } })),
  };
}

describe("the proxy's token for a protected upstream", () => {
  it('discovers the token endpoint from the 401, authenticates with client_secret_basic, asks for the upstream as resource, and caches the token', async () => {
    const { auth, upstream } = await servers();
    const { echo, tokens } = await clientThrough(upstream, { scope: 'mcp:tools' });
    expect(await echo('one')).toBe('one');
    expect(await echo('two')).toBe('two');
    expect(await echo('three')).toBe('three');
    expect(auth.requests).toEqual([
      {
        via: 'basic',
        clientId: CLIENT.clientId,
        form: { grant_type: 'client_credentials', resource: upstream.url, scope: 'mcp:tools' },
      },
    ]);
    expect(tokens.issued).toBe(1);
    // one 401 (the first request), then every request carried the token
    expect(upstream.requests.filter((r) => !r.admitted)).toHaveLength(1);
    expect(upstream.requests.filter((r) => r.admitted).every((r) => r.headers.authorization === 'Bearer tok-1')).toBe(
      true,
    );
    expect(upstream.calls()).toHaveLength(3);
  });

  it('renews the token expires_in - 30 s after it was issued, before the upstream refuses it', async () => {
    const { auth, upstream } = await servers();
    const { echo, clock } = await clientThrough(upstream);
    await echo('a');
    clock.now += (3600 - 30) * 1000 - 1;
    await echo('b');
    expect(auth.requests).toHaveLength(1);
    clock.now += 1;
    await echo('c');
    expect(auth.requests).toHaveLength(2);
    expect(upstream.calls().map((r) => r.headers.authorization)).toEqual([
      'Bearer tok-1',
      'Bearer tok-1',
      'Bearer tok-2',
    ]);
    expect(upstream.requests.filter((r) => !r.admitted)).toHaveLength(1);
  });

  it('obtains a new token and retries once when the upstream refuses the cached one', async () => {
    const { auth, upstream } = await servers();
    const { echo } = await clientThrough(upstream);
    await echo('a');
    auth.revokeAll();
    expect(await echo('b')).toBe('b');
    expect(auth.requests).toHaveLength(2);
    expect(upstream.calls().map((r) => r.headers.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-2']);
  });

  it('fails the request, forwarding nothing, when no token can be obtained', async () => {
    const { auth, upstream } = await servers();
    const { client } = await clientThrough(upstream);
    auth.revokeAll();
    auth.refuse = true;
    await expect(client.callTool({ name: 'echo', arguments: { text: 'x' } })).rejects.toThrow(
      /refused the client credentials \(invalid_client: unknown client or wrong secret\)/,
    );
    expect(upstream.calls()).toHaveLength(0);
    // a wrong secret never gets through either
    const other = await servers();
    await expect(clientThrough(other.upstream, {}, 'wrong')).rejects.toThrow(/invalid_client/);
    expect(other.upstream.requests.every((r) => !r.admitted)).toBe(true);
  });

  it('uses client_secret_post when the metadata lists only that, and OpenID discovery when there is no RFC 8414 metadata', async () => {
    const { auth, upstream } = await servers({ authMethods: ['client_secret_post'], openidOnly: true });
    const { echo } = await clientThrough(upstream);
    expect(await echo('p')).toBe('p');
    expect(auth.requests).toEqual([
      { via: 'post', clientId: CLIENT.clientId, form: { grant_type: 'client_credentials', resource: upstream.url } },
    ]);
    // both listed: Basic
    const both = await servers({ authMethods: ['client_secret_post', 'client_secret_basic'] });
    await (await clientThrough(both.upstream)).echo('b');
    expect(both.auth.requests.map((r) => r.via)).toEqual(['basic']);
  });

  it('finds the metadata of an authorization server whose issuer has a path at the path-inserted well-known URLs', async () => {
    const { auth, upstream } = await servers({ issuerPath: '/tenant-a' });
    expect(await (await clientThrough(upstream)).echo('t')).toBe('t');
    const openid = await servers({ issuerPath: '/tenant-b', openidOnly: true });
    expect(await (await clientThrough(openid.upstream)).echo('o')).toBe('o');
    expect([auth.requests.length, openid.auth.requests.length]).toEqual([1, 1]);
  });

  it("finds the metadata at the upstream's well-known path when the 401 does not name it, and uses token_url as configured", async () => {
    const { auth, upstream } = await servers({ advertise: false });
    expect(await (await clientThrough(upstream)).echo('w')).toBe('w');
    expect(auth.requests).toHaveLength(1);
    const configured = await servers({ advertise: false });
    // no metadata is needed with token_url: the upstream's metadata path is never asked
    expect(
      await (await clientThrough(configured.upstream, { token_url: `${configured.auth.url}/token` })).echo('t'),
    ).toBe('t');
    expect(configured.auth.requests).toHaveLength(1);
  });

  it("docs/mcp.md's configurations of a protected upstream are valid as written", () => {
    const page = readFileSync(join(ROOT, 'docs', 'mcp.md'), 'utf8');
    const section = page.slice(page.indexOf('\n### A protected upstream'), page.indexOf('\n### Checking the permit'));
    const yamls = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map(
      (m) => parseYaml(m[1]!) as Record<string, unknown>,
    );
    expect(yamls.map((y) => parseProxyConfig(y).upstream_auth)).toEqual([
      {
        client_id: 'authz-gateway',
        client_secret_env: 'UPSTREAM_CLIENT_SECRET',
        issuers: ['https://login.example.com'],
        scope: 'mcp:tools',
      },
      {
        client_id: 'authz-gateway',
        private_key_file: '/etc/authz/upstream-client.pem',
        key_id: 'authz-gateway-2026-01',
        issuers: ['https://login.example.com'],
      },
    ]);
  });

  it('reads resource_metadata from WWW-Authenticate, and checks upstream_auth: in the configuration', () => {
    expect(
      resourceMetadataOf(
        'Bearer realm="x", resource_metadata="http://a.example/.well-known/oauth-protected-resource/mcp", error="invalid_token"',
      ),
    ).toBe('http://a.example/.well-known/oauth-protected-resource/mcp');
    expect(resourceMetadataOf('Bearer resource_metadata=http://a.example/m')).toBe('http://a.example/m');
    expect(resourceMetadataOf('Bearer error="invalid_token"')).toBeUndefined();
    expect(resourceMetadataOf(null)).toBeUndefined();
    const base = { agent_id: 'a', server: 's' };
    expect(
      parseProxyConfig({
        ...base,
        upstream_auth: {
          client_id: 'gw',
          client_secret_env: 'GW_SECRET',
          token_url: 'https://login.example.com/token',
          scope: 'mcp',
        },
      }).upstream_auth,
    ).toEqual({
      client_id: 'gw',
      client_secret_env: 'GW_SECRET',
      token_url: 'https://login.example.com/token',
      scope: 'mcp',
    });
    expect(() =>
      parseProxyConfig({
        ...base,
        upstream_auth: { client_id: 'gw', client_secret: 'inline', client_secret_env: 'no good', token_url: 'ftp://x' },
      }),
    ).toThrow(
      /upstream_auth: unknown field "client_secret"[\s\S]*client_secret_env: the name of the environment variable[\s\S]*token_url: an http\(s\) URL/,
    );
  });
});

describe('authz mcp-proxy in front of a protected upstream', () => {
  let rt: TestRuntime;
  let base: string;
  let issuer: StandInIssuer;
  const AGENT = `gateway-${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    ensureProxyBuilt();
    rt = await startRuntime('embedded');
    await rt.setPolicies([{ id: 'pol_echo', effect: 'allow', agents: [AGENT], actions: ['secure.echo'] }]);
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
    // The agents' authorization server (the gateway's auth:), not the upstream's.
    issuer = await startStandInIssuer({ clients: [] });
  });
  afterAll(async () => {
    await issuer?.close();
    await rt?.close();
  });

  const config = `agent_id: ${AGENT}
server: secure
upstream_auth:
  client_id: ${CLIENT.clientId}
  client_secret_env: UPSTREAM_SECRET
  issuer: http://127.0.0.1:9
`;

  it("gets a token with client credentials, keeps it, never passes the agent's own token upstream, and answers -32603 when no token can be had", async () => {
    const { auth, upstream } = await servers();
    // A gateway: the agent comes with a real token of its own authorization server (auth:), checked by the proxy.
    const files = scratch(`server: secure
auth:
  issuer: ${issuer.issuer}
  scopes: [mcp:tools]
upstream_auth:
  client_id: ${CLIENT.clientId}
  client_secret_env: UPSTREAM_SECRET
  issuer: ${auth.issuer}
`);
    const proxy = await startPrinting(
      process.execPath,
      [BIN, 'mcp-proxy', '--config', files.config, '--listen', '127.0.0.1:0', '--upstream-url', upstream.url],
      { AUTHZ_URL: base, AUTHZ_API_KEY: rt.testKey, UPSTREAM_SECRET: CLIENT.secret },
      (line) => /listening on (http:\/\/\S+)/.exec(line)?.[1],
    );
    opened.push({ close: () => stop(proxy.child) });
    const agentToken = await issuer.mint({
      claims: { aud: proxy.value, client_id: AGENT, sub: 'alice', scope: 'mcp:tools' },
    });
    const client = new Client({ name: 'agent', version: '1.0.0' });
    opened.push(client);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(proxy.value), {
        requestInit: { headers: { authorization: `Bearer ${agentToken}` } },
      }),
    );

    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo']);
    for (const text of ['a', 'b', 'c'])
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text } }))).toBe(text);
    // one token for the proxy's start-up probe and every session after it
    expect(auth.requests).toEqual([
      { via: 'basic', clientId: CLIENT.clientId, form: { grant_type: 'client_credentials', resource: upstream.url } },
    ]);
    expect(upstream.calls()).toHaveLength(3);
    expect(upstream.calls().every((r) => r.headers.authorization === 'Bearer tok-1')).toBe(true);
    // the agent's token is nowhere in what the upstream received: every Authorization it saw is the proxy's own
    const agentSecretPart = agentToken.split('.')[2]!;
    const seen = () => JSON.stringify(upstream.requests);
    expect(seen()).not.toContain(agentSecretPart);
    expect(
      upstream.requests.every(
        (r) => r.headers.authorization === undefined || /^Bearer tok-\d+$/.test(String(r.headers.authorization)),
      ),
    ).toBe(true);
    // and the calls were decided as the token's agent, for its user
    const decisions = async () =>
      (await rt.getOk(`/v1/decisions?agent_id=${AGENT}`)).data as Array<Record<string, unknown>>;
    expect((await decisions()).map((d) => [d.action, d.effect, d.on_behalf_of])).toEqual(
      Array(3).fill(['secure.echo', 'allow', 'alice']),
    );

    // the token dies and no new one can be had: -32603, nothing forwarded
    auth.revokeAll();
    auth.refuse = true;
    const decisionsBefore = (await decisions()).length;
    const error = await client.callTool({ name: 'echo', arguments: { text: 'd' } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: -32603 });
    expect(String((error as Error).message)).toContain('refused the client credentials');
    expect(upstream.calls()).toHaveLength(3);
    // the call was decided and its decision rejected (the upstream never had it)
    const last = await vi.waitFor(
      async () => {
        const all = await decisions();
        expect(all).toHaveLength(decisionsBefore + 1);
        expect(all[0]!.status).not.toBe('pending');
        return all[0]!;
      },
      { timeout: 10_000, interval: 25 },
    );
    expect(last).toMatchObject({ action: 'secure.echo', effect: 'allow', status: 'rejected', on_behalf_of: 'alice' });
    expect(seen()).not.toContain(agentSecretPart);
  });

  it('refuses to start with upstream_auth: for a stdio upstream or without the secret', async () => {
    const files = scratch(config);
    const stdio = await runProxyToExit(['--config', files.config, '--', process.execPath, '-e', ''], {
      AUTHZ_URL: base,
      AUTHZ_API_KEY: rt.testKey,
      UPSTREAM_SECRET: 'x',
    });
    expect(stdio.code).toBe(1);
    expect(stdio.stderr).toContain('upstream_auth: goes with --upstream-url');
    const unset = await runProxyToExit(['--config', files.config, '--upstream-url', 'http://127.0.0.1:9/mcp'], {
      AUTHZ_URL: base,
      AUTHZ_API_KEY: rt.testKey,
    });
    expect(unset.code).toBe(1);
    expect(unset.stderr).toContain('the variable UPSTREAM_SECRET is not set');
    const untrusting = scratch(config.replace(/ {2}issuer: .*\n/, ''));
    const noIssuer = await runProxyToExit(['--config', untrusting.config, '--upstream-url', 'http://127.0.0.1:9/mcp'], {
      AUTHZ_URL: base,
      AUTHZ_API_KEY: rt.testKey,
      UPSTREAM_SECRET: 'x',
    });
    expect(noIssuer.code).toBe(1);
    expect(noIssuer.stderr).toContain(
      'upstream_auth: name the authorization server the upstream may send the proxy to (issuer: a URL or a list of them)',
    );
  });

  it("stops at start, naming the mismatch, when the upstream's 401 leads to metadata for another resource; the secret goes nowhere", async () => {
    const { auth, upstream: honest } = await servers();
    const evilAuth = await new StandInAuthServer({ ...CLIENT, secret: 'unknown' }).start();
    const evil = await new JsonHost((url) => ({
      '/prm': { resource: `${url}/mcp`, authorization_servers: [evilAuth.issuer] },
    })).start();
    const upstream = await new ProtectedUpstream({ auth, resourceMetadata: `${evil.url}/prm` }).start();
    opened.push(evilAuth, evil, upstream);
    const files = scratch(config.replace('http://127.0.0.1:9', auth.issuer));
    const run = await runProxyToExit(['--config', files.config, '--upstream-url', upstream.url], {
      AUTHZ_URL: base,
      AUTHZ_API_KEY: rt.testKey,
      UPSTREAM_SECRET: CLIENT.secret,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `cannot connect to the upstream MCP server: the protected resource metadata at ${evil.url}/prm names the resource ${evil.url}/mcp, not the upstream's ${upstream.url} (RFC 9728 section 3.3): refused`,
    );
    expect([evilAuth.requests, evilAuth.secrets, auth.requests]).toEqual([[], [], []]);
    expect(honest.requests).toEqual([]);
  });
});
