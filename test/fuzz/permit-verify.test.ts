/**
 * POST /v1/permits/verify under fuzzing, on both stores: random strings and
 * mutations of a real token (a changed character, swapped or repeated segments,
 * another alg, re-signed claims, a non-canonical base64url spelling of the same
 * bytes, huge tokens) are always refused with 401 auth.signature_invalid (or
 * auth.expired), non-strings with a 400 (413 when the body is over the 1 MiB
 * limit), never a 5xx and never `valid: true`.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ALERT_THRESHOLDS } from '../../runtime/alerts/security-alerts.js';
import { BODY_LIMIT } from '../../runtime/app.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { expectContractAnswer } from './helpers/contract.js';
import { weirdValue } from './helpers/mutations.js';

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const unb64 = (s: string) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as Record<string, unknown>;

const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

type Mutation = (token: string) => string;

/** Mutations of a valid token; each returns a token that must not verify. */
function mutations(): fc.Arbitrary<{ name: string; apply: Mutation }> {
  const at = fc.nat();
  const char = fc.oneof(
    fc.constantFrom(...B64URL.split('')),
    fc.constantFrom('.', '=', '+', '/', ' ', '\u0000', 'é', '%'),
  );
  return fc.oneof(
    fc.tuple(at, char).map(([i, c]) => ({
      name: `char ${i}->${JSON.stringify(c)}`,
      apply: (t: string) => {
        const p = i % t.length;
        return t.slice(0, p) + c + t.slice(p + 1);
      },
    })),
    fc.tuple(at, fc.integer({ min: 1, max: 4 })).map(([i, n]) => ({
      name: `delete ${n} at ${i}`,
      apply: (t: string) => t.slice(0, i % t.length) + t.slice((i % t.length) + n),
    })),
    fc.tuple(at, fc.string({ minLength: 1, maxLength: 4 })).map(([i, s]) => ({
      name: `insert ${JSON.stringify(s)} at ${i}`,
      apply: (t: string) => t.slice(0, i % t.length) + s + t.slice(i % t.length),
    })),
    fc
      .constantFrom<[number, number, number]>([1, 0, 2], [0, 2, 1], [2, 1, 0], [0, 0, 2], [1, 1, 2], [0, 1, 1])
      .map((order) => ({
        name: `segments ${order.join('')}`,
        apply: (t: string) => order.map((i) => t.split('.')[i]).join('.'),
      })),
    fc
      .constantFrom('', '.x', '..', `.${'A'.repeat(10)}`)
      .map((extra) => ({ name: `append ${extra}`, apply: (t: string) => t + extra })),
    fc.constantFrom('none', 'HS256', 'RS256', 'ES256', 'EdDSA ', 'eddsa', 'Ed25519', null, 1).map((alg) => ({
      name: `alg ${JSON.stringify(alg)}`,
      apply: (t: string) => {
        const [h, p, s] = t.split('.') as [string, string, string];
        return `${b64({ ...unb64(h), alg })}.${p}.${alg === 'none' ? '' : s}`;
      },
    })),
    fc.constantFrom('typ', 'kid').map((field) => ({
      name: `header without ${field}`,
      apply: (t: string) => {
        const [h, p, s] = t.split('.') as [string, string, string];
        const header = unb64(h);
        delete header[field];
        return `${b64(header)}.${p}.${s}`;
      },
    })),
    fc
      .constantFrom<[string, unknown]>(
        ['exp', 4102444800],
        ['acc', 'acc_other'],
        ['env', 'live'],
        ['eff', 'allow'],
        ['act', 'orders.delete'],
        ['iss', 'http://evil'],
        ['sub', 'root'],
      )
      .map(([k, v]) => ({
        name: `claim ${k}=${JSON.stringify(v)} with the old signature`,
        apply: (t: string) => {
          const [h, p, s] = t.split('.') as [string, string, string];
          return `${h}.${b64({ ...unb64(p), [k]: v })}.${s}`;
        },
      })),
    fc.constant({
      name: 'HS256 keyed with the public key (x)',
      apply: (t: string) => {
        const [h, p] = t.split('.') as [string, string];
        const header = b64({ ...unb64(h), alg: 'HS256' });
        return `${header}.${p}.${createHmac('sha256', unb64(h).kid as string)
          .update(`${header}.${p}`)
          .digest('base64url')}`;
      },
    }),
    // The same signature bytes spelled differently: the last character carries
    // 2 bits of the 64-byte signature and 4 unused bits a lenient decoder ignores.
    fc.integer({ min: 1, max: 15 }).map((delta) => ({
      name: `signature's last character +${delta} in its unused bits`,
      apply: (t: string) => {
        const last = B64URL.indexOf(t[t.length - 1]!);
        return t.slice(0, -1) + B64URL[(last & ~15) | ((last + delta) & 15)]!;
      },
    })),
    fc.constantFrom('=', '==').map((pad) => ({ name: `padding ${pad}`, apply: (t: string) => t + pad })),
    fc
      .integer({ min: 1000, max: 16000 })
      .map((n) => ({ name: `huge (${n} more)`, apply: (t: string) => t + 'A'.repeat(n) })),
  );
}

describe.each(STORE_KINDS)('permit verify fuzz (%s store)', (kind) => {
  let rt: TestRuntime;
  let token: string;
  const verify = (payload: unknown) =>
    rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/permits/verify',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(payload),
    });

  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { alerts: { ...DEFAULT_ALERT_THRESHOLDS, invalidTokenThreshold: 1e9 } } });
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
    const d = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'fuzz-bot', action: 'orders.read', resource: 'order:1' },
      }),
    );
    token = d.permit_token;
  });
  afterAll(() => rt?.close());

  it('the unmutated token verifies', async () => {
    const r = await verify({ token });
    expect(r.statusCode, r.body).toBe(200);
    expect(json(r).valid).toBe(true);
  });

  it('a mutated token is always refused with 401 (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(mutations(), { minLength: 1, maxLength: 3 }), async (ms) => {
        // A structural mutation of an already damaged token may not apply: it then leaves it as is.
        const mutated = ms.reduce((t, m) => {
          try {
            return m.apply(t);
          } catch {
            return t;
          }
        }, token);
        fc.pre(mutated !== token);
        const what = `${ms.map((m) => m.name).join(' + ')}: ${mutated.slice(0, 200)}`;
        const r = await verify({ token: mutated });
        const code = expectContractAnswer(r, what);
        if (mutated.length === 0 || mutated.length > 16384 || UNSTORABLE.test(mutated)) {
          // Empty, over the schema's 16 KiB, or a character no body may carry (NUL, lone surrogate).
          expect(r.statusCode, what).toBe(400);
        } else {
          expect(r.statusCode, what).toBe(401);
          expect(['auth.signature_invalid', 'auth.expired'], what).toContain(code);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('random strings are refused with 401 (or 400 when empty or over 16 KiB)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc.string({ unit: 'binary', maxLength: 100 }),
          fc.array(fc.base64String({ maxLength: 120 }), { minLength: 1, maxLength: 4 }).map((a) => a.join('.')),
        ),
        async (s) => {
          const r = await verify({ token: s });
          const code = expectContractAnswer(r, JSON.stringify(s).slice(0, 200));
          expect(r.statusCode).not.toBe(200);
          if (r.statusCode === 401) expect(['auth.signature_invalid', 'auth.expired']).toContain(code);
          else expect(r.statusCode).toBe(400);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a token that is not a string: 400 (413 validation.body_too_large when the body is over the limit)', async () => {
    await fc.assert(
      fc.asyncProperty(
        weirdValue.filter((v) => typeof v !== 'string'),
        async (v) => {
          const r = await verify({ token: v });
          const code = expectContractAnswer(r, JSON.stringify(v).slice(0, 200));
          const bodyBytes = Buffer.byteLength(JSON.stringify({ token: v }));
          if (bodyBytes > BODY_LIMIT) {
            expect(r.statusCode).toBe(413);
            expect(code).toBe('validation.body_too_large');
          } else expect(r.statusCode).toBe(400);
        },
      ),
      // the case a CI run met: an array of long strings, over 1 MiB in all
      { numRuns: 60, examples: [[Array.from({ length: 4 }, () => 'é'.repeat(300_000))]] },
    );
  });
});
