/** The webhook signature (docs/webhooks-and-events.md#delivery): runtime/webhooks/signature.ts, as published in agent-authz/webhooks. */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { signWebhookBody, verifyWebhookSignature } from '../../../runtime/webhooks/signature.js';
import * as publicEntry from '../../../webhook-receiver/index.js';
import * as standard from '../../../runtime/webhooks/standard-webhooks.js';

const SECRET = 'whsec_3q2-7wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const BODY =
  '{"id":"evt_01J9Z8","object":"event","type":"decision.deny","created_at":"2025-01-02T03:04:05.678Z","account_id":"acc_1","livemode":false,"data":{"decision":{"id":"dec_1"}}}';

/** Computed here, independently of the module under test. */
const reference = (body: string | Uint8Array, secret: string) =>
  `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`;

describe('signWebhookBody', () => {
  it('is sha256= and the lower-case hex HMAC-SHA256 of the body keyed with the whole secret string', () => {
    const signature = signWebhookBody(BODY, SECRET);
    expect(signature).toBe(reference(BODY, SECRET));
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('matches the RFC 4231 test case 2 vector (key "Jefe")', () => {
    expect(signWebhookBody('what do ya want for nothing?', 'Jefe')).toBe(
      'sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
  });

  it('hashes a string as UTF-8, the same as its bytes', () => {
    const body = '{"data":{"note":"café ☕ 𝄞"}}';
    expect(signWebhookBody(body, SECRET)).toBe(signWebhookBody(Buffer.from(body, 'utf8'), SECRET));
    expect(signWebhookBody(new Uint8Array(Buffer.from(body, 'utf8')), SECRET)).toBe(reference(body, SECRET));
  });

  it('keys with the secret including its whsec_ prefix', () => {
    const withoutPrefix = SECRET.slice('whsec_'.length);
    expect(signWebhookBody(BODY, SECRET)).not.toBe(signWebhookBody(BODY, withoutPrefix));
    expect(verifyWebhookSignature(BODY, reference(BODY, withoutPrefix), SECRET)).toBe(false);
  });

  it('refuses an empty secret', () => {
    expect(() => signWebhookBody(BODY, '')).toThrow(TypeError);
    expect(() => verifyWebhookSignature(BODY, reference(BODY, ''), '')).toThrow(TypeError);
  });
});

describe('verifyWebhookSignature', () => {
  const good = reference(BODY, SECRET);
  const hex = good.slice('sha256='.length);

  it('accepts the signature of the exact body, as a string or as bytes', () => {
    expect(verifyWebhookSignature(BODY, good, SECRET)).toBe(true);
    expect(verifyWebhookSignature(Buffer.from(BODY), good, SECRET)).toBe(true);
    expect(verifyWebhookSignature(new Uint8Array(Buffer.from(BODY)), good, SECRET)).toBe(true);
  });

  it('accepts upper-case and mixed-case hex, and surrounding whitespace', () => {
    expect(verifyWebhookSignature(BODY, `sha256=${hex.toUpperCase()}`, SECRET)).toBe(true);
    const mixed = [...hex].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');
    expect(verifyWebhookSignature(BODY, `sha256=${mixed}`, SECRET)).toBe(true);
    expect(verifyWebhookSignature(BODY, ` ${good} `, SECRET)).toBe(true);
  });

  it('accepts an array header holding the one value, refuses several', () => {
    expect(verifyWebhookSignature(BODY, [good], SECRET)).toBe(true);
    expect(verifyWebhookSignature(BODY, [good, good], SECRET)).toBe(false);
    expect(verifyWebhookSignature(BODY, [], SECRET)).toBe(false);
  });

  it('refuses a tampered body, another secret, a re-serialised body', () => {
    expect(verifyWebhookSignature(BODY.replace('decision.deny', 'decision.allow'), good, SECRET)).toBe(false);
    expect(verifyWebhookSignature(`${BODY}\n`, good, SECRET)).toBe(false);
    expect(verifyWebhookSignature(BODY, good, `${SECRET}x`)).toBe(false);
    expect(verifyWebhookSignature(JSON.stringify(JSON.parse(BODY), null, 2), good, SECRET)).toBe(false);
  });

  it.each<[string, string | string[] | undefined | null]>([
    ['missing', undefined],
    ['null', null],
    ['empty', ''],
    ['the scheme only', 'sha256='],
    ['the hex without a scheme', hex],
    ['sha1=', `sha1=${createHmac('sha1', SECRET).update(BODY).digest('hex')}`],
    ['sha1= with a sha256-long value', `sha1=${hex}`],
    ['sha512=', `sha512=${createHmac('sha512', SECRET).update(BODY).digest('hex')}`],
    ['an upper-case scheme', `SHA256=${hex}`],
    ['a space after the =', `sha256= ${hex}`],
    ['one hex digit short', good.slice(0, -1)],
    ['one hex digit long', `${good}0`],
    ['two digests', `${good},${good}`],
    ['a comma-joined repeated header', `${good}, ${good}`],
    ['non-hex characters', `sha256=${'z'.repeat(64)}`],
    ['base64 of the digest', `sha256=${createHmac('sha256', SECRET).update(BODY).digest('base64')}`],
    ['all zeros', `sha256=${'0'.repeat(64)}`],
    ['a very long value', `sha256=${'a'.repeat(100_000)}`],
    ['an empty array', []],
  ])('refuses a header that is %s, without throwing', (_name, header) => {
    expect(() => verifyWebhookSignature(BODY, header, SECRET)).not.toThrow();
    expect(verifyWebhookSignature(BODY, header, SECRET)).toBe(false);
  });

  it('refuses a signature with one hex digit changed', () => {
    for (let i = 0; i < hex.length; i++) {
      const digit = hex[i] === '0' ? '1' : '0';
      expect(verifyWebhookSignature(BODY, `sha256=${hex.slice(0, i)}${digit}${hex.slice(i + 1)}`, SECRET)).toBe(false);
    }
  });

  it('signs, then verifies (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.string({ minLength: 1, maxLength: 64 }), (body, secret) => {
        const signature = signWebhookBody(body, secret);
        expect(signature).toBe(reference(body, secret));
        expect(verifyWebhookSignature(body, signature, secret)).toBe(true);
        expect(
          verifyWebhookSignature(Buffer.from(body), signature.toUpperCase().replace('SHA256=', 'sha256='), secret),
        ).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses the signature once any single byte of the body changes (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 512 }),
        fc.string({ minLength: 1, maxLength: 64 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (body, secret, at, delta) => {
          const signature = signWebhookBody(body, secret);
          const changed = Uint8Array.from(body);
          const i = at % changed.length;
          changed[i] = (changed[i]! + delta) % 256;
          expect(verifyWebhookSignature(changed, signature, secret)).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses a signature made with another secret (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 256 }),
        fc.string({ minLength: 1, maxLength: 64 }),
        fc.string({ minLength: 1, maxLength: 64 }),
        (body, a, b) => {
          fc.pre(a !== b);
          expect(verifyWebhookSignature(body, signWebhookBody(body, a), b)).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('agent-authz/webhooks', () => {
  it('re-exports exactly the service signature functions and the Standard Webhooks ones', () => {
    expect(Object.keys(publicEntry).sort()).toEqual([
      'DEFAULT_TOLERANCE_SECONDS',
      'signStandardWebhook',
      'signWebhookBody',
      'verifyStandardWebhook',
      'verifyWebhookSignature',
    ]);
    expect(publicEntry.verifyWebhookSignature).toBe(verifyWebhookSignature);
    expect(publicEntry.signWebhookBody).toBe(signWebhookBody);
    expect(publicEntry.verifyStandardWebhook).toBe(standard.verifyStandardWebhook);
    expect(publicEntry.signStandardWebhook).toBe(standard.signStandardWebhook);
    expect(publicEntry.DEFAULT_TOLERANCE_SECONDS).toBe(300);
  });
});
