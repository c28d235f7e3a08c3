/**
 * What the proxy's token discovery trusts (issue 44, item 4), no mocks: the
 * upstream, the authorization servers (the configured one and an attacker's)
 * and the attacker's metadata host are real HTTP servers on 127.0.0.1
 * (helpers/protected-upstream.ts), reached by the SDK's own client through
 * the proxy's authorizing fetch. Every request the proxy makes goes through a
 * recording fetch that refuses, without any network, a URL that is not on
 * loopback: the "not https" refusal must come before it.
 *
 * The red-team reproduction: an upstream answering 401 with
 * `resource_metadata` on another origin, whose metadata names another
 * `resource` and its own authorization server, got the client secret POSTed
 * there (HTTP Basic, plain http).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { parseProxyConfig } from '../../clients/mcp-proxy/config.js';
import {
  authorizedFetch,
  ClientCredentials,
  credentialsMayGoTo,
  type UpstreamAuthConfig,
} from '../../clients/mcp-proxy/upstream-auth/index.js';
import { textOf } from './helpers/proxy.js';
import { JsonHost, ProtectedUpstream, StandInAuthServer } from './helpers/protected-upstream.js';

const CLIENT = { clientId: 'authz-gateway', secret: 'the-gateway-secret' };

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close().catch(() => undefined);
});

async function open<T extends { start(): Promise<T>; close(): Promise<void> }>(server: T): Promise<T> {
  await server.start();
  opened.push(server);
  return server;
}

/** A fetch that records every URL and refuses, before any connection, one that is not on 127.0.0.1. */
function recordingFetch(): { fetch: FetchLike; urls: string[] } {
  const urls: string[] = [];
  const fetchFn: FetchLike = (url, init) => {
    const href = String(url);
    urls.push(href);
    if (new URL(href).hostname !== '127.0.0.1')
      return Promise.reject(new Error(`the test's fetch refuses ${href}: no network in tests`));
    return fetch(url, init);
  };
  return { fetch: fetchFn, urls };
}

/** The SDK's client to the upstream through the proxy's authorizing fetch; config.issuers are the allowed authorization servers. */
async function connect(upstream: ProtectedUpstream, config: Partial<UpstreamAuthConfig>) {
  const { fetch: recorded, urls } = recordingFetch();
  const tokens = new ClientCredentials({
    config: { client_id: CLIENT.clientId, client_secret_env: 'UNUSED', ...config },
    secret: CLIENT.secret,
    upstream: new URL(upstream.url),
    fetch: recorded,
  });
  const client = new Client({ name: 'trust-test', version: '1.0.0' });
  opened.push(client);
  const connected = client.connect(
    new StreamableHTTPClientTransport(new URL(upstream.url), { fetch: authorizedFetch(tokens, recorded) }),
  );
  return { connected, client, urls, tokens };
}

/** The attacker: metadata on its own origin naming `resource` and its own authorization server, which records what it is sent. */
async function attacker(resource?: (attackerUrl: string) => string) {
  const auth = await open(new StandInAuthServer({ clientId: CLIENT.clientId, secret: 'not-known-to-the-attacker' }));
  auth.refuse = true;
  const host = await open(
    new JsonHost((url) => ({
      '/prm': {
        resource: resource ? resource(url) : `${url}/mcp`,
        authorization_servers: [auth.issuer],
        bearer_methods_supported: ['header'],
      },
    })),
  );
  return { auth, host, metadata: `${host.url}/prm` };
}

describe('upstream token discovery trusts only what the configuration allows', () => {
  it('red team: metadata on another origin naming another resource is refused, and the other server is never sent the secret', async () => {
    const legit = await open(new StandInAuthServer(CLIENT));
    const evil = await attacker();
    const upstream = await open(new ProtectedUpstream({ auth: legit, resourceMetadata: evil.metadata }));
    const { connected, urls } = await connect(upstream, { issuers: [legit.issuer] });
    await expect(connected).rejects.toThrow(
      `the protected resource metadata at ${evil.metadata} names the resource ${evil.host.url}/mcp, not the upstream's ${upstream.url} (RFC 9728 section 3.3): refused`,
    );
    expect(evil.auth.requests).toEqual([]);
    expect(evil.auth.secrets).toEqual([]);
    expect(legit.requests).toEqual([]);
    // its metadata was read, nothing else of it
    expect(urls.filter((u) => !u.startsWith(upstream.url))).toEqual([evil.metadata]);
    expect(upstream.requests.every((r) => !r.admitted)).toBe(true);
  });

  it("refuses metadata that copies the upstream's resource but names an authorization server the configuration does not allow", async () => {
    const legit = await open(new StandInAuthServer(CLIENT));
    const evil = await attacker(() => '');
    const copying = await open(
      new JsonHost((): Record<string, unknown> => ({
        '/prm': { resource: upstream.url, authorization_servers: [evil.auth.issuer] },
      })),
    );
    const upstream = await open(new ProtectedUpstream({ auth: legit, resourceMetadata: `${copying.url}/prm` }));
    const { connected, urls } = await connect(upstream, { issuers: [legit.issuer] });
    await expect(connected).rejects.toThrow(
      `the upstream's authorization servers (${evil.auth.issuer}) are not among those upstream_auth.issuer allows (${legit.issuer}): refused, nothing sent`,
    );
    expect(evil.auth.requests).toEqual([]);
    expect(urls.some((u) => u.startsWith(evil.auth.url))).toBe(false);
  });

  it('takes the allowed authorization server from a list that names others first; discovery never widens the configured set', async () => {
    const legit = await open(new StandInAuthServer(CLIENT));
    const evil = await attacker();
    const upstream = await open(
      new ProtectedUpstream({ auth: legit, authorizationServers: [evil.auth.issuer, `${legit.issuer}/`] }),
    );
    const { connected, client } = await connect(upstream, { issuers: [legit.issuer] });
    await connected;
    expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'ok' } }))).toBe('ok');
    expect(legit.requests).toHaveLength(1);
    expect(evil.auth.requests).toEqual([]);
    expect(evil.host.asked).toEqual([]);
  });

  it("refuses the upstream's own metadata when it names no resource or another one", async () => {
    const legit = await open(new StandInAuthServer(CLIENT));
    const other = await open(new ProtectedUpstream({ auth: legit, resource: 'http://127.0.0.1:1/elsewhere' }));
    const { connected } = await connect(other, { issuers: [legit.issuer] });
    await expect(connected).rejects.toThrow(
      /names the resource http:\/\/127\.0\.0\.1:1\/elsewhere, not the upstream's http:\/\/127\.0\.0\.1:\d+\/mcp/,
    );
    const none = await open(new ProtectedUpstream({ auth: legit, resource: '' }));
    await expect((await connect(none, { issuers: [legit.issuer] })).connected).rejects.toThrow(
      /names no resource \(RFC 9728 section 3\.3\): refused/,
    );
    expect(legit.requests).toEqual([]);
  });

  it('accepts metadata for the configured resource identifier when the upstream is one endpoint of a larger resource', async () => {
    const legit = await open(new StandInAuthServer(CLIENT));
    const wide = await open(
      new JsonHost((): Record<string, unknown> => ({
        '/prm': { resource: `${new URL(served.url).origin}/`, authorization_servers: [legit.issuer] },
      })),
    );
    const served = await open(new ProtectedUpstream({ auth: legit, resourceMetadata: `${wide.url}/prm` }));
    const resource = `${new URL(served.url).origin}/`;
    // without upstream_auth.resource the upstream's URL is its resource identifier, which the metadata does not name
    await expect((await connect(served, { issuers: [legit.issuer] })).connected).rejects.toThrow(
      /names the resource http:\/\/127\.0\.0\.1:\d+\/, not the upstream's/,
    );
    await (
      await connect(served, { issuers: [legit.issuer], resource })
    ).connected;
    expect(legit.requests.map((r) => r.form.resource)).toEqual([resource]);
  });

  it('never sends the secret to a token endpoint over plain http that is not loopback: refused before any connection', async () => {
    const legit = await open(new StandInAuthServer({ ...CLIENT, tokenEndpoint: 'http://tokens.example.test/token' }));
    const upstream = await open(new ProtectedUpstream({ auth: legit }));
    const { connected, urls } = await connect(upstream, { issuers: [legit.issuer] });
    await expect(connected).rejects.toThrow(
      `the token endpoint http://tokens.example.test/token is neither https nor a loopback address: the client's credentials are not sent there`,
    );
    expect(urls.some((u) => u.includes('example.test'))).toBe(false);
    expect(legit.requests).toEqual([]);
  });

  it('refuses an authorization server whose metadata names no issuer or another one', async () => {
    const issuerless = await open(
      new JsonHost((url) => ({ '/.well-known/oauth-authorization-server': { token_endpoint: `${url}/token` } })),
    );
    const upstream = await open(
      new ProtectedUpstream({ auth: new StandInAuthServer(CLIENT), authorizationServers: [issuerless.url] }),
    );
    await expect((await connect(upstream, { issuers: [issuerless.url] })).connected).rejects.toThrow(
      `the metadata at ${issuerless.url}/.well-known/oauth-authorization-server names no issuer (RFC 8414 section 3.3): refused`,
    );
    const lying = await open(
      new JsonHost(() => ({
        '/.well-known/oauth-authorization-server': {
          issuer: 'https://login.example.com',
          token_endpoint: 'https://login.example.com/token',
        },
      })),
    );
    const second = await open(
      new ProtectedUpstream({ auth: new StandInAuthServer(CLIENT), authorizationServers: [lying.url] }),
    );
    await expect((await connect(second, { issuers: [lying.url] })).connected).rejects.toThrow(
      /names the issuer https:\/\/login\.example\.com, not http:\/\/127\.0\.0\.1:\d+/,
    );
    expect(issuerless.asked.filter((p) => p === '/token')).toEqual([]);
  });

  it('checks the trust rules of upstream_auth: at start: an allowed authorization server or a token endpoint, each over https or on loopback', () => {
    const base = { agent_id: 'a', server: 's' };
    const parse = (upstreamAuth: Record<string, unknown>) =>
      parseProxyConfig({ ...base, upstream_auth: { client_id: 'gw', client_secret_env: 'S', ...upstreamAuth } })
        .upstream_auth;
    expect(parse({ issuer: 'https://login.example.com' })).toEqual({
      client_id: 'gw',
      client_secret_env: 'S',
      issuers: ['https://login.example.com'],
    });
    expect(parse({ issuer: ['https://a.example.com', 'http://127.0.0.1:9000'] })?.issuers).toEqual([
      'https://a.example.com',
      'http://127.0.0.1:9000',
    ]);
    expect(parse({ token_url: 'http://localhost:9000/token' })?.token_url).toBe('http://localhost:9000/token');
    expect(() => parse({})).toThrow(
      'upstream_auth: name the authorization server the upstream may send the proxy to (issuer: a URL or a list of them) or its token endpoint (token_url); discovery never trusts another',
    );
    expect(() => parse({ issuer: 'http://login.example.com' })).toThrow(
      'upstream_auth.issuer: http://login.example.com is neither https nor a loopback address (the client credentials go only over https or to loopback)',
    );
    expect(() => parse({ token_url: 'http://login.example.com/token' })).toThrow(
      /upstream_auth\.token_url: http:\/\/login\.example\.com\/token is neither https nor a loopback address/,
    );
    expect(() => parse({ issuer: [] })).toThrow(/upstream_auth\.issuer: an http\(s\) URL or a non-empty list of them/);
    expect(() => parse({ issuer: 'https://login.example.com', resource: 'not a url' })).toThrow(
      /upstream_auth\.resource: an http\(s\) URL/,
    );
    expect(
      [
        'https://login.example.com/token',
        'http://127.0.0.1:9000/token',
        'http://127.9.0.1/token',
        'http://localhost:1/t',
        'http://[::1]:8/t',
        'http://login.example.com/token',
        'http://127.0.0.1.example.com/token',
        'ftp://127.0.0.1/token',
      ].map((u) => credentialsMayGoTo(new URL(u))),
    ).toEqual([true, true, true, true, true, false, false, false]);
  });
});
