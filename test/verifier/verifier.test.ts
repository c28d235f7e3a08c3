/**
 * The downstream verifier (permit-verifier/) and the example downstream service, without
 * the runtime: a node:http JWKS server on 127.0.0.1 serves Ed25519 keys made here,
 * and tokens are signed here in the service's format (compact JWS, EdDSA, kid =
 * JWK thumbprint, typ permit+jwt).
 */
import { createHash, createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildDownstreamService } from '../../examples/downstream-service/server.js';
import {
  argsDigest,
  createPermitVerifier,
  PermitError,
  PermitExpiredError,
  PermitMismatchError,
  PermitSignatureInvalidError,
  PermitUnavailableError,
  type PermitClaims,
  type PermitVerifierCommonOptions,
  type PermitVerifierOptions,
} from '../../permit-verifier/index.js';

const ISSUER = 'http://127.0.0.1:8080';

// --- keys and tokens ------------------------------------------------------------

interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
}

interface TestKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: PublicJwk;
}

function makeKey(): TestKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  // RFC 7638 thumbprint: the required members in lexicographic order.
  const kid = createHash('sha256')
    .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x }))
    .digest('base64url');
  return { kid, privateKey, publicKey, jwk: { kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' } };
}

const b64url = (value: unknown): string =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const iat = nowSeconds();
  return {
    iss: ISSUER,
    sub: 'support-bot-1',
    act: 'payments.refund',
    res: 'order:100482',
    eff: 'allow',
    dec: 'dec_8f3kq0a1b2c3d4e5f6g7h8i9',
    acc: 'acc_northpeak0000000000001',
    env: 'test',
    iat,
    exp: iat + 300,
    jti: 'pmt_a1b2c3d4e5f6g7h8i9j0k1l2',
    ...overrides,
  };
}

function signToken(
  key: TestKey,
  payload: Record<string, unknown> = claims(),
  header: Record<string, unknown> = {},
): string {
  const input = `${b64url({ alg: 'EdDSA', kid: key.kid, typ: 'permit+jwt', ...header })}.${b64url(payload)}`;
  return `${input}.${sign(null, Buffer.from(input), key.privateKey).toString('base64url')}`;
}

function hs256Token(secret: Buffer | string, kid: string): string {
  const input = `${b64url({ alg: 'HS256', kid, typ: 'permit+jwt' })}.${b64url(claims())}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

/** Changes one character in the middle of a base64url part (the last one may only carry padding bits). */
function flipMiddle(part: string): string {
  const i = Math.floor(part.length / 2);
  return part.slice(0, i) + (part[i] === 'A' ? 'B' : 'A') + part.slice(i + 1);
}

// --- the JWKS server ------------------------------------------------------------

interface JwksServer {
  url: string;
  keys: PublicJwk[];
  requests: number;
  status: number;
  close(): Promise<void>;
}

async function startJwksServer(keys: PublicJwk[]): Promise<JwksServer> {
  const state = { keys, requests: 0, status: 200 };
  const server: Server = createServer((req, res) => {
    if (req.url !== '/.well-known/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    state.requests++;
    if (state.status !== 200) {
      res
        .writeHead(state.status, { 'content-type': 'application/json' })
        .end('{"error":{"code":"service.unavailable"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' });
    res.end(JSON.stringify({ keys: state.keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  });
}

/** A URL on which nothing listens. */
async function deadUrl(): Promise<string> {
  const server = await startJwksServer([]);
  await server.close();
  return server.url;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function expectCode(
  promise: Promise<unknown>,
  errorClass: typeof PermitError,
  code: string,
): Promise<PermitError> {
  const err = await rejection(promise);
  expect(err).toBeInstanceOf(errorClass);
  expect((err as PermitError).code).toBe(code);
  return err as PermitError;
}

const expectInvalid = (p: Promise<unknown>) => expectCode(p, PermitSignatureInvalidError, 'auth.signature_invalid');

// --- tests ----------------------------------------------------------------------

const keyA = makeKey();
const keyB = makeKey();
const stranger = makeKey();
let jwks: JwksServer;

beforeAll(async () => {
  jwks = await startJwksServer([keyA.jwk]);
});
afterAll(async () => {
  await jwks.close();
});
afterEach(() => {
  jwks.keys = [keyA.jwk];
  jwks.status = 200;
});

/** The account and environment of claims(): the tenant of the verifiers below. */
const TENANT = { account: 'acc_northpeak0000000000001', environment: 'test' } as const;

function verifier(options: Partial<PermitVerifierCommonOptions> = {}) {
  return createPermitVerifier({ jwksUrl: jwks.url, issuer: ISSUER, ...TENANT, ...options });
}

describe('errors', () => {
  it('carry a static code, an instance code and the HTTP status', () => {
    expect(PermitExpiredError.code).toBe('auth.expired');
    expect(PermitSignatureInvalidError.code).toBe('auth.signature_invalid');
    expect(PermitMismatchError.code).toBe('permit.mismatch');
    expect(PermitUnavailableError.code).toBe('service.unavailable');
    const err = new PermitExpiredError('expired');
    expect(err).toBeInstanceOf(PermitError);
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe('auth.expired');
    expect(err.status).toBe(401);
    expect(err.name).toBe('PermitExpiredError');
    expect(new PermitMismatchError('x').status).toBe(403);
    expect(new PermitUnavailableError('x').status).toBe(503);
  });
});

describe('createPermitVerifier', () => {
  it('returns the claims of a valid token', async () => {
    const payload = claims({ extra: 'dropped' });
    const result = await verifier().verify(signToken(keyA, payload));
    const { extra: _extra, ...expected } = payload;
    expect(result).toEqual(expected);
  });

  it('accepts a token without a resource, and eff review', async () => {
    const { res: _res, ...noResource } = claims({ eff: 'review', act: 'payments.refund' });
    const result: PermitClaims = await verifier().verify(signToken(keyA, noResource), { action: 'payments.refund' });
    expect(result.res).toBeUndefined();
    expect('res' in result).toBe(false);
    expect(result.eff).toBe('review');
  });

  it('accepts matching expectations', async () => {
    const result = await verifier().verify(signToken(keyA), {
      action: 'payments.refund',
      resource: 'order:100482',
      account: 'acc_northpeak0000000000001',
      environment: 'test',
    });
    expect(result.dec).toBe('dec_8f3kq0a1b2c3d4e5f6g7h8i9');
  });

  describe('expiry', () => {
    it('rejects a token past its exp with auth.expired', async () => {
      const token = signToken(keyA, claims({ iat: nowSeconds() - 600, exp: nowSeconds() - 300 }));
      const err = await expectCode(verifier().verify(token), PermitExpiredError, 'auth.expired');
      expect(err.message).toMatch(/expired at \d{4}-/);
    });

    it('uses the now option, exp being exclusive, with the clock tolerance', async () => {
      const payload = claims();
      const exp = payload.exp as number;
      const token = signToken(keyA, payload);
      await expect(verifier({ now: () => exp * 1000 - 1 }).verify(token)).resolves.toMatchObject({ exp });
      await expectCode(verifier({ now: () => exp * 1000 }).verify(token), PermitExpiredError, 'auth.expired');
      await expectCode(verifier({ now: () => (exp + 60) * 1000 }).verify(token), PermitExpiredError, 'auth.expired');
      await expect(
        verifier({ now: () => (exp + 4) * 1000, clockToleranceSeconds: 5 }).verify(token),
      ).resolves.toMatchObject({ exp });
    });

    it('refuses a token before its nbf, inclusive, with the clock tolerance', async () => {
      const payload = claims();
      const nbf = (payload.iat as number) + 60;
      const token = signToken(keyA, { ...payload, nbf });
      const early = await expectInvalid(verifier({ now: () => nbf * 1000 - 1 }).verify(token));
      expect(early.message).toMatch(/not valid before \d{4}-.*\(nbf\)/);
      await expect(verifier({ now: () => nbf * 1000 }).verify(token)).resolves.not.toHaveProperty('nbf');
      await expect(
        verifier({ now: () => (nbf - 4) * 1000, clockToleranceSeconds: 5 }).verify(token),
      ).resolves.toMatchObject({ iat: payload.iat });
      await expectInvalid(verifier({ now: () => (nbf - 6) * 1000, clockToleranceSeconds: 5 }).verify(token));
    });

    it('reports an expired forged token as signature_invalid, not expired', async () => {
      const token = signToken(stranger, claims({ exp: nowSeconds() - 300 }), { kid: keyA.kid });
      await expectInvalid(verifier().verify(token));
    });
  });

  describe('signature', () => {
    it('rejects a tampered payload', async () => {
      const [h, , s] = signToken(keyA).split('.');
      const forged = `${h}.${b64url(claims({ act: 'payments.payout' }))}.${s}`;
      await expectInvalid(verifier().verify(forged));
    });

    it('rejects a tampered signature', async () => {
      const [h, p, s] = signToken(keyA).split('.') as [string, string, string];
      await expectInvalid(verifier().verify(`${h}.${p}.${flipMiddle(s)}`));
      await expectInvalid(verifier().verify(`${h}.${p}.`));
    });

    it('rejects another spelling of the same signature bytes (unused bits of the last character set)', async () => {
      const token = signToken(keyA);
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const last = alphabet.indexOf(token[token.length - 1]!);
      for (let delta = 1; delta < 16; delta++) {
        const respelled = token.slice(0, -1) + alphabet[(last & ~15) | ((last + delta) & 15)]!;
        expect(Buffer.from(respelled.split('.')[2]!, 'base64url')).toEqual(
          Buffer.from(token.split('.')[2]!, 'base64url'),
        );
        await expectInvalid(verifier().verify(respelled));
      }
      await expectInvalid(verifier().verify(`${token}=`));
      await expect(verifier().verify(token)).resolves.toBeDefined();
    });

    it('rejects a token signed with another key under a published kid', async () => {
      await expectInvalid(verifier().verify(signToken(stranger, claims(), { kid: keyA.kid })));
    });

    it('rejects a token without kid', async () => {
      const input = `${b64url({ alg: 'EdDSA', typ: 'permit+jwt' })}.${b64url(claims())}`;
      const token = `${input}.${sign(null, Buffer.from(input), keyA.privateKey).toString('base64url')}`;
      const err = await expectInvalid(verifier().verify(token));
      expect(err.message).toMatch(/kid/);
    });

    it('rejects a key not in the JWKS, refetching the JWKS at most once per cooldown', async () => {
      const v = verifier({ cooldownMs: 1000 });
      const before = jwks.requests;
      await v.verify(signToken(keyA));
      expect(jwks.requests).toBe(before + 1);
      const unknown = signToken(stranger);
      // Within the cooldown of the first fetch: no refetch at all.
      for (let i = 0; i < 5; i++) {
        const err = await expectInvalid(v.verify(unknown));
        expect(err.message).toMatch(/does not publish/);
      }
      expect(jwks.requests).toBe(before + 1);
      await sleep(1050);
      // Cooldown over: one refetch for a burst of unknown kids (also concurrent ones).
      await Promise.all(Array.from({ length: 5 }, () => expectInvalid(v.verify(unknown))));
      for (let i = 0; i < 5; i++) await expectInvalid(v.verify(unknown));
      expect(jwks.requests).toBe(before + 2);
      // Known keys never cause a fetch.
      await v.verify(signToken(keyA));
      expect(jwks.requests).toBe(before + 2);
    });
  });

  describe('algorithm', () => {
    it('rejects alg none (with and without a signature) without fetching the JWKS', async () => {
      const v = verifier();
      const before = jwks.requests;
      const input = `${b64url({ alg: 'none', kid: keyA.kid, typ: 'permit+jwt' })}.${b64url(claims())}`;
      await expectInvalid(v.verify(`${input}.`));
      await expectInvalid(v.verify(`${input}.${signToken(keyA).split('.')[2]}`));
      const noKid = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims())}.`;
      await expectInvalid(v.verify(noKid));
      expect(jwks.requests).toBe(before);
    });

    it('rejects HS256 tokens keyed with the public key (raw bytes, JWK JSON, PEM, x)', async () => {
      const v = verifier();
      const raw = Buffer.from(keyA.jwk.x, 'base64url');
      const pem = keyA.publicKey.export({ format: 'pem', type: 'spki' }) as string;
      for (const secret of [raw, JSON.stringify(keyA.jwk), pem, keyA.jwk.x]) {
        const err = await expectInvalid(v.verify(hs256Token(secret, keyA.kid)));
        expect(err.message).toMatch(/algorithm/);
      }
    });

    it('rejects other asymmetric algorithms', async () => {
      const token = signToken(keyA, claims(), { alg: 'ES256' });
      await expectInvalid(verifier().verify(token));
    });
  });

  describe('malformed tokens', () => {
    const header = b64url({ alg: 'EdDSA', kid: keyA.kid, typ: 'permit+jwt' });
    const cases: [string, string][] = [
      ['empty', ''],
      ['two parts', 'a.b'],
      ['garbage', 'garbage'],
      ['three junk parts', 'a.b.c'],
      ['dots only', '..'],
      ['four parts', `${signToken(keyA)}.x`],
      ['header not JSON', `${b64url('not json')}.${b64url(claims())}.c2ln`],
      [
        'payload not JSON (signed)',
        (() => {
          const input = `${header}.${b64url('not json')}`;
          return `${input}.${sign(null, Buffer.from(input), keyA.privateKey).toString('base64url')}`;
        })(),
      ],
      ['whitespace', ` ${signToken(keyA)}`],
      ['bearer prefix left in', `Bearer ${signToken(keyA)}`],
      ['non-ASCII', 'é.é.é'],
    ];
    for (const [name, token] of cases) {
      it(`rejects ${name}`, async () => {
        await expectInvalid(verifier().verify(token));
      });
    }

    it('rejects non-strings', async () => {
      for (const value of [undefined, null, 42, {}, Buffer.from(signToken(keyA))]) {
        await expectInvalid(verifier().verify(value as unknown as string));
      }
    });

    it('rejects an unknown crit extension', async () => {
      await expectInvalid(verifier().verify(signToken(keyA, claims(), { crit: ['x-ext'], 'x-ext': 1 })));
    });

    it('rejects correctly signed tokens with missing or mistyped claims', async () => {
      const v = verifier();
      const broken: [string, Record<string, unknown>][] = [
        ['act', claims({ act: undefined })],
        ['sub', claims({ sub: '' })],
        ['dec', claims({ dec: 7 })],
        ['acc', claims({ acc: undefined })],
        ['jti', claims({ jti: undefined })],
        ['eff', claims({ eff: 'deny' })],
        ['env', claims({ env: 'prod' })],
        ['exp', claims({ exp: undefined })],
        ['exp', claims({ exp: '9999999999' })],
        ['iat', claims({ iat: undefined })],
        ['res', claims({ res: 12 })],
      ];
      for (const [claim, payload] of broken) {
        const err = await expectInvalid(
          v.verify(signToken(keyA, JSON.parse(JSON.stringify(payload)) as Record<string, unknown>)),
        );
        expect(err.message, claim).toContain(`"${claim}"`);
      }
      await expectInvalid(v.verify(signToken(keyA, [1, 2] as unknown as Record<string, unknown>)));
    });
  });

  describe('issuer and typ', () => {
    it('rejects another issuer (exact match, no trailing slash)', async () => {
      for (const iss of ['http://evil.example', `${ISSUER}/`, 'https://127.0.0.1:8080', undefined]) {
        const err = await expectInvalid(verifier().verify(signToken(keyA, claims({ iss }))));
        expect(err.message).toMatch(/iss/);
      }
    });

    it('rejects another typ', async () => {
      for (const typ of ['JWT', 'at+jwt', undefined]) {
        const err = await expectInvalid(verifier().verify(signToken(keyA, claims(), { typ })));
        expect(err.message).toMatch(/typ/);
      }
      // RFC 7515 4.1.9: "application/" may be omitted; both spellings are the same type.
      await verifier().verify(signToken(keyA, claims(), { typ: 'application/permit+jwt' }));
    });
  });

  describe('expectations', () => {
    it('throws PermitMismatchError for another action or resource', async () => {
      const v = verifier();
      const token = signToken(keyA);
      const err = await expectCode(v.verify(token, { action: 'orders.read' }), PermitMismatchError, 'permit.mismatch');
      expect(err.status).toBe(403);
      expect(err.message).toContain('payments.refund');
      await expectCode(
        v.verify(token, { action: 'payments.refund', resource: 'order:100483' }),
        PermitMismatchError,
        'permit.mismatch',
      );
      await expectCode(v.verify(token, { resource: 'order:10048' }), PermitMismatchError, 'permit.mismatch');
      const { res: _res, ...noResource } = claims();
      const err2 = await expectCode(
        v.verify(signToken(keyA, noResource), { resource: 'order:100482' }),
        PermitMismatchError,
        'permit.mismatch',
      );
      expect(err2.message).toContain('no resource');
    });

    it('checks arguments only together with the action: a permit for the same arguments of another tool does not pass', async () => {
      const v = verifier();
      const args = { path: 'notes/a.txt' };
      const token = signToken(keyA, claims({ act: 'files.read', res: undefined, args: argsDigest(args) }));
      // Arguments alone cannot tell files.read's permit from files.delete's: refused as a misuse, never passed.
      await expect(v.verify(token, { arguments: args })).rejects.toThrow(TypeError);
      await expect(v.verify(token, { arguments: args })).rejects.toThrow(/action/);
      await expect(v.verify(token, { resource: 'x', arguments: args } as never)).rejects.toThrow(TypeError);
      await expect(v.verify(token, { action: 'files.read', arguments: args })).resolves.toMatchObject({
        act: 'files.read',
        args: argsDigest(args),
      });
      await expectCode(
        v.verify(token, { action: 'files.delete', arguments: args }),
        PermitMismatchError,
        'permit.mismatch',
      );
      await expectCode(
        v.verify(token, { action: 'files.read', arguments: { path: 'notes/b.txt' } }),
        PermitMismatchError,
        'permit.mismatch',
      );
      // Without arguments nothing changes: the action alone, or nothing, as before.
      await expect(v.verify(token, { action: 'files.read' })).resolves.toMatchObject({ act: 'files.read' });
      await expect(v.verify(token)).resolves.toMatchObject({ act: 'files.read' });
    });

    it('absent arguments digest as {}, an explicit null as null: the permit of one does not pass for the other', async () => {
      expect(argsDigest(undefined)).toBe(argsDigest({}));
      expect(argsDigest()).toBe(argsDigest({}));
      expect(argsDigest(null)).not.toBe(argsDigest({}));
      expect(argsDigest(null)).toBe(createHash('sha256').update('null').digest('base64url'));
      expect(argsDigest({})).toBe(createHash('sha256').update('{}').digest('base64url'));
      const v = verifier();
      const forNull = signToken(keyA, claims({ act: 'tools.ping', args: argsDigest(null) }));
      const forNone = signToken(keyA, claims({ act: 'tools.ping', args: argsDigest(undefined) }));
      await expect(v.verify(forNull, { action: 'tools.ping', arguments: null })).resolves.toMatchObject({
        act: 'tools.ping',
      });
      await expectCode(
        v.verify(forNull, { action: 'tools.ping', arguments: {} }),
        PermitMismatchError,
        'permit.mismatch',
      );
      await expectCode(
        v.verify(forNull, { action: 'tools.ping', arguments: undefined }),
        PermitMismatchError,
        'permit.mismatch',
      );
      await expect(v.verify(forNone, { action: 'tools.ping', arguments: undefined })).resolves.toMatchObject({
        act: 'tools.ping',
      });
      await expect(v.verify(forNone, { action: 'tools.ping', arguments: {} })).resolves.toMatchObject({
        act: 'tools.ping',
      });
      await expectCode(
        v.verify(forNone, { action: 'tools.ping', arguments: null }),
        PermitMismatchError,
        'permit.mismatch',
      );
    });

    it('treats another account or environment as not valid here', async () => {
      const v = verifier();
      const token = signToken(keyA);
      await expectInvalid(v.verify(token, { account: 'acc_other' }));
      await expectInvalid(v.verify(token, { environment: 'live' }));
    });

    it('checks the token before the expectations', async () => {
      const expired = signToken(keyA, claims({ exp: nowSeconds() - 1 }));
      await expectCode(verifier().verify(expired, { action: 'orders.read' }), PermitExpiredError, 'auth.expired');
    });
  });

  describe('the account and environment of the verifier', () => {
    const OTHER = 'acc_otheraccount000000000002';

    it('are required at construction, the error naming what is missing', () => {
      const base = { jwksUrl: jwks.url, issuer: ISSUER };
      const missing = (options: unknown) => () => createPermitVerifier(options as PermitVerifierOptions);
      expect(missing(base)).toThrow(/^createPermitVerifier: account and environment are required: .*anyAccount: true/);
      expect(missing({ ...base, account: TENANT.account })).toThrow(/^createPermitVerifier: environment is required/);
      expect(missing({ ...base, environment: 'live' })).toThrow(/^createPermitVerifier: account is required/);
      expect(missing({ ...base, account: 'northpeak', environment: 'live' })).toThrow(
        /account must be an account id \("acc_\.\.\."\), not "northpeak"/,
      );
      expect(missing({ ...base, account: TENANT.account, environment: 'prod' })).toThrow(
        /environment must be "test" or "live", not "prod"/,
      );
      expect(missing({ ...base, account: TENANT.account, environment: 'live', anyAccount: true })).toThrow(
        /either account or anyAccount: true, not both/,
      );
      expect(missing({ ...base, anyAccount: 'yes' })).toThrow(/anyAccount must be true or false/);
      expect(missing({ ...base, account: TENANT.account, environment: 'live', anyAccount: false })).not.toThrow();
    });

    it("refuse another account's permit and a permit of the other environment, with no expectation given", async () => {
      const v = verifier();
      expect((await v.verify(signToken(keyA))).acc).toBe(TENANT.account);
      const other = await expectInvalid(v.verify(signToken(keyA, claims({ acc: OTHER }))));
      expect(other.message).toContain(`another account than ${TENANT.account}`);
      const live = await expectInvalid(v.verify(signToken(keyA, claims({ env: 'live' }))));
      expect(live.message).toContain('issued for the live environment, not test');
      // A per-call expectation cannot widen the verifier's own.
      await expectInvalid(v.verify(signToken(keyA, claims({ acc: OTHER })), { account: OTHER }));
    });

    it('anyAccount: true accepts every account and answers acc and env; an environment given still pins it', async () => {
      const any = createPermitVerifier({ jwksUrl: jwks.url, issuer: ISSUER, anyAccount: true });
      expect(await any.verify(signToken(keyA, claims({ acc: OTHER, env: 'live' })))).toMatchObject({
        acc: OTHER,
        env: 'live',
      });
      expect(await any.verify(signToken(keyA))).toMatchObject({ acc: TENANT.account, env: 'test' });
      // The per-call options keep working on a multi-tenant verifier.
      await expectInvalid(any.verify(signToken(keyA, claims({ acc: OTHER })), { account: TENANT.account }));
      const anyLive = createPermitVerifier({
        jwksUrl: jwks.url,
        issuer: ISSUER,
        anyAccount: true,
        environment: 'live',
      });
      expect((await anyLive.verify(signToken(keyA, claims({ acc: OTHER, env: 'live' })))).acc).toBe(OTHER);
      await expectInvalid(anyLive.verify(signToken(keyA)));
    });
  });

  describe('key rotation', () => {
    it('accepts a new kid after a refetch, and the retired key while it is published', async () => {
      const v = verifier({ cooldownMs: 300 });
      const before = jwks.requests;
      await v.verify(signToken(keyA));
      jwks.keys = [keyB.jwk, keyA.jwk]; // the service rotated: B signs, A is retired but published
      await sleep(350);
      const result = await v.verify(signToken(keyB, claims({ dec: 'dec_new' })));
      expect(result.dec).toBe('dec_new');
      expect(jwks.requests).toBe(before + 2);
      await v.verify(signToken(keyA));
      expect(jwks.requests).toBe(before + 2);
    });

    it('refetches the JWKS once it is older than cacheMaxAgeMs, and drops removed keys', async () => {
      const v = verifier({ cacheMaxAgeMs: 600 });
      const before = jwks.requests;
      await v.verify(signToken(keyA));
      await v.verify(signToken(keyA));
      expect(jwks.requests).toBe(before + 1);
      jwks.keys = [keyB.jwk]; // A's tokens have all expired: A is no longer published
      await sleep(650);
      await expectInvalid(v.verify(signToken(keyA)));
      expect(jwks.requests).toBe(before + 2);
      await v.verify(signToken(keyB));
    });
  });

  describe('JWKS unavailable', () => {
    it('throws PermitUnavailableError when nothing listens', async () => {
      const v = createPermitVerifier({ jwksUrl: await deadUrl(), issuer: ISSUER, ...TENANT });
      const err = await expectCode(v.verify(signToken(keyA)), PermitUnavailableError, 'service.unavailable');
      expect(err.status).toBe(503);
      expect(err.message).toMatch(/could not be fetched/);
    });

    it('throws PermitUnavailableError on a non-200 answer or a body that is not a key set', async () => {
      jwks.status = 503;
      await expectCode(verifier().verify(signToken(keyA)), PermitUnavailableError, 'service.unavailable');
      jwks.status = 200;
      jwks.keys = 'nope' as unknown as PublicJwk[];
      await expectCode(verifier().verify(signToken(keyA)), PermitUnavailableError, 'service.unavailable');
    });

    it('keeps using the fetched keys while they are fresh, then fails when the refetch fails', async () => {
      const server = await startJwksServer([keyA.jwk]);
      const v = createPermitVerifier({ jwksUrl: server.url, issuer: ISSUER, ...TENANT, cacheMaxAgeMs: 600 });
      await v.verify(signToken(keyA));
      await server.close();
      await v.verify(signToken(keyA));
      await sleep(650);
      await expectCode(v.verify(signToken(keyA)), PermitUnavailableError, 'service.unavailable');
    });

    it('still rejects bad tokens as such, without fetching', async () => {
      const v = createPermitVerifier({ jwksUrl: await deadUrl(), issuer: ISSUER, ...TENANT });
      await expectInvalid(v.verify('garbage'));
      await expectInvalid(v.verify(hs256Token('secret', keyA.kid)));
    });
  });

  describe('options', () => {
    it('rejects bad options at creation', () => {
      expect(() => createPermitVerifier({ jwksUrl: 'not a url', issuer: ISSUER, ...TENANT })).toThrow(TypeError);
      expect(() => createPermitVerifier({ jwksUrl: 'ftp://127.0.0.1/jwks.json', issuer: ISSUER, ...TENANT })).toThrow(
        TypeError,
      );
      expect(() => createPermitVerifier({ jwksUrl: jwks.url, issuer: '', ...TENANT })).toThrow(TypeError);
      expect(() => createPermitVerifier({ jwksUrl: jwks.url, issuer: ISSUER, cooldownMs: -1, ...TENANT })).toThrow(
        TypeError,
      );
      expect(() =>
        createPermitVerifier({ jwksUrl: jwks.url, issuer: ISSUER, cacheMaxAgeMs: Number.NaN, ...TENANT }),
      ).toThrow(TypeError);
      expect(() =>
        createPermitVerifier({ jwksUrl: jwks.url, issuer: ISSUER, clockToleranceSeconds: -5, ...TENANT }),
      ).toThrow(TypeError);
      expect(() =>
        createPermitVerifier({ jwksUrl: jwks.url, issuer: ISSUER, audience: 'x' as never, ...TENANT }),
      ).toThrow(TypeError);
    });

    it('accepts the JWKS URL as a URL object', async () => {
      await createPermitVerifier({ jwksUrl: new URL(jwks.url), issuer: ISSUER, ...TENANT }).verify(signToken(keyA));
    });
  });
});

describe('downstream service example', () => {
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const refundToken = (orderId: string, overrides: Record<string, unknown> = {}) =>
    signToken(keyA, claims({ act: 'payments.refund', res: `order:${orderId}`, ...overrides }));
  const readToken = (orderId: string) => signToken(keyA, claims({ act: 'orders.read', res: `order:${orderId}` }));

  async function service(jwksUrl = jwks.url) {
    return buildDownstreamService({ jwksUrl, issuer: ISSUER, ...TENANT });
  }

  it('admits a refund with a matching permit and echoes the decision and agent', async () => {
    const app = await service();
    const res = await app.inject({
      method: 'POST',
      url: '/orders/100482/refund',
      headers: bearer(refundToken('100482')),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      order_id: '100482',
      decision_id: 'dec_8f3kq0a1b2c3d4e5f6g7h8i9',
      agent_id: 'support-bot-1',
      effect: 'allow',
    });
    const review = await app.inject({
      method: 'POST',
      url: '/orders/100482/refund',
      headers: bearer(refundToken('100482', { eff: 'review' })),
    });
    expect(review.statusCode).toBe(200);
    expect(review.json()).toMatchObject({ effect: 'review' });
    await app.close();
  });

  it('admits an order read with a matching permit', async () => {
    const app = await service();
    const res = await app.inject({
      method: 'GET',
      url: '/orders/7',
      headers: { authorization: `bearer  ${readToken('7')}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ order_id: '7', agent_id: 'support-bot-1' });
    await app.close();
  });

  it('answers 401 auth.signature_invalid without a usable token', async () => {
    const app = await service();
    const token = refundToken('100482');
    const [h, p, s] = token.split('.') as [string, string, string];
    for (const headers of [
      {},
      { authorization: '' },
      { authorization: 'Bearer' },
      { authorization: `Basic ${token}` },
      { authorization: `Bearer ${token} extra` },
      bearer(`${h}.${p}.${flipMiddle(s)}`),
      bearer(signToken(stranger, claims())),
      bearer(hs256Token(Buffer.from(keyA.jwk.x, 'base64url'), keyA.kid)),
    ]) {
      const res = await app.inject({ method: 'POST', url: '/orders/100482/refund', headers });
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
      const body = res.json() as { error: { code: string; message: string } };
      expect(body.error.code).toBe('auth.signature_invalid');
      expect(body.error.message).toEqual(expect.any(String));
    }
    await app.close();
  });

  it('answers 401 auth.expired for an expired permit', async () => {
    const app = await service();
    const res = await app.inject({
      method: 'POST',
      url: '/orders/100482/refund',
      headers: bearer(refundToken('100482', { iat: nowSeconds() - 400, exp: nowSeconds() - 100 })),
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: { code: 'auth.expired' } });
    await app.close();
  });

  it('answers 403 permit.mismatch for a permit of another action or resource', async () => {
    const app = await service();
    const cases = [
      { method: 'POST' as const, url: '/orders/100482/refund', token: readToken('100482') },
      { method: 'POST' as const, url: '/orders/100482/refund', token: refundToken('100483') },
      { method: 'GET' as const, url: '/orders/100482', token: refundToken('100482') },
      { method: 'GET' as const, url: '/orders/100482', token: readToken('1004821') },
      {
        method: 'GET' as const,
        url: '/orders/100482',
        token: signToken(keyA, claims({ act: 'orders.read', res: undefined })),
      },
    ];
    for (const { method, url, token } of cases) {
      const res = await app.inject({ method, url, headers: bearer(token) });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json()).toMatchObject({ error: { code: 'permit.mismatch' } });
    }
    await app.close();
  });

  it("answers 401 auth.signature_invalid for another tenant's permit or a permit of the other environment", async () => {
    const app = await service();
    const foreign = signToken(
      keyA,
      claims({ act: 'orders.read', res: 'order:1001', acc: 'acc_tenantb000000000000002' }),
    );
    const res = await app.inject({ method: 'GET', url: '/orders/1001', headers: bearer(foreign) });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: { code: 'auth.signature_invalid' } });
    const live = await buildDownstreamService({
      jwksUrl: jwks.url,
      issuer: ISSUER,
      account: TENANT.account,
      environment: 'live',
    });
    const testPermit = await live.inject({ method: 'GET', url: '/orders/1001', headers: bearer(readToken('1001')) });
    expect(testPermit.statusCode).toBe(401);
    expect(testPermit.json()).toMatchObject({ error: { code: 'auth.signature_invalid' } });
    await Promise.all([app.close(), live.close()]);
  });

  it('answers 503 service.unavailable when the JWKS cannot be fetched, without its address', async () => {
    const url = await deadUrl();
    const app = await service(url);
    const res = await app.inject({ method: 'GET', url: '/orders/100482', headers: bearer(readToken('100482')) });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: { code: 'service.unavailable' } });
    expect(res.body).not.toContain(url);
    await app.close();
  });

  it("leaves other errors to Fastify's handling", async () => {
    const app = await service();
    const notFound = await app.inject({ method: 'GET', url: '/customers/1', headers: bearer(readToken('1')) });
    expect(notFound.statusCode).toBe(404);
    const badJson = await app.inject({
      method: 'POST',
      url: '/orders/1/refund',
      headers: { ...bearer(refundToken('1')), 'content-type': 'application/json' },
      payload: '{"amount":',
    });
    expect(badJson.statusCode).toBe(400);
    await app.close();
  });
});
