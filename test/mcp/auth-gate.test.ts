/**
 * The MCP gateway's protected-resource layer (clients/mcp-proxy/auth/) against
 * a real authorization server on 127.0.0.1 (the stand-in of
 * examples/oauth-issuer: metadata, JWKS, tokens signed with jose): the token
 * checks and their 401/403 answers, the Protected Resource Metadata, issuer
 * discovery, and key rotation. The gate runs in a plain HTTP server that
 * answers the identity it admitted, so every answer is what a client sees on
 * the wire; the gate's clock is a stepped one, so the key cache's cooldown
 * and lifetime are crossed without waiting.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAuthConfig, type AuthConfig } from '../../clients/mcp-proxy/auth/config.js';
import { TokenGate } from '../../clients/mcp-proxy/auth/gate.js';
import { metadataUrls } from '../../clients/mcp-proxy/auth/keys.js';
import { startStandInIssuer, type StandInIssuer } from '../../examples/oauth-issuer/server.js';

interface Served {
  url: string;
  gate: TokenGate;
  logs: string[];
  /** Moves the gate's clock on. */
  step(ms: number): void;
  close(): Promise<void>;
}

/** A gate in front of a tiny endpoint at /mcp that answers the admitted identity as JSON. */
async function serveGate(auth: Record<string, unknown>, publicPath = '/mcp'): Promise<Served> {
  const problems: string[] = [];
  const config = parseAuthConfig(auth, problems) as AuthConfig;
  expect(problems).toEqual([]);
  let offset = 0;
  const logs: string[] = [];
  const gate = new TokenGate({ config, log: (l) => logs.push(l), now: () => Date.now() + offset });
  const server: Server = createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') {
      if (!gate.serve(req, res)) res.writeHead(404).end();
      return;
    }
    void gate.admit(req, res).then((identity) => {
      if (!identity) return;
      // Who the request speaks for; the verified claims travel beside it (declared mappings read them as `token`).
      const { claims, ...who } = identity;
      if (claims?.iss === undefined) res.writeHead(500).end('no verified claims');
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(who));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  gate.bind(new URL(`http://127.0.0.1:${port}${publicPath}`));
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    gate,
    logs,
    step: (ms) => void (offset += ms),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const call = (url: string, token?: string, authorization?: string) =>
  fetch(url, {
    method: 'POST',
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(authorization ? { authorization } : {}) },
    body: '{}',
  });

/** The auth-params of a Bearer challenge. */
function challenge(header: string | null): Record<string, string> {
  expect(header).toMatch(/^Bearer /);
  const params: Record<string, string> = {};
  for (const m of header!.slice(7).matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g))
    params[m[1]!] = m[2]!.replace(/\\(.)/g, '$1');
  return params;
}

describe('the MCP gateway as an OAuth protected resource', () => {
  let as: StandInIssuer;
  let gw: Served;
  let aud: string;
  const token = (
    claims: Record<string, unknown>,
    extra: { expiresIn?: number; kid?: string; keepIssuer?: boolean } = {},
  ) => as.mint({ claims: { aud, client_id: 'research-bot', sub: 'alice', scope: 'mcp:tools', ...claims }, ...extra });

  beforeAll(async () => {
    as = await startStandInIssuer({ clients: [] });
    gw = await serveGate({ issuer: as.issuer, scopes: ['mcp:tools'] });
    aud = gw.gate.resource;
  });
  afterAll(async () => {
    await gw?.close();
    await as?.close();
  });

  it('no token: 401 with the metadata URL (path-inserted, RFC 9728) and the scopes, without an error code', async () => {
    const r = await call(gw.url);
    expect(r.status).toBe(401);
    const params = challenge(r.headers.get('www-authenticate'));
    expect(params).toEqual({
      resource_metadata: `${new URL(gw.url).origin}/.well-known/oauth-protected-resource/mcp`,
      scope: 'mcp:tools',
    });
    expect(await r.json()).toMatchObject({
      jsonrpc: '2.0',
      error: { code: -32600, message: expect.stringContaining('needs an OAuth bearer token') },
    });
    // Another scheme is no bearer token either.
    expect(
      challenge((await call(gw.url, undefined, 'Basic dXNlcjpwYXNz')).headers.get('www-authenticate')).error,
    ).toBeUndefined();
  });

  it('a valid token is admitted as its agent (client_id) acting for its user (sub)', async () => {
    const r = await call(gw.url, await token({}));
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ agentId: 'research-bot', onBehalfOf: 'alice' });
    // Without client_id the agent is azp; a token without the user claim has no on_behalf_of.
    const azp = await call(gw.url, await token({ client_id: undefined, azp: 'billing-bot', sub: undefined }));
    expect(await azp.json()).toEqual({ agentId: 'billing-bot' });
  });

  const refused = async (t: string, status: number, error: string, description: RegExp) => {
    const r = await call(gw.url, t);
    expect(r.status).toBe(status);
    const params = challenge(r.headers.get('www-authenticate'));
    expect(params.error).toBe(error);
    expect(params.resource_metadata).toBe(gw.gate.metadataUrl);
    expect(params.error_description).toMatch(description);
    return params;
  };

  it('a token for another audience is refused: 401 invalid_token', async () => {
    await refused(
      await token({ aud: 'http://127.0.0.1:1/other/mcp' }),
      401,
      'invalid_token',
      /not for this resource: its audience must include http:\/\/127\.0\.0\.1:\d+\/mcp/,
    );
  });

  it('an expired token is refused past the 60 s leeway, accepted within it', async () => {
    await refused(await token({}, { expiresIn: -61 - 5 }), 401, 'invalid_token', /expired/);
    expect((await call(gw.url, await token({}, { expiresIn: -30 }))).status).toBe(200);
    await refused(await token({ nbf: Math.floor(Date.now() / 1000) + 120 }), 401, 'invalid_token', /not valid yet/);
  });

  it('a token of another issuer is refused, even signed by a key the gate trusts', async () => {
    await refused(
      await token({ iss: 'http://127.0.0.1:1' }, { keepIssuer: true }),
      401,
      'invalid_token',
      /not issued by http:\/\/127\.0\.0\.1:\d+$/,
    );
  });

  it('a token without a required scope: 403 insufficient_scope naming the scope', async () => {
    const params = await refused(
      await token({ scope: 'mcp:read other' }),
      403,
      'insufficient_scope',
      /lacks the scope mcp:tools/,
    );
    expect(params.scope).toBe('mcp:tools');
    // scp as a list counts too.
    expect((await call(gw.url, await token({ scope: undefined, scp: ['mcp:tools'] }))).status).toBe(200);
  });

  it('a token without an agent claim (no client_id, no azp) is refused: 401', async () => {
    await refused(await token({ client_id: undefined }), 401, 'invalid_token', /no agent claim \(client_id or azp\)/);
    await refused(await token({ client_id: 42 }), 401, 'invalid_token', /agent claim "client_id" is not a string/);
  });

  it('a malformed or tampered token is refused: 401 invalid_token', async () => {
    await refused('not-a-jwt', 401, 'invalid_token', /not a valid JWT/);
    const good = await token({});
    const [h, , s] = good.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ iss: as.issuer, aud, client_id: 'admin-bot', sub: 'root', scope: 'mcp:tools', exp: 9999999999 })).toString('base64url')}.${s}`;
    await refused(forged, 401, 'invalid_token', /signature is not valid/);
    const r = await call(gw.url, undefined, 'Bearer two words');
    expect(r.status).toBe(401);
    expect(challenge(r.headers.get('www-authenticate')).error).toBe('invalid_token');
  });

  it('serves the Protected Resource Metadata at the path-inserted and the plain well-known URL', async () => {
    const origin = new URL(gw.url).origin;
    for (const url of [gw.gate.metadataUrl, `${origin}/.well-known/oauth-protected-resource`]) {
      const r = await fetch(url);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({
        resource: aud,
        authorization_servers: [as.issuer],
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
      });
    }
    expect((await fetch(`${origin}/.well-known/oauth-protected-resource/elsewhere`)).status).toBe(404);
  });

  it('a key rotated in at the issuer is accepted once the key set is read again; a removed key is refused', async () => {
    const first = as.currentKid;
    expect((await call(gw.url, await token({}))).status).toBe(200);
    const reads = as.jwksReads;
    const second = await as.rotate();
    // Within 30 s of the last read, an unknown kid does not make the gate read the set again.
    await refused(await token({}), 401, 'invalid_token', /not signed by a key of the issuer/);
    expect(as.jwksReads).toBe(reads);
    gw.step(31_000);
    const rotated = await token({});
    expect(JSON.parse(Buffer.from(rotated.split('.')[0]!, 'base64url').toString()).kid).toBe(second);
    expect((await call(gw.url, rotated)).status).toBe(200);
    expect(as.jwksReads).toBe(reads + 1);
    // The old key still works until the issuer drops it and the cached set (300 s) is read again.
    const old = await token({}, { kid: first });
    expect((await call(gw.url, old)).status).toBe(200);
    as.removeKey(first);
    expect((await call(gw.url, old)).status).toBe(200);
    gw.step(300_000);
    await refused(old, 401, 'invalid_token', /not signed by a key of the issuer/);
    expect(as.jwksReads).toBe(reads + 2);
    expect((await call(gw.url, rotated)).status).toBe(200);
  });
});

describe("the stand-in's token endpoint (client credentials)", () => {
  let as: StandInIssuer;
  let gw: Served;
  beforeAll(async () => {
    as = await startStandInIssuer({
      clients: [
        { client_id: 'support-bot-7', client_secret: 'secret-7', user: 'alice' },
        { client_id: 'reader', client_secret: 'r', scopes: ['mcp:read'] },
      ],
    });
    gw = await serveGate({ issuer: as.issuer, scopes: ['mcp:tools'] });
  });
  afterAll(async () => {
    await gw?.close();
    await as?.close();
  });
  const tokenRequest = (form: Record<string, string>, basic?: string) =>
    fetch(as.tokenEndpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(basic ? { authorization: `Basic ${Buffer.from(basic).toString('base64')}` } : {}),
      },
      body: new URLSearchParams(form),
    });

  it('issues a token for the resource that the gate admits as the client acting for its user, or for user=', async () => {
    const basic = await tokenRequest(
      { grant_type: 'client_credentials', resource: gw.gate.resource },
      'support-bot-7:secret-7',
    );
    expect(basic.status).toBe(200);
    const issued = (await basic.json()) as {
      access_token: string;
      token_type: string;
      expires_in: number;
      scope: string;
    };
    expect(issued).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp:tools' });
    expect(await (await call(gw.url, issued.access_token)).json()).toEqual({
      agentId: 'support-bot-7',
      onBehalfOf: 'alice',
    });
    const post = await tokenRequest({
      grant_type: 'client_credentials',
      resource: gw.gate.resource,
      client_id: 'support-bot-7',
      client_secret: 'secret-7',
      user: 'bob',
    });
    expect(await (await call(gw.url, ((await post.json()) as { access_token: string }).access_token)).json()).toEqual({
      agentId: 'support-bot-7',
      onBehalfOf: 'bob',
    });
  });

  it('refuses a wrong secret, a missing resource, another grant and a scope the client may not have', async () => {
    const wrong = await tokenRequest(
      { grant_type: 'client_credentials', resource: gw.gate.resource },
      'support-bot-7:nope',
    );
    expect([wrong.status, ((await wrong.json()) as { error: string }).error]).toEqual([401, 'invalid_client']);
    const noResource = await tokenRequest({ grant_type: 'client_credentials' }, 'support-bot-7:secret-7');
    expect([noResource.status, ((await noResource.json()) as { error: string }).error]).toEqual([
      400,
      'invalid_target',
    ]);
    const grant = await tokenRequest({ grant_type: 'password', resource: gw.gate.resource }, 'support-bot-7:secret-7');
    expect(((await grant.json()) as { error: string }).error).toBe('unsupported_grant_type');
    const scope = await tokenRequest(
      { grant_type: 'client_credentials', resource: gw.gate.resource, scope: 'mcp:tools' },
      'reader:r',
    );
    expect([scope.status, ((await scope.json()) as { error: string }).error]).toEqual([400, 'invalid_scope']);
    // The reader's own scope is granted, and the gate then answers 403: it lacks mcp:tools.
    const reader = (await (
      await tokenRequest({ grant_type: 'client_credentials', resource: gw.gate.resource }, 'reader:r')
    ).json()) as { access_token: string };
    expect((await call(gw.url, reader.access_token)).status).toBe(403);
  });
});

describe('issuer discovery', () => {
  let as: StandInIssuer;
  beforeAll(async () => {
    as = await startStandInIssuer({ clients: [], metadata: 'openid' });
  });
  afterAll(async () => as?.close());

  it('tries RFC 8414 first, then OpenID discovery (appended, then path-inserted)', () => {
    expect(metadataUrls('https://login.example.com')).toEqual([
      'https://login.example.com/.well-known/oauth-authorization-server',
      'https://login.example.com/.well-known/openid-configuration',
    ]);
    expect(metadataUrls('https://login.example.com/tenant1/')).toEqual([
      'https://login.example.com/.well-known/oauth-authorization-server/tenant1',
      'https://login.example.com/tenant1/.well-known/openid-configuration',
      'https://login.example.com/.well-known/openid-configuration/tenant1',
    ]);
  });

  it('finds the key set through OpenID discovery when the issuer has no RFC 8414 metadata; a configured jwks_uri needs none', async () => {
    const gw = await serveGate({ issuer: as.issuer });
    try {
      const t = await as.mint({ claims: { aud: gw.gate.resource, client_id: 'research-bot', sub: 'bob' } });
      expect(await (await call(gw.url, t)).json()).toEqual({ agentId: 'research-bot', onBehalfOf: 'bob' });
    } finally {
      await gw.close();
    }
    const direct = await serveGate({
      issuer: 'http://login.invalid',
      jwks_uri: as.jwksUri,
      audience: 'https://tools.example.com/mcp',
      agent_claim: 'act_as',
      user_claim: 'email',
    });
    try {
      const t = await as.mint({
        claims: {
          iss: 'http://login.invalid',
          aud: ['https://tools.example.com/mcp', 'other'],
          act_as: 'ops-bot',
          email: 'carol@example.com',
          client_id: 'ignored',
        },
        keepIssuer: true,
      });
      expect(await (await call(direct.url, t)).json()).toEqual({ agentId: 'ops-bot', onBehalfOf: 'carol@example.com' });
      // The configured audience, not the public URL, is the resource.
      expect(await (await fetch(direct.gate.metadataUrl)).json()).toMatchObject({
        resource: 'https://tools.example.com/mcp',
      });
    } finally {
      await direct.close();
    }
  });

  it('metadata naming another issuer is not trusted: 503 and a log line, no token accepted', async () => {
    const spelledOtherwise = as.issuer.replace('127.0.0.1', 'localhost');
    const gw = await serveGate({ issuer: spelledOtherwise });
    try {
      const t = await as.mint({
        claims: { iss: spelledOtherwise, aud: gw.gate.resource, client_id: 'research-bot' },
        keepIssuer: true,
      });
      const r = await call(gw.url, t);
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('5');
      expect(gw.logs.join('\n')).toContain(`names the issuer "${as.issuer}", not "${spelledOtherwise}"`);
    } finally {
      await gw.close();
    }
  });
});

describe('an issuer out of reach', () => {
  it('answers 503 and reads again at most once per 5 s while it has no keys', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const gw = await serveGate({ issuer: `http://127.0.0.1:${port}` });
    const { privateKey } = await generateKeyPair('ES256');
    const t = await new SignJWT({ client_id: 'research-bot' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(`http://127.0.0.1:${port}`)
      .setAudience(gw.gate.resource)
      .setExpirationTime('5m')
      .sign(privateKey);
    try {
      for (let i = 0; i < 3; i++) expect((await call(gw.url, t)).status).toBe(503);
      expect(gw.gate.checker.keys.reads).toBe(1);
      expect(gw.logs[0]).toMatch(
        /cannot check a token: the issuer's keys cannot be read: cannot reach http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-authorization-server/,
      );
      gw.step(5_000);
      expect((await call(gw.url, t)).status).toBe(503);
      expect(gw.gate.checker.keys.reads).toBe(2);
    } finally {
      await gw.close();
    }
  });
});

describe('a gate whose public URL is not bound yet', () => {
  it('answers 503 with Retry-After and serves no metadata (the audience is not known yet)', async () => {
    const gate = new TokenGate({
      config: parseAuthConfig({ issuer: 'http://127.0.0.1:9' }, [])!,
      log: () => undefined,
    });
    const server = createServer((req, res) => {
      if (gate.serve(req, res)) return;
      void gate.admit(req, res).then((identity) => identity && res.writeHead(200).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const r = await fetch(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/oauth-protected-resource`,
      );
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('5');
      expect(await r.json()).toMatchObject({ error: { code: -32603, message: 'the gateway is starting; try again' } });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('the auth: configuration', () => {
  it('collects every problem', () => {
    const problems: string[] = [];
    expect(
      parseAuthConfig(
        {
          issuer: 'ftp://x',
          jwks_uri: 'nope',
          audience: 'relative/path',
          agent_claim: 'a b',
          scopes: ['a b'],
          jwks_cache_seconds: 0,
          max_token_lifetime_seconds: 10,
          extra: 1,
        },
        problems,
      ),
    ).toBeUndefined();
    expect(problems).toEqual([
      'auth: unknown field "extra" (known: issuer, jwks_uri, audience, agent_claim, user_claim, scopes, jwks_cache_seconds, max_token_lifetime_seconds)',
      "auth.issuer: required, the authorization server's issuer URL (http or https)",
      "auth.jwks_uri: an http(s) URL of the issuer's key set",
      'auth.audience: an absolute URL, the resource the tokens are issued for (default: --public-url)',
      'auth.agent_claim: a claim name (letters, digits, _ . : -)',
      'auth.scopes: a list of scope names (no spaces), e.g. [mcp:tools]',
      'auth.jwks_cache_seconds: a whole number of seconds, 1..86400',
      'auth.max_token_lifetime_seconds: a whole number of seconds, 60..31536000 (the longest exp - iat taken)',
    ]);
    const none: string[] = [];
    expect(parseAuthConfig('yes', none)).toBeUndefined();
    expect(none[0]).toMatch(/^auth: a mapping with issuer/);
  });

  it('fills the defaults', () => {
    const problems: string[] = [];
    expect(parseAuthConfig({ issuer: 'https://login.example.com' }, problems)).toEqual({
      issuer: 'https://login.example.com',
      user_claim: 'sub',
      scopes: [],
      jwks_cache_seconds: 300,
      max_token_lifetime_seconds: 86_400,
    });
  });
});
