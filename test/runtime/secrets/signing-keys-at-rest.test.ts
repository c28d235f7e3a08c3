/**
 * Signing keys of stores written by earlier versions still open, and are
 * re-sealed in the current (v2) envelope when the service opens them with a
 * master key: keys stored in the clear (no AUTHZ_MASTER_KEY then) and keys in
 * v1 envelopes (one SHA-256 of the master key). Both stores.
 */
import { createCipheriv, createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../runtime/clock.js';
import { thumbprint } from '../../../runtime/permits/key-material.js';
import { KeyRing } from '../../../runtime/permits/key-ring.js';
import { insertSigningKey } from '../../../runtime/store/signing-keys.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../../helpers/postgres.js';
import { START } from '../helpers/app.js';

const SECRET = 'master-key-for-resealing-0123456789';

/** A v1 envelope, as runtime/secrets/sealed-text.ts wrote them before v2. */
function sealV1(plain: string, secret: string): string {
  const key = createHash('sha256').update(`agent-authz signing keys\0${secret}`).digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [
    'aes-256-gcm:v1',
    iv.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
    body.toString('base64url'),
  ].join(':');
}

type Row = { kid: string; private_key: string; encrypted: boolean };

describe.each(STORE_KINDS)('signing keys of older stores (%s)', (kind) => {
  let store: TestStore | undefined;
  afterEach(async () => {
    await store?.dispose();
    store = undefined;
  });
  const rows = () => store!.sql<Row[]>`select kid, private_key, encrypted from signing_keys order by created_at`;

  it('a key stored in the clear opens and is sealed (v2) once opened with a master key', async () => {
    store = await openTestStore(kind);
    const clock = new ManualClock(START);
    const legacy = await KeyRing.open(store.sql, clock, undefined);
    const [before] = await rows();
    expect(before).toMatchObject({ encrypted: false, private_key: expect.stringContaining('PRIVATE KEY') });

    const ring = await KeyRing.open(store.sql, clock, SECRET);
    expect(ring.signer().kid).toBe(legacy.signer().kid);
    const [after] = await rows();
    expect(after!.encrypted).toBe(true);
    expect(after!.private_key).toMatch(/^aes-256-gcm:v2:/);
    expect(after!.private_key).not.toContain('PRIVATE KEY');
    // Sealed now: opening without the master key fails, with it works.
    await expect(KeyRing.open(store.sql, clock, undefined)).rejects.toThrow(/AUTHZ_MASTER_KEY/);
    expect((await KeyRing.open(store.sql, clock, SECRET)).signer().kid).toBe(legacy.signer().kid);

    await ring.rotate();
    const all = await rows();
    expect(all).toHaveLength(2);
    expect(all.every((r) => r.encrypted && r.private_key.startsWith('aes-256-gcm:v2:'))).toBe(true);
  });

  it('a key in a v1 envelope opens and is re-sealed as v2; it is the same key', async () => {
    store = await openTestStore(kind);
    const clock = new ManualClock(START);
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const x = (publicKey.export({ format: 'jwk' }) as { x: string }).x;
    const kid = thumbprint(x);
    const v1 = sealV1(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, SECRET);
    await insertSigningKey(store.sql, {
      kid,
      public_jwk: { kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' },
      private_key: v1,
      encrypted: true,
      created_at: new Date(START),
      retired_at: null,
      expires_at: null,
    });

    const ring = await KeyRing.open(store.sql, clock, SECRET);
    expect(ring.signer().kid).toBe(kid);
    const [row] = await rows();
    expect(row!.kid).toBe(kid);
    expect(row!.private_key).toMatch(/^aes-256-gcm:v2:/);
    expect(row!.private_key).not.toBe(v1);
    // A wrong master key does not open it.
    await expect(KeyRing.open(store.sql, clock, 'another-master-key-0123456789')).rejects.toThrow(
      /does not open the signing keys/,
    );
  });
});
