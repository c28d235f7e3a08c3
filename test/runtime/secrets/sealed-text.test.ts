/**
 * Sealed secrets at rest: new envelopes are v2 (scrypt-derived key, salted),
 * v1 envelopes written by earlier versions (one SHA-256 of the master key)
 * still open, a wrong key fails, two seals of one text differ, and what needs
 * re-sealing is told apart.
 */
import { describe, expect, it } from 'vitest';
import { MasterKeyError, needsReseal, openText, sealText } from '../../../runtime/secrets/sealed-text.js';

const SECRET = 'master-key-for-sealing-0123456789';
const PEM = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIP\n-----END PRIVATE KEY-----\n';

/** Written by the v1 code (runtime/secrets/sealed-text.ts before v2) under LEGACY_SECRET. */
const LEGACY_SECRET = 'legacy-master-key-0123456789';
const LEGACY_PLAIN = '-----BEGIN PRIVATE KEY-----\nv1 fixture\n-----END PRIVATE KEY-----\n';
const LEGACY_V1 =
  'aes-256-gcm:v1:46N73j5gpKPFg-aU:dFBcjDRAMTW3B0WsAszUfg:UmIAGPJrnIkYn-Um_2QGGVz3pvhN05QaX6borUxMRGXeEfUDZEpLrMtC5IZL3XzmhhCRIxVdBbNEbTfaHPb1cw4';

describe('sealed text', () => {
  it('writes v2 envelopes (salted) that open with the same key', () => {
    const sealed = sealText(PEM, SECRET);
    expect(sealed.encrypted).toBe(true);
    const parts = sealed.text.split(':');
    expect(parts.slice(0, 2)).toEqual(['aes-256-gcm', 'v2']);
    expect(parts).toHaveLength(6);
    expect(Buffer.from(parts[2]!, 'base64url')).toHaveLength(16); // the salt
    expect(sealed.text).not.toContain('PRIVATE KEY');
    expect(openText(sealed.text, true, SECRET, 'the signing keys')).toBe(PEM);
  });

  it('seals one text differently each time', () => {
    const a = sealText(PEM, SECRET).text;
    const b = sealText(PEM, SECRET).text;
    expect(a).not.toBe(b);
    expect(openText(a, true, SECRET, 'x')).toBe(openText(b, true, SECRET, 'x'));
  });

  it('still opens v1 envelopes written by earlier versions', () => {
    expect(openText(LEGACY_V1, true, LEGACY_SECRET, 'the signing keys')).toBe(LEGACY_PLAIN);
    expect(() => openText(LEGACY_V1, true, SECRET, 'the signing keys')).toThrow(/does not open the signing keys/);
  });

  it('refuses a wrong key, a missing key, a tampered envelope and an unknown format', () => {
    const sealed = sealText(PEM, SECRET).text;
    expect(() => openText(sealed, true, 'another-master-key-0123456789', 'the signing keys')).toThrow(MasterKeyError);
    expect(() => openText(sealed, true, undefined, 'the signing keys')).toThrow(/set AUTHZ_MASTER_KEY/);
    const parts = sealed.split(':');
    // The salt is bound to the ciphertext: another salt of the right length does not open it.
    const otherSalt = [...parts.slice(0, 2), Buffer.alloc(16, 7).toString('base64url'), ...parts.slice(3)].join(':');
    expect(() => openText(otherSalt, true, SECRET, 'x')).toThrow(/does not open/);
    const body = Buffer.from(parts[5]!, 'base64url');
    body[0] ^= 1;
    expect(() => openText([...parts.slice(0, 5), body.toString('base64url')].join(':'), true, SECRET, 'x')).toThrow(
      /does not open/,
    );
    expect(() => openText('aes-256-gcm:v9:a:b:c', true, SECRET, 'x')).toThrow(/unknown stored format/);
  });

  it('without a master key stores the text as it is', () => {
    expect(sealText(PEM, undefined)).toEqual({ text: PEM, encrypted: false });
    expect(openText(PEM, false, undefined, 'x')).toBe(PEM);
  });

  it('tells what needs re-sealing: clear text or v1 while a master key is set', () => {
    expect(needsReseal(PEM, false, SECRET)).toBe(true);
    expect(needsReseal(LEGACY_V1, true, SECRET)).toBe(true);
    expect(needsReseal(sealText(PEM, SECRET).text, true, SECRET)).toBe(false);
    expect(needsReseal(PEM, false, undefined)).toBe(false);
  });
});
