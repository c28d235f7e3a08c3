import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { calculateJwkThumbprint, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../runtime/clock.js';
import { KeyRing, RETIRED_KEY_GRACE_SECONDS } from '../../runtime/permits/key-ring.js';
import { STORE_KINDS, openTestStore } from '../helpers/postgres.js';
import { ADMIN_TOKEN, json, START, startRuntime, type TestRuntime } from './helpers/app.js';
import { postDecision } from '../helpers/kit.js';

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

describe.each(STORE_KINDS)('permit tokens (%s)', (kind) => {
  let rt: TestRuntime;
  const decide = async (body: Record<string, unknown>, key = rt.testKey) => json(await postDecision(rt, body, key));
  const verify = (token: string, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url: '/v1/permits/verify', payload: { token } });
  const jwks = async () => json(await rt.call(null, { method: 'GET', url: '/.well-known/jwks.json' }));

  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { effect: 'allow', actions: ['orders.read'], agents: ['bot-*'] },
      { effect: 'review', actions: ['payments.refund'], agents: ['bot-*'] },
      { effect: 'deny', actions: ['orders.delete'] },
    ]);
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }], 'live');
  });
  afterAll(() => rt.close());

  it('signs allow and review decisions with the header and claims of docs/permits.md#the-token; deny gets none', async () => {
    const d = await decide({ agent_id: 'bot-1', action: 'orders.read', resource: 'order:9', ttl_seconds: 120 });
    expect(d.effect).toBe('allow');
    const header = decodeProtectedHeader(d.permit_token);
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'permit+jwt' });
    const r = await verify(d.permit_token);
    expect(r.statusCode).toBe(200);
    const { claims } = json(r);
    expect(claims).toMatchObject({
      iss: rt.services.config.baseUrl,
      sub: 'bot-1',
      act: 'orders.read',
      res: 'order:9',
      eff: 'allow',
      dec: d.id,
      acc: rt.accountId,
      env: 'test',
      iat: Math.floor(START / 1000),
      exp: Math.floor(Date.parse(d.expires_at) / 1000),
    });
    expect(claims.jti).toMatch(/^pmt_/);
    const review = await decide({ agent_id: 'bot-1', action: 'payments.refund' });
    expect(review.effect).toBe('review');
    const reviewClaims = json(await verify(review.permit_token)).claims;
    expect(reviewClaims.eff).toBe('review');
    expect(reviewClaims).not.toHaveProperty('res');
    expect((await decide({ agent_id: 'bot-1', action: 'orders.delete' })).permit_token).toBeNull();
  });

  it('verifies with only the JWKS and a standard JOSE library; kid is the JWK thumbprint', async () => {
    const d = await decide({ agent_id: 'bot-2', action: 'orders.read' });
    const res = await rt.call(null, { method: 'GET', url: '/.well-known/jwks.json' });
    expect(res.headers['cache-control']).toMatch(/max-age=\d+/);
    const set = json(res) as { keys: Array<Record<string, string>> };
    for (const k of set.keys) {
      expect(k).toMatchObject({ kty: 'OKP', crv: 'Ed25519', use: 'sig', alg: 'EdDSA' });
      expect(await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: k.x! })).toBe(k.kid);
    }
    const { payload, protectedHeader } = await jwtVerify(d.permit_token, createLocalJWKSet(set as never), {
      issuer: rt.services.config.baseUrl,
      algorithms: ['EdDSA'],
      typ: 'permit+jwt',
      currentDate: new Date(START),
    });
    expect(payload.dec).toBe(d.id);
    expect(set.keys.map((k) => k.kid)).toContain(protectedHeader.kid);
  });

  it('answers auth.expired past the TTL', async () => {
    const d = await decide({ agent_id: 'bot-3', action: 'orders.read', ttl_seconds: 5 });
    // The clock only moves forward (as the service's own clock does).
    rt.clock.advance(6);
    const r = await verify(d.permit_token);
    expect(r.statusCode).toBe(401);
    expect(json(r).error.code).toBe('auth.expired');
  });

  it('answers auth.signature_invalid for tampering, foreign keys, other tenants, alg none, HS256 and garbage', async () => {
    const d = await decide({ agent_id: 'bot-4', action: 'orders.read', resource: 'order:1' });
    const [h, p, s] = (d.permit_token as string).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const header = JSON.parse(Buffer.from(h, 'base64url').toString());
    const forged = b64({ ...claims, act: 'orders.delete' });
    const foreign = generateKeyPairSync('ed25519').privateKey;
    const signedBy = (key: typeof foreign, hdr = header, body = claims) => {
      const input = `${b64(hdr)}.${b64(body)}`;
      return `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
    };
    const publicJwk = (await jwks()).keys[0];
    const hsInput = `${b64({ alg: 'HS256', kid: header.kid, typ: 'permit+jwt' })}.${p}`;
    const cases: Array<[string, string, string?]> = [
      ['tampered payload', `${h}.${forged}.${s}`],
      ['tampered signature', `${h}.${p}.${s.slice(0, -4)}AAAA`],
      ['another key with the same kid', signedBy(foreign)],
      ['alg none', `${b64({ alg: 'none', typ: 'permit+jwt' })}.${p}.`],
      ['alg none with a signature', `${b64({ alg: 'none', kid: header.kid, typ: 'permit+jwt' })}.${p}.${s}`],
      [
        'HS256 keyed with the public JWK',
        `${hsInput}.${createHmac('sha256', JSON.stringify(publicJwk)).update(hsInput).digest('base64url')}`,
      ],
      [
        'HS256 keyed with the public x',
        `${hsInput}.${createHmac('sha256', Buffer.from(publicJwk.x, 'base64url')).update(hsInput).digest('base64url')}`,
      ],
      ['empty', ' '],
      ['two parts', `${h}.${p}`],
      ['garbage', 'not-a-token'],
      ['bad base64', `${h}.${p}.@@@`],
      ['other account', d.permit_token, rt.otherKey],
      ['other environment', d.permit_token, rt.liveKey],
    ];
    for (const [name, token, key] of cases) {
      const r = await verify(token, key);
      expect(r.statusCode, name).toBe(401);
      expect(json(r).error.code, name).toBe('auth.signature_invalid');
    }
    // Every refusal counts toward the invalid_permit_tokens alert of the key's account and environment.
    await rt.services.alerts.idle();
    const refusedHere = cases.filter(([, , key]) => key === undefined).length;
    expect(refusedHere).toBeGreaterThan(rt.services.config.alerts.invalidTokenThreshold);
    const alerts = (await rt.getOk('/v1/events?type=security.alert')).data as Array<{ data: Record<string, unknown> }>;
    expect(alerts.map((a) => a.data)).toEqual([
      {
        alert: 'invalid_permit_tokens',
        count: rt.services.config.alerts.invalidTokenThreshold + 1,
        window_seconds: 60,
        threshold: rt.services.config.alerts.invalidTokenThreshold,
      },
    ]);
  });

  it('needs the permits:verify scope and a token field', async () => {
    const key = await rt.keyWith(['decisions:read']);
    expect(json(await verify('x', key)).error.code).toBe('auth.scope_insufficient');
    const r = await rt.call(rt.testKey, { method: 'POST', url: '/v1/permits/verify', payload: {} });
    expect(json(r).error.code, r.body).toBe('validation.missing_field');
  });

  it('rotates: old tokens verify until they expire, new ones carry the new kid, the old key leaves the JWKS after the grace', async () => {
    const before = await decide({ agent_id: 'bot-5', action: 'orders.read', ttl_seconds: 3600 });
    const oldKid = decodeProtectedHeader(before.permit_token).kid;
    const r = await rt.call(null, {
      method: 'POST',
      url: '/admin/signing-keys/rotate',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(r.statusCode).toBe(200);
    const newKid = json(r).kid;
    expect(newKid).not.toBe(oldKid);
    expect((await jwks()).keys.map((k: { kid: string }) => k.kid).sort()).toEqual([oldKid, newKid].sort());
    const after = await decide({ agent_id: 'bot-5', action: 'orders.read' });
    expect(decodeProtectedHeader(after.permit_token).kid).toBe(newKid);
    expect((await verify(before.permit_token)).statusCode).toBe(200);
    expect((await verify(after.permit_token)).statusCode).toBe(200);
    rt.clock.advance(RETIRED_KEY_GRACE_SECONDS + 1);
    expect((await jwks()).keys.map((k: { kid: string }) => k.kid)).toEqual([newKid]);
    expect(json(await verify(before.permit_token)).error.code).toBe('auth.signature_invalid');
  });
});

describe('signing keys at rest', () => {
  it('are sealed with AUTHZ_MASTER_KEY and cannot be opened without it', async () => {
    const store = await openTestStore('postgres');
    try {
      const clock = new ManualClock(START);
      const ring = await KeyRing.open(store.sql, clock, 'a-master-secret-of-some-length');
      const [row] = await store.sql<
        Array<{ private_key: string; encrypted: boolean }>
      >`select private_key, encrypted from signing_keys`;
      expect(row!.encrypted).toBe(true);
      expect(row!.private_key).not.toMatch(/PRIVATE KEY/);
      await expect(KeyRing.open(store.sql, clock, undefined)).rejects.toThrow(/AUTHZ_MASTER_KEY/);
      await expect(KeyRing.open(store.sql, clock, 'another-secret-entirely')).rejects.toThrow(/does not open/);
      const again = await KeyRing.open(store.sql, clock, 'a-master-secret-of-some-length');
      expect(again.signer().kid).toBe(ring.signer().kid);
    } finally {
      await store.dispose();
    }
  });

  it('one key is made even when two processes start at once', async () => {
    const store = await openTestStore('postgres');
    try {
      const clock = new ManualClock(START);
      const [a, b] = await Promise.all([
        KeyRing.open(store.sql, clock, undefined),
        KeyRing.open(store.sql, clock, undefined),
      ]);
      expect(a.signer().kid).toBe(b.signer().kid);
    } finally {
      await store.dispose();
    }
  });
});

describe('permit tokens are not stored', () => {
  it('are answered by POST only; GET and the store have none', async () => {
    const rt = await startRuntime('postgres');
    try {
      await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
      const d = json(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: 'a', action: 'orders.read' },
        }),
      );
      expect(typeof d.permit_token).toBe('string');
      expect((await rt.getOk(`/v1/decisions/${d.id}`)).permit_token).toBeNull();
      const [row] = await rt.store.sql<
        Array<{ permit_token: string | null }>
      >`select permit_token from decisions where id = ${d.id}`;
      expect(row!.permit_token).toBeNull();
    } finally {
      await rt.close();
    }
  });
});
