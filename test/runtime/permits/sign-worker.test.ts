/**
 * AUTHZ_SIGN_WORKER=1 (runtime/permits/sign-worker.ts): the worker thread's
 * tokens are byte-identical to the event loop's, the requests of one turn go in
 * one message, a failed or closed thread leaves nothing unanswered, and the
 * decision path's tokens verify on both stores.
 */
import { verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyMaterial, type KeyMaterial } from '../../../runtime/permits/key-material.js';
import type { KeyRing } from '../../../runtime/permits/key-ring.js';
import { permitSigningInput, signPermit, type PermitClaims } from '../../../runtime/permits/sign.js';
import { sharedSignWorker, SignWorker } from '../../../runtime/permits/sign-worker.js';
import { STORE_KINDS } from '../../helpers/postgres.js';
import { postDecision } from '../../helpers/kit.js';
import { json, startRuntime, type TestRuntime } from '../helpers/app.js';

const claimsOf = (k: number, i: number): PermitClaims => ({
  iss: 'http://127.0.0.1:8080',
  sub: `agent-${k}-${i}`,
  act: 'orders.read',
  eff: i % 3 ? 'allow' : 'review',
  dec: `dec_${k}_${i}`,
  acc: 'acc_1',
  env: 'test',
  iat: 1_700_000_000 + i,
  exp: 1_700_000_300 + i,
  jti: `pmt_${k}_${i}`,
  ...(i % 2 ? { res: `order:${i}` } : {}),
});

const ringOf = (material: KeyMaterial) => ({ signer: () => material }) as unknown as KeyRing;

describe('SignWorker', () => {
  const signer = new SignWorker();
  afterAll(() => signer.close());

  it('signs the same bytes as the event loop, for two keys in one batch, and they verify', async () => {
    const keys = [generateKeyMaterial(), generateKeyMaterial()];
    const jobs = keys.flatMap((key, k) => Array.from({ length: 150 }, (_, i) => ({ key, claims: claimsOf(k, i) })));
    const before = { ...signer.stats };
    const tokens = await Promise.all(jobs.map((j) => signer.sign(permitSigningInput(j.claims, j.key.kid), j.key)));
    expect(signer.stats.batches - before.batches).toBe(1);
    expect(signer.stats.tokens - before.tokens).toBe(300);
    expect(signer.stats.fallback).toBe(before.fallback);
    tokens.forEach((token, i) => {
      const { key, claims } = jobs[i]!;
      expect(token).toBe(signPermit(claims, ringOf(key)));
      const [h, p, s] = token.split('.');
      expect(verify(null, Buffer.from(`${h}.${p}`), key.publicKey, Buffer.from(s!, 'base64url'))).toBe(true);
    });
  });

  it('sends one message per event-loop turn, not one per token', async () => {
    const key = generateKeyMaterial();
    const before = signer.stats.batches;
    for (let turn = 0; turn < 3; turn++)
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => signer.sign(permitSigningInput(claimsOf(turn, i), key.kid), key)),
      );
    expect(signer.stats.batches - before).toBe(3);
  });

  it('signs on the event loop what a closed thread had not answered, and everything after', async () => {
    const closing = new SignWorker();
    const key = generateKeyMaterial();
    const input = (i: number) => permitSigningInput(claimsOf(9, i), key.kid);
    const queued = Array.from({ length: 5 }, (_, i) => closing.sign(input(i), key));
    // The batch leaves at the end of this turn; the thread is ended before it can answer.
    await new Promise((r) => setImmediate(r));
    expect(closing.stats.batches).toBe(1);
    await closing.close();
    const after = closing.sign(input(5), key);
    const tokens = await Promise.all([...queued, after]);
    tokens.forEach((t, i) => expect(t).toBe(signPermit(claimsOf(9, i), ringOf(key))));
    expect(closing.stats.fallback).toBe(6);
  });
});

describe.each(STORE_KINDS)('decisions with AUTHZ_SIGN_WORKER=1 (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { signWorker: true } });
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
  });
  afterAll(() => rt.close());

  it('answers tokens signed by the thread that POST /v1/permits/verify accepts', async () => {
    const before = sharedSignWorker().stats.tokens;
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        postDecision(rt, { agent_id: `bot-${i}`, action: 'orders.read', resource: `order:${i}` }),
      ),
    );
    expect(sharedSignWorker().stats.tokens - before).toBe(8);
    for (const [i, a] of answers.entries()) {
      const d = json(a);
      expect(d.effect).toBe('allow');
      const r = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/permits/verify',
        payload: { token: d.permit_token },
      });
      expect(r.statusCode).toBe(200);
      expect(json(r).claims).toMatchObject({ sub: `bot-${i}`, dec: d.id, res: `order:${i}` });
    }
  });
});
