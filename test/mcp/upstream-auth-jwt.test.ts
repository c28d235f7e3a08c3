/**
 * `upstream_auth:` with `private_key_jwt` (issue 44, item 8; RFC 7523 section
 * 2.2): the proxy authenticates at the token endpoint with a JWT it signs
 * with jose, with a P-256 (ES256) or RSA (RS256) key read from a PEM file.
 * No mocks: keys made with node:crypto and written to files, the stand-in
 * authorization server (helpers/protected-upstream.ts) verifying each
 * assertion with jose against the client's public key, the SDK's McpServer
 * behind it, the SDK's client through the proxy's authorizing fetch.
 * test/mcp/conformance-client.test.ts runs the official conformance scenario
 * `auth/client-credentials-jwt` with the real `authz mcp-proxy`.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parseProxyConfig, ProxyConfigError } from '../../clients/mcp-proxy/config.js';
import {
  ASSERTION_LIFETIME_SECONDS,
  authorizedFetch,
  ClientCredentials,
  JWT_BEARER_ASSERTION,
  loadSigningKey,
  upstreamAuthFetch,
  type UpstreamAuthConfig,
} from '../../clients/mcp-proxy/upstream-auth/index.js';
import { textOf } from './helpers/proxy.js';
import { ProtectedUpstream, StandInAuthServer, type AuthServerOptions } from './helpers/protected-upstream.js';

const CLIENT_ID = 'authz-gateway';
const dir = mkdtempSync(join(tmpdir(), 'upstream-auth-jwt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close().catch(() => undefined);
});

/** A key pair; the private key written as PEM (`format`) to a file. */
function keyFile(
  name: string,
  pair: { privateKey: KeyObject; publicKey: KeyObject },
  format: 'pkcs8' | 'sec1' | 'pkcs1' = 'pkcs8',
) {
  const file = join(dir, `${name}.pem`);
  writeFileSync(file, pair.privateKey.export({ format: 'pem', type: format }) as string, { mode: 0o600 });
  return { file, publicKey: pair.publicKey };
}
const ec = (curve = 'P-256') => generateKeyPairSync('ec', { namedCurve: curve });
const rsa = (bits = 2048) => generateKeyPairSync('rsa', { modulusLength: bits });

async function servers(publicKey: KeyObject, options: Partial<AuthServerOptions> = {}) {
  const auth = await new StandInAuthServer({
    clientId: CLIENT_ID,
    secret: 'no secret here',
    publicKey,
    ...options,
  }).start();
  opened.push(auth);
  const upstream = await new ProtectedUpstream({ auth }).start();
  opened.push(upstream);
  return { auth, upstream };
}

/** The SDK's client to the upstream through the proxy's authorizing fetch, authenticating with the key in `file`. */
async function clientWithKey(upstream: ProtectedUpstream, file: string, config: Partial<UpstreamAuthConfig> = {}) {
  const tokens = new ClientCredentials({
    config: {
      client_id: CLIENT_ID,
      private_key_file: file,
      key_id: 'gw-key-1',
      issuers: [upstream.options.auth.issuer],
      ...config,
    },
    signingKey: loadSigningKey(file, 'gw-key-1'),
    upstream: new URL(upstream.url),
  });
  const client = new Client({ name: 'jwt-test', version: '1.0.0' });
  opened.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(upstream.url), { fetch: authorizedFetch(tokens) }));
  return { client, echo: async (text: string) => textOf(await client.callTool({ name: 'echo', arguments: { text } })) };
}

describe('private_key_jwt for the upstream token', () => {
  it('signs an ES256 assertion per token request: kid, iss = sub = client_id, aud = the issuer, a fresh jti, exp 60 s after iat; no secret sent', async () => {
    const key = keyFile('es256', ec());
    const { auth, upstream } = await servers(key.publicKey, {
      authMethods: ['private_key_jwt'],
      signingAlgs: ['ES256', 'RS256'],
    });
    const { echo } = await clientWithKey(upstream, key.file, { scope: 'mcp:tools' });
    expect(await echo('one')).toBe('one');
    auth.revokeAll();
    expect(await echo('two')).toBe('two');
    expect(auth.requests).toEqual(
      Array(2).fill({
        via: 'jwt',
        clientId: CLIENT_ID,
        form: {
          grant_type: 'client_credentials',
          resource: upstream.url,
          scope: 'mcp:tools',
          client_assertion_type: JWT_BEARER_ASSERTION,
        },
      }),
    );
    expect(auth.secrets).toEqual([]);
    expect(auth.assertions.map((a) => a.error)).toEqual([undefined, undefined]);
    for (const { header, claims } of auth.assertions) {
      expect(header).toEqual({ alg: 'ES256', kid: 'gw-key-1', typ: 'JWT' });
      expect(claims).toMatchObject({ iss: CLIENT_ID, sub: CLIENT_ID, aud: auth.issuer });
      expect(claims!.exp! - claims!.iat!).toBe(ASSERTION_LIFETIME_SECONDS);
      expect(Math.abs(claims!.iat! - Date.now() / 1000)).toBeLessThan(30);
    }
    const [first, second] = auth.assertions.map((a) => a.claims!.jti);
    expect(first).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).not.toBe(first);
    expect(upstream.calls().map((r) => r.headers.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-2']);
  });

  it('signs RS256 with an RSA key (PKCS #1 PEM too), and a SEC 1 P-256 key as ES256', async () => {
    const key = keyFile('rs256', rsa(), 'pkcs1');
    const { auth, upstream } = await servers(key.publicKey);
    expect(await (await clientWithKey(upstream, key.file)).echo('r')).toBe('r');
    expect(auth.assertions.map((a) => [a.header.alg, a.error])).toEqual([['RS256', undefined]]);
    const sec1 = keyFile('sec1', ec(), 'sec1');
    expect(loadSigningKey(sec1.file, 'k')).toMatchObject({ alg: 'ES256', kid: 'k' });
  });

  it('uses the token endpoint as aud when only token_url names the authorization server, and the issuer when the configuration names one', async () => {
    const key = keyFile('token-url', ec());
    const { auth, upstream } = await servers(key.publicKey, { assertionAudience: 'token_endpoint' });
    const tokenUrl = `${auth.url}/token`;
    const only = new ClientCredentials({
      config: { client_id: CLIENT_ID, private_key_file: key.file, key_id: 'k', token_url: tokenUrl },
      signingKey: loadSigningKey(key.file, 'k'),
      upstream: new URL(upstream.url),
    });
    expect(await only.token()).toBe('tok-1');
    expect(auth.assertions.map((a) => [a.claims?.aud, a.error])).toEqual([[tokenUrl, undefined]]);
    // with issuer: as well, aud is the issuer, which this server (expecting its token endpoint) refuses
    await expect(clientWithKey(upstream, key.file, { token_url: tokenUrl })).rejects.toThrow(
      /refused the client credentials \(invalid_client/,
    );
    expect(auth.assertions[1]!.error).toBe('unexpected "aud" claim value');
  });

  it('refuses, naming it, an authorization server that does not take private_key_jwt or the key algorithm', async () => {
    const key = keyFile('refused', rsa());
    const basicOnly = await servers(key.publicKey, { authMethods: ['client_secret_basic'] });
    await expect(clientWithKey(basicOnly.upstream, key.file)).rejects.toThrow(
      `the authorization server accepts client_secret_basic at ${basicOnly.auth.url}/token, not private_key_jwt (upstream_auth's credentials)`,
    );
    const esOnly = await servers(key.publicKey, { authMethods: ['private_key_jwt'], signingAlgs: ['ES256'] });
    await expect(clientWithKey(esOnly.upstream, key.file)).rejects.toThrow(
      'the authorization server takes client assertions signed with ES256, not RS256 (the key of upstream_auth.private_key_file)',
    );
    expect([basicOnly.auth.requests, esOnly.auth.requests]).toEqual([[], []]);
    const other = keyFile('other', ec());
    const wrongKey = await servers(other.publicKey);
    await expect(clientWithKey(wrongKey.upstream, keyFile('not-registered', ec()).file)).rejects.toThrow(
      /refused the client credentials \(invalid_client/,
    );
    expect(wrongKey.auth.assertions[0]!.error).toBe('signature verification failed');
  });

  it('checks private_key_file and key_id in the configuration, and the key at start', () => {
    const base = { agent_id: 'a', server: 's' };
    const parse = (upstreamAuth: Record<string, unknown>) =>
      parseProxyConfig({
        ...base,
        upstream_auth: { client_id: 'gw', issuer: 'https://login.example.com', ...upstreamAuth },
      }).upstream_auth!;
    expect(parse({ private_key_file: '/etc/gw.pem', key_id: 'k1' })).toEqual({
      client_id: 'gw',
      private_key_file: '/etc/gw.pem',
      key_id: 'k1',
      issuers: ['https://login.example.com'],
    });
    expect(() => parse({ private_key_file: '/etc/gw.pem' })).toThrow(
      'upstream_auth.key_id: required with private_key_file',
    );
    expect(() => parse({ private_key_file: '/etc/gw.pem', key_id: 'k1', client_secret_env: 'S' })).toThrow(
      'upstream_auth: client_secret_env or private_key_file, not both',
    );
    expect(() => parse({})).toThrow(
      'upstream_auth: required, client_secret_env (the variable that holds the client secret) or private_key_file and key_id (private_key_jwt)',
    );
    expect(() => parse({ client_secret_env: 'S', key_id: 'k1' })).toThrow(
      'upstream_auth.key_id: goes with private_key_file',
    );

    const start = (file: string) => () =>
      upstreamAuthFetch(parse({ private_key_file: file, key_id: 'k1' }), new URL('http://127.0.0.1:9/mcp'), {});
    expect(start(keyFile('good', ec()).file)).not.toThrow();
    expect(start(join(dir, 'missing.pem'))).toThrow(ProxyConfigError);
    expect(start(join(dir, 'missing.pem'))).toThrow(/upstream_auth\.private_key_file: cannot read .*missing\.pem/);
    expect(start(keyFile('p384', ec('P-384')).file)).toThrow(
      /holds an EC key on secp384r1: private_key_jwt signs with a P-256 key \(ES256\) or an RSA key of 2048 bits or more \(RS256\)/,
    );
    expect(start(keyFile('rsa1024', rsa(1024)).file)).toThrow(
      /holds an RSA key of 1024 bits: private_key_jwt signs with/,
    );
    const publicOnly = join(dir, 'public.pem');
    writeFileSync(publicOnly, ec().publicKey.export({ format: 'pem', type: 'spki' }) as string);
    expect(start(publicOnly)).toThrow(/public\.pem holds no usable PEM private key/);
  });
});
