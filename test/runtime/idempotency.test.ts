/**
 * Idempotency-Key on POST routes under /v1, on both stores: replay with
 * Idempotent-Replayed (a decision with a fresh permit token for the same
 * decision, its budget consumed once), key_reused (other body, other path),
 * in_progress, 4xx stored and 5xx and 429 not, scoping by account and environment,
 * expiry after 24 h on the service clock and the sweep, the key length limit.
 */
import { decodeJwt } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_LOCK_MS, IDEMPOTENCY_TTL_MS, requestFingerprint } from '../../runtime/http/idempotency.js';
import { ringPermitIssuer } from '../../runtime/permits/issuer.js';
import { claimIdempotencyKey } from '../../runtime/store/idempotency.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';

let n = 0;
const newKey = () => `idem-${Date.now().toString(36)}-${++n}`;

describe.each(STORE_KINDS)('Idempotency-Key (%s)', (kind) => {
  let rt: TestRuntime;
  /** Set to make the next permit signing fail: a 500 inside the decision handler. */
  let failNextPermit = false;
  beforeAll(async () => {
    rt = await startRuntime(kind, {
      permits: {
        issue: (row) => {
          if (failNextPermit) {
            failNextPermit = false;
            throw new Error('signing failed (test)');
          }
          return ringPermitIssuer(rt.services.ring, rt.services.config.baseUrl).issue(row);
        },
      },
    });
    await rt.setPolicies([
      { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
      {
        id: 'pol_calls',
        effect: 'allow',
        actions: ['search.run'],
        budget: { unit: 'calls', limit: 10, period: 'daily' },
      },
      { id: 'pol_limited', effect: 'allow', actions: ['orders.export'], rate_limit: { per_minute: 1 } },
    ]);
    await rt.setPolicies([{ id: 'pol_live', effect: 'allow', actions: ['orders.read'] }], 'live');
  });
  afterAll(() => rt.close());

  const post = (url: string, payload: unknown, key: string | null, apiKey = rt.testKey) =>
    rt.call(apiKey, {
      method: 'POST',
      url,
      payload: payload as Record<string, unknown>,
      headers: key === null ? {} : { 'idempotency-key': key },
    });
  const decide = (body: Record<string, unknown>, key: string | null, apiKey?: string) =>
    post('/v1/decisions', body, key, apiKey);
  const replayed = (r: LightMyRequestResponse) => r.headers['idempotent-replayed'];
  const storedKeys = async () =>
    (await rt.store.sql<Array<{ n: number }>>`select count(*)::int as n from idempotency_keys`)[0]!.n;

  it('replays a decision: same decision, a fresh permit token with the same claims, header Idempotent-Replayed', async () => {
    const key = newKey();
    const body = { agent_id: 'idem-agent', action: 'orders.read', resource: 'order:1' };
    const first = await decide(body, key);
    expect(first.statusCode).toBe(200);
    expect(replayed(first)).toBeUndefined();
    const again = await decide({ resource: 'order:1', action: 'orders.read', agent_id: 'idem-agent' }, key); // same body, other key order
    expect(again.statusCode).toBe(200);
    expect(replayed(again)).toBe('true');
    expect(again.headers['content-type']).toMatch(/^application\/json/);
    expect(again.headers['request-id']).not.toBe(first.headers['request-id']);
    const [a, b] = [json(first), json(again)];
    expect({ ...b, permit_token: 'x' }).toEqual({ ...a, permit_token: 'x' });
    expect(a.permit_token).toMatch(/^eyJ/);
    expect(b.permit_token).toMatch(/^eyJ/);
    expect(b.permit_token).not.toBe(a.permit_token);
    const [ca, cb] = [decodeJwt(a.permit_token), decodeJwt(b.permit_token)];
    expect({ ...cb, jti: 'x' }).toEqual({ ...ca, jti: 'x' });
    expect(cb.dec).toBe(a.id);
    expect(cb.jti).not.toBe(ca.jti);
    // The fresh token verifies.
    const verified = await post('/v1/permits/verify', { token: b.permit_token }, null);
    expect(verified.statusCode, verified.body).toBe(200);
    // One decision stored, not two.
    expect((await rt.getOk('/v1/decisions?agent_id=idem-agent')).data.map((d: { id: string }) => d.id)).toEqual([a.id]);
  });

  it('stores no permit token', async () => {
    const key = newKey();
    const first = json(await decide({ agent_id: 'idem-token', action: 'orders.read' }, key));
    const rows = await rt.store.sql<
      Array<{ body: string }>
    >`select body from idempotency_keys where idempotency_key = ${key}`;
    expect(rows).toHaveLength(1);
    expect(rows[0]!.body).not.toContain(first.permit_token);
    expect(JSON.parse(rows[0]!.body).permit_token).toBeNull();
  });

  it('consumes a budget once for a replayed decision', async () => {
    const key = newKey();
    const body = { agent_id: 'idem-budget', action: 'search.run' };
    expect((await decide(body, key)).statusCode).toBe(200);
    expect(replayed(await decide(body, key))).toBe('true');
    expect(replayed(await decide(body, key))).toBe('true');
    const budgets = (await rt.getOk('/v1/budgets?agent_id=idem-budget')).data as Array<{
      policy_id: string;
      consumed: number;
    }>;
    expect(budgets.find((x) => x.policy_id === 'pol_calls')!.consumed).toBe(1);
    // Without a key, each request is a decision of its own.
    await decide(body, null);
    const after = (await rt.getOk('/v1/budgets?agent_id=idem-budget')).data as Array<{
      policy_id: string;
      consumed: number;
    }>;
    expect(after.find((x) => x.policy_id === 'pol_calls')!.consumed).toBe(2);
  });

  it('refuses the key with another body or another path: 400 idempotency.key_reused', async () => {
    const key = newKey();
    expect((await decide({ agent_id: 'idem-reuse', action: 'orders.read' }, key)).statusCode).toBe(200);
    const otherBody = await decide({ agent_id: 'idem-reuse', action: 'orders.read', resource: 'order:2' }, key);
    expect(otherBody.statusCode).toBe(400);
    expect(json(otherBody).error.code).toBe('idempotency.key_reused');
    const otherPath = await post('/v1/webhooks', { url: 'http://127.0.0.1:9/hooks' }, key);
    expect(otherPath.statusCode).toBe(400);
    expect(json(otherPath).error.code).toBe('idempotency.key_reused');
    expect((await rt.getOk('/v1/webhooks?limit=100')).data).toHaveLength(0);
  });

  it('stores 4xx answers of the handler and replays them', async () => {
    const key = newKey();
    const policy = { name: 'bad', effect: 'allow', actions: ['Not An Action'] };
    const first = await post('/v1/policies', policy, key);
    expect(first.statusCode).toBe(400);
    expect(json(first).error.code).toBe('validation.invalid_policy');
    const again = await post('/v1/policies', policy, key);
    expect(again.statusCode).toBe(400);
    expect(replayed(again)).toBe('true');
    expect(json(again)).toEqual(json(first));
  });

  it('does not store a 429: the key is released and a retry runs again', async () => {
    const body = { agent_id: 'idem-limited', action: 'orders.export' };
    expect((await decide(body, null)).statusCode).toBe(200); // uses the one request per minute
    const key = newKey();
    const limited = await decide(body, key);
    expect(limited.statusCode).toBe(429);
    expect(await rt.store.sql`select 1 from idempotency_keys where idempotency_key = ${key}`).toHaveLength(0);
    rt.clock.advance(60);
    const retried = await decide(body, key);
    expect(retried.statusCode).toBe(200);
    expect(replayed(retried)).toBeUndefined();
  });

  it('does not store a 5xx: the key is released and a retry runs again', async () => {
    const key = newKey();
    const body = { agent_id: 'idem-500', action: 'orders.read' };
    failNextPermit = true;
    const failed = await decide(body, key);
    expect(failed.statusCode).toBe(500);
    expect(json(failed).error.code).toBe('internal.error');
    expect(await rt.store.sql`select 1 from idempotency_keys where idempotency_key = ${key}`).toHaveLength(0);
    const retried = await decide(body, key);
    expect(retried.statusCode).toBe(200);
    expect(replayed(retried)).toBeUndefined();
    expect(replayed(await decide(body, key))).toBe('true');
  });

  it('scopes keys by account and environment', async () => {
    const key = newKey();
    const body = { agent_id: 'idem-tenant', action: 'orders.read' };
    const mine = json(await decide(body, key));
    const otherAccount = await decide(body, key, rt.otherKey);
    expect(otherAccount.statusCode).toBe(200);
    expect(replayed(otherAccount)).toBeUndefined();
    expect(json(otherAccount).id).not.toBe(mine.id);
    const live = await decide(body, key, rt.liveKey);
    expect(live.statusCode).toBe(200);
    expect(replayed(live)).toBeUndefined();
    expect(json(live).id).not.toBe(mine.id);
    expect(json(live).livemode).toBe(true);
  });

  it('answers 409 idempotency.in_progress while a request with the key runs', async () => {
    const key = newKey();
    const body = { agent_id: 'idem-busy', action: 'orders.read' };
    if (kind === 'postgres') {
      // Two requests at once; the decisions table is locked so the one that
      // claims the key cannot finish until the other has been answered.
      const lock = await rt.store.sql.reserve();
      try {
        await lock`begin`;
        await lock`lock table decisions in access exclusive mode`;
        const a = decide(body, key);
        const b = decide(body, key);
        const early = await Promise.race([a, b]);
        expect(early.statusCode).toBe(409);
        expect(json(early).error.code).toBe('idempotency.in_progress');
        await lock`commit`;
        expect([(await a).statusCode, (await b).statusCode].sort()).toEqual([200, 409]);
      } finally {
        lock.release();
      }
    } else {
      // One connection serves the embedded store, so nothing can hold a request
      // inside its handler: the key is claimed as a request in flight on
      // another process would (the same store call the hook makes).
      const scope = { accountId: rt.accountId, environment: 'test', key };
      const print = requestFingerprint('POST', '/v1/decisions', body);
      expect(
        await claimIdempotencyKey(rt.store.sql, scope, print, rt.clock.now(), IDEMPOTENCY_LOCK_MS, IDEMPOTENCY_TTL_MS),
      ).toBe(true);
      const busy = await decide(body, key);
      expect(busy.statusCode).toBe(409);
      expect(json(busy).error.code).toBe('idempotency.in_progress');
    }
    // Once answered, the key replays.
    const after = await decide(body, key);
    if (kind === 'postgres') {
      expect(after.statusCode).toBe(200);
      expect(replayed(after)).toBe('true');
    } else {
      // The claim's "process" never answered: past its lock, a retry with the same body takes the key over and runs.
      expect(after.statusCode).toBe(409);
      rt.clock.advance(IDEMPOTENCY_LOCK_MS / 1000);
      const taken = await decide(body, key);
      expect(taken.statusCode).toBe(200);
      expect(replayed(taken)).toBeUndefined();
      expect(replayed(await decide(body, key))).toBe('true');
    }
  });

  it('keeps keys 24 h (service clock): then the key runs anew, and expired keys are swept', async () => {
    const key = newKey();
    const body = { agent_id: 'idem-expiry', action: 'orders.read' };
    const first = json(await decide(body, key));
    rt.clock.advance(24 * 3600 - 1);
    const within = await decide(body, key);
    expect(replayed(within)).toBe('true');
    expect(json(within).id).toBe(first.id);
    rt.clock.advance(1);
    const after = await decide(body, key);
    expect(after.statusCode).toBe(200);
    expect(replayed(after)).toBeUndefined();
    expect(json(after).id).not.toBe(first.id);
    // Every other key of this file is older than 24 h now: the next keyed request sweeps them.
    expect(await storedKeys()).toBeGreaterThan(1);
    rt.clock.advance(120);
    const fresh = newKey();
    await decide(body, fresh);
    const left = await rt.store.sql<Array<{ idempotency_key: string }>>`select idempotency_key from idempotency_keys`;
    expect(left.map((r) => r.idempotency_key).sort()).toEqual([key, fresh].sort());
  });

  it('refuses a key over 255 characters, and accepts 255', async () => {
    const body = { agent_id: 'idem-long', action: 'orders.read' };
    const long = await decide(body, 'k'.repeat(256));
    expect(long.statusCode).toBe(400);
    expect(json(long).error.code).toBe('validation.invalid_field');
    expect((await decide(body, `${'k'.repeat(250)}${n++}`.slice(0, 255))).statusCode).toBe(200);
  });

  it('costs nothing without the header: no key is stored', async () => {
    const before = await storedKeys();
    for (let i = 0; i < 3; i++)
      expect((await decide({ agent_id: 'idem-none', action: 'orders.read' }, null)).statusCode).toBe(200);
    expect(await storedKeys()).toBe(before);
  });

  it('covers the other POST routes (confirm replays the confirmation, not a 409)', async () => {
    const d = json(await decide({ agent_id: 'idem-confirm', action: 'orders.read' }, null));
    const key = newKey();
    const first = await post(`/v1/decisions/${d.id}/confirm`, {}, key);
    expect(first.statusCode).toBe(200);
    const again = await post(`/v1/decisions/${d.id}/confirm`, {}, key);
    expect(again.statusCode).toBe(200);
    expect(replayed(again)).toBe('true');
    expect(json(again)).toEqual(json(first));
    // Without the key, a second confirm is a 409 (docs/api.md#post-v1decisionsidconfirm-and-reject).
    expect((await post(`/v1/decisions/${d.id}/confirm`, {}, null)).statusCode).toBe(409);
  });
});

describe('Idempotency-Key with AUTHZ_MASTER_KEY', () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime('embedded', { config: { masterKey: 'master-key-for-idempotency-0123' } });
  });
  afterAll(() => rt.close());

  it('seals stored answers (a webhook secret is not stored in clear) and replays them', async () => {
    const key = 'idem-webhook-1';
    const first = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: 'http://127.0.0.1:9/hooks' },
      headers: { 'idempotency-key': key },
    });
    expect(first.statusCode).toBe(201);
    const secret = json(first).secret as string;
    const [row] = await rt.store.sql<
      Array<{ body: string; body_encrypted: boolean }>
    >`select body, body_encrypted from idempotency_keys where idempotency_key = ${key}`;
    expect(row!.body_encrypted).toBe(true);
    expect(row!.body).not.toContain(secret);
    const again = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: 'http://127.0.0.1:9/hooks' },
      headers: { 'idempotency-key': key },
    });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(json(again)).toEqual(json(first));
    expect((await rt.getOk('/v1/webhooks')).data).toHaveLength(1);
  });
});
