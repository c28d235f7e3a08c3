/**
 * POST/GET /v1/decisions and confirm/reject over HTTP: the decision body of
 * docs/api.md#decisions, validation, the confirm/reject transitions, pagination, tenant
 * isolation (a property) and evaluation step 2 (revoked agents), on both stores.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../runtime/domain/accounts.js';
import type { PermitIssuer } from '../../runtime/domain/decision-ports.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { ADMIN_TOKEN, START, json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type ListedItem, agent, expectError, postDecision, decide as kitDecide } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

/** Permit signing is not under test here (a PermitIssuer of runtime/domain/decision-ports.ts): a stub shows where tokens go. */
const stubPermits: PermitIssuer = { issue: (d) => `stub-permit.${d.id}` };

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const DECISION_FIELDS = [
  'id',
  'object',
  'effect',
  'reason',
  'agent_id',
  'action',
  'resource',
  'amount',
  'policy_id',
  'status',
  'evaluated_at',
  'expires_at',
  'ttl_seconds',
  'permit_token',
  'livemode',
  'metadata',
];

/** A fresh agent id per call, so tests never share rows. */

/** `answered`: the POST response, the only place a permit token appears (GET and lists show null). */
function expectDecisionShape(d: JsonObject, answered = true): void {
  for (const f of DECISION_FIELDS) expect(d, `field ${f}`).toHaveProperty(f);
  expect(d.id).toMatch(/^dec_[0-9A-Za-z]+$/);
  expect(d.object).toBe('decision');
  expect(['allow', 'deny', 'review']).toContain(d.effect);
  expect(typeof d.reason).toBe('string');
  expect(d.reason).toMatch(/^[a-z_]+\.[a-z_]+$/);
  expect(d.evaluated_at).toMatch(ISO_MS);
  expect(d.expires_at).toMatch(ISO_MS);
  expect(Number.isInteger(d.ttl_seconds)).toBe(true);
  expect(Date.parse(d.expires_at) - Date.parse(d.evaluated_at)).toBe(d.ttl_seconds * 1000);
  expect(typeof d.livemode).toBe('boolean');
  expect(Array.isArray(d.metadata.matched_policy_ids)).toBe(true);
  expect(Array.isArray(d.metadata.warnings)).toBe(true);
  if (d.effect === 'deny') {
    expect(d.status).toBe('denied');
    expect(d.permit_token).toBeNull();
  } else {
    expect(d.status).toBe('pending');
    if (answered) expect(typeof d.permit_token).toBe('string');
    else expect(d.permit_token).toBeNull();
  }
}

describe.each(STORE_KINDS)('decisions over HTTP (%s)', (kind) => {
  let rt: TestRuntime;
  /** Other account, live environment. */
  let otherLiveKey: string;

  const decide = (payload: unknown, key = rt.testKey) => postDecision(rt, payload as object, key);
  const decideOk = (payload: Record<string, unknown>, key = rt.testKey) => kitDecide(rt, payload, key);
  const resolve = (id: string, verb: 'confirm' | 'reject', payload?: object, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url: `/v1/decisions/${id}/${verb}`, ...(payload === undefined ? {} : { payload }) });
  const getDecision = (id: string, key = rt.testKey) => rt.call(key, { method: 'GET', url: `/v1/decisions/${id}` });

  beforeAll(async () => {
    rt = await startRuntime(kind, { permits: stubPermits });
    otherLiveKey = (await createApiKey(rt.store.sql, rt.otherAccountId, 'live', ['*'], new Date(START))).key;
    await rt.setPolicies([
      { id: 'pol_orders_read', effect: 'allow', actions: ['orders.read'] },
      { id: 'pol_refund_review', effect: 'review', actions: ['payments.refund'] },
      { id: 'pol_orders_delete', effect: 'deny', actions: ['orders.delete'] },
      { id: 'pol_reports_off', effect: 'allow', actions: ['reports.export'], state: 'disabled' },
      { id: 'pol_files_public', effect: 'allow', actions: ['files.read'], resources: ['file:public/*'] },
      { id: 'pol_docs_allow', effect: 'allow', actions: ['docs.write'], priority: 10 },
      { id: 'pol_docs_deny', effect: 'deny', actions: ['docs.write'], priority: 20 },
    ]);
    // The live environment allows orders.read too (so live decisions can be pending).
    await rt.setPolicies([{ id: 'pol_live_orders', effect: 'allow', actions: ['orders.read'] }], 'live');
  });
  afterAll(() => rt.close());

  describe('bodies', () => {
    it('allow: every field of docs/api.md#post-v1decisions, policy.matched, pending, default TTL 300', async () => {
      const a = agent('allow');
      const d = await decideOk({
        agent_id: a,
        action: 'orders.read',
        resource: 'order:1',
        amount: 12.5,
        context: { channel: 'chat' },
      });
      expectDecisionShape(d);
      expect(d).toMatchObject({
        object: 'decision',
        effect: 'allow',
        reason: 'policy.matched',
        agent_id: a,
        action: 'orders.read',
        resource: 'order:1',
        amount: 12.5,
        policy_id: 'pol_orders_read',
        status: 'pending',
        ttl_seconds: 300,
        permit_token: `stub-permit.${d.id}`,
        livemode: false,
        metadata: { matched_policy_ids: ['pol_orders_read'], warnings: [] },
      });
      expect(d.evaluated_at).toBe(new Date(rt.clock.now()).toISOString());
      expect(Date.parse(d.expires_at) - Date.parse(d.evaluated_at)).toBe(300_000);
    });

    it('omitted resource and amount are null', async () => {
      const d = await decideOk({ agent_id: agent('nulls'), action: 'orders.read' });
      expectDecisionShape(d);
      expect(d.resource).toBeNull();
      expect(d.amount).toBeNull();
    });

    it('review: HTTP 200, pending, with a permit token', async () => {
      const d = await decideOk({ agent_id: agent('review'), action: 'payments.refund', resource: 'order:9' });
      expectDecisionShape(d);
      expect(d).toMatchObject({
        effect: 'review',
        reason: 'policy.matched',
        policy_id: 'pol_refund_review',
        status: 'pending',
      });
      expect(d.permit_token).toBe(`stub-permit.${d.id}`);
    });

    it('deny by a policy: HTTP 200, status denied, no permit token', async () => {
      const d = await decideOk({ agent_id: agent('deny'), action: 'orders.delete' });
      expectDecisionShape(d);
      expect(d).toMatchObject({
        effect: 'deny',
        reason: 'policy.matched',
        policy_id: 'pol_orders_delete',
        status: 'denied',
        permit_token: null,
        metadata: { matched_policy_ids: ['pol_orders_delete'], warnings: [] },
      });
    });

    it('default deny: policy.not_found', async () => {
      const d = await decideOk({ agent_id: agent('nf'), action: 'unknown.thing' });
      expectDecisionShape(d);
      expect(d).toMatchObject({
        effect: 'deny',
        reason: 'policy.not_found',
        policy_id: null,
        status: 'denied',
        permit_token: null,
      });
      expect(d.metadata.matched_policy_ids).toEqual([]);
    });

    it('only a disabled policy would match: policy.disabled', async () => {
      const d = await decideOk({ agent_id: agent('dis'), action: 'reports.export' });
      expectDecisionShape(d);
      expect(d).toMatchObject({
        effect: 'deny',
        reason: 'policy.disabled',
        policy_id: null,
        status: 'denied',
        permit_token: null,
      });
    });

    it('allow rule matched on action but not on resource: resource.not_allowed', async () => {
      const d = await decideOk({ agent_id: agent('res'), action: 'files.read', resource: 'file:private/x' });
      expectDecisionShape(d);
      expect(d).toMatchObject({
        effect: 'deny',
        reason: 'resource.not_allowed',
        policy_id: null,
        status: 'denied',
        permit_token: null,
      });
      const ok = await decideOk({ agent_id: agent('res'), action: 'files.read', resource: 'file:public/x' });
      expect(ok).toMatchObject({ effect: 'allow', policy_id: 'pol_files_public' });
    });

    it('conflicting effects: the lowest priority wins with a policy.conflict warning', async () => {
      const d = await decideOk({ agent_id: agent('conf'), action: 'docs.write' });
      expectDecisionShape(d);
      expect(d).toMatchObject({ effect: 'allow', reason: 'policy.matched', policy_id: 'pol_docs_allow' });
      expect(d.metadata.matched_policy_ids).toEqual(['pol_docs_allow', 'pol_docs_deny']);
      expect(d.metadata.warnings).toHaveLength(1);
      const w = d.metadata.warnings[0];
      expect(Object.keys(w).sort()).toEqual(['code', 'message', 'policy_ids']);
      expect(w.code).toBe('policy.conflict');
      expect(typeof w.message).toBe('string');
      expect(w.message.length).toBeGreaterThan(0);
      expect([...w.policy_ids].sort()).toEqual(['pol_docs_allow', 'pol_docs_deny']);
    });

    it('custom ttl_seconds, 1 and 3600 included: expires_at - evaluated_at equals the TTL', async () => {
      for (const ttl of [1, 60, 3600]) {
        const d = await decideOk({ agent_id: agent('ttl'), action: 'orders.read', ttl_seconds: ttl });
        expectDecisionShape(d);
        expect(d.ttl_seconds).toBe(ttl);
        expect(Date.parse(d.expires_at) - Date.parse(d.evaluated_at)).toBe(ttl * 1000);
      }
      const deny = await decideOk({ agent_id: agent('ttl'), action: 'orders.delete', ttl_seconds: 42 });
      expect(deny.ttl_seconds).toBe(42);
      expect(Date.parse(deny.expires_at) - Date.parse(deny.evaluated_at)).toBe(42_000);
    });

    it('a live key gives livemode true', async () => {
      const d = await decideOk({ agent_id: agent('live'), action: 'orders.read' }, rt.liveKey);
      expectDecisionShape(d);
      expect(d).toMatchObject({ livemode: true, effect: 'allow', policy_id: 'pol_live_orders' });
    });

    it('GET /v1/decisions/:id returns the same body', async () => {
      const d = await decideOk({ agent_id: agent('get'), action: 'payments.refund' });
      const g = await getDecision(d.id);
      expect(g.statusCode).toBe(200);
      expect(json(g)).toMatchObject(
        Object.fromEntries(DECISION_FIELDS.filter((f) => f !== 'permit_token').map((f) => [f, d[f as keyof typeof d]])),
      );
      // The permit token is answered once, by the POST, and stored nowhere.
      expect(json(g).permit_token).toBeNull();
    });
  });

  describe('validation', () => {
    /** A fresh account: its lists show whether anything was stored. */
    async function freshAccountKey(): Promise<string> {
      const acc = await rt.call(ADMIN_TOKEN, {
        method: 'POST',
        url: '/admin/accounts',
        payload: { name: 'validation' },
      });
      expect(acc.statusCode).toBe(201);
      const key = await rt.call(ADMIN_TOKEN, {
        method: 'POST',
        url: `/admin/accounts/${json(acc).id}/api-keys`,
        payload: { environment: 'test', scopes: ['*'] },
      });
      expect(key.statusCode).toBe(201);
      return json(key).key as string;
    }

    const valid = () => ({ agent_id: agent('val'), action: 'orders.read' });

    const cases: Array<[string, () => LightMyRequestResponse | Promise<LightMyRequestResponse>, number, string]> = [];
    const post = (payload: unknown) => () => decide(payload);
    cases.push(
      ['missing agent_id', post({ action: 'orders.read' }), 400, 'validation.missing_field'],
      ['missing action', post({ agent_id: 'a-1' }), 400, 'validation.missing_field'],
      ['empty object', post({}), 400, 'validation.missing_field'],
    );
    for (const action of [
      'Orders.read',
      'orders',
      'orders.*',
      '*',
      'a.b.c',
      '',
      '*.read',
      'orders.Read',
      '1orders.read',
      'orders.read ',
    ]) {
      cases.push([
        `action ${JSON.stringify(action)}`,
        post({ agent_id: 'a-1', action }),
        400,
        'validation.invalid_action',
      ]);
    }
    cases.push(
      ['unknown field', post({ ...valid(), foo: 1 }), 400, 'validation.invalid_field'],
      ['agent_id number', post({ agent_id: 7, action: 'orders.read' }), 400, 'validation.invalid_field'],
      ['agent_id empty', post({ agent_id: '', action: 'orders.read' }), 400, 'validation.invalid_field'],
      [
        'agent_id of 257 characters',
        post({ agent_id: 'a'.repeat(257), action: 'orders.read' }),
        400,
        'validation.invalid_field',
      ],
      ['action number', post({ agent_id: 'a-1', action: 5 }), 400, 'validation.invalid_field'],
      ['resource number', post({ ...valid(), resource: 5 }), 400, 'validation.invalid_field'],
      ['amount string', post({ ...valid(), amount: '12.5' }), 400, 'validation.invalid_field'],
      ['amount negative', post({ ...valid(), amount: -1 }), 400, 'validation.invalid_field'],
      ['context array', post({ ...valid(), context: [1, 2] }), 400, 'validation.invalid_field'],
      ['context string', post({ ...valid(), context: 'x' }), 400, 'validation.invalid_field'],
      ['ttl_seconds 0', post({ ...valid(), ttl_seconds: 0 }), 400, 'validation.invalid_field'],
      ['ttl_seconds 3601', post({ ...valid(), ttl_seconds: 3601 }), 400, 'validation.invalid_field'],
      ['ttl_seconds 1.5', post({ ...valid(), ttl_seconds: 1.5 }), 400, 'validation.invalid_field'],
      ['ttl_seconds string', post({ ...valid(), ttl_seconds: '300' }), 400, 'validation.invalid_field'],
      ['body is an array', post([valid()]), 400, 'validation.invalid_field'],
      [
        'malformed JSON',
        () =>
          rt.call(rt.testKey, {
            method: 'POST',
            url: '/v1/decisions',
            headers: { 'content-type': 'application/json' },
            payload: '{"agent_id": "a-1", "action": ',
          }),
        400,
        'validation.invalid_json',
      ],
      [
        'body over 1 MiB',
        () => {
          const body = JSON.stringify({
            agent_id: 'a-1',
            action: 'orders.read',
            context: { pad: 'x'.repeat(1024 * 1024) },
          });
          return rt.call(rt.testKey, {
            method: 'POST',
            url: '/v1/decisions',
            headers: { 'content-type': 'application/json' },
            payload: body,
          });
        },
        413,
        'validation.body_too_large',
      ],
    );

    // Valid JSON that the store cannot hold: still a 400, never a 500 (docs/api.md#conventions).
    const raw = (text: string) => () =>
      rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        headers: { 'content-type': 'application/json' },
        payload: text,
      });
    cases.push(
      ['NUL in agent_id', post({ agent_id: 'a\u0000b', action: 'orders.read' }), 400, 'validation.invalid_field'],
      ['NUL in resource', post({ ...valid(), resource: 'order:\u0000' }), 400, 'validation.invalid_field'],
      ['NUL in a context value', post({ ...valid(), context: { a: ['x\u0000'] } }), 400, 'validation.invalid_field'],
      ['NUL in a context key', post({ ...valid(), context: { 'k\u0000': 1 } }), 400, 'validation.invalid_field'],
      [
        'unpaired surrogate in agent_id',
        raw('{"agent_id":"a\\ud800","action":"orders.read"}'),
        400,
        'validation.invalid_field',
      ],
      [
        'unpaired surrogate in context',
        raw('{"agent_id":"a-1","action":"orders.read","context":{"x":"\\udc00y"}}'),
        400,
        'validation.invalid_field',
      ],
      [
        'amount 1e400 (Infinity)',
        raw('{"agent_id":"a-1","action":"orders.read","amount":1e400}'),
        400,
        'validation.invalid_field',
      ],
      [
        'context nested 5000 deep',
        raw(`{"agent_id":"a-1","action":"orders.read","context":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}`),
        400,
        'validation.invalid_field',
      ],
    );

    it.each(cases.map(([name, send, status, code]) => ({ name, send, status, code })))(
      '$name -> $status $code',
      async ({ send, status, code }) => {
        expectError(await send(), status, code);
      },
    );

    it('well-formed unicode, astral characters and moderate nesting are accepted and kept', async () => {
      const a = `${agent('uni')}-é-😀-日本`;
      const context = { deep: JSON.parse(`${'['.repeat(30)}"x"${']'.repeat(30)}`), emoji: '😀' };
      const d = await decideOk({ agent_id: a, action: 'orders.read', resource: 'order:ü😀', context });
      expect(d).toMatchObject({ agent_id: a, resource: 'order:ü😀', effect: 'allow' });
      expect(json(await getDecision(d.id)).agent_id).toBe(a);
    });

    it('a field of the wrong type says which type, in words: "amount":"20" -> amount must be a number', async () => {
      const amount = json(await decide({ ...{ agent_id: agent('types'), action: 'orders.read' }, amount: '20' }));
      expect(amount.error).toMatchObject({
        code: 'validation.invalid_field',
        message: 'amount must be a number, not a string ("20")',
      });
      expect(amount.error.details).toEqual([
        { path: '/amount', message: 'amount must be a number, not a string ("20")' },
      ]);
      const ttl = json(await decide({ agent_id: agent('types'), action: 'orders.read', ttl_seconds: true }));
      expect(ttl.error.message).toBe('ttl_seconds must be a whole number, not true');
      const context = json(await decide({ agent_id: agent('types'), action: 'orders.read', context: [1] }));
      expect(context.error.message).toBe('context must be an object, not an array');
    });

    it('a missing field beside an invalid one is still missing_field', async () => {
      expectError(await decide({ agent_id: 5 }), 400, 'validation.missing_field');
    });

    it('a body of exactly the limit is not rejected for size', async () => {
      const base = JSON.stringify({ agent_id: agent('big'), action: 'orders.read', context: { pad: '' } });
      const pad = 1024 * 1024 - base.length;
      const body = JSON.stringify({
        agent_id: JSON.parse(base).agent_id,
        action: 'orders.read',
        context: { pad: 'x'.repeat(pad) },
      });
      expect(Buffer.byteLength(body)).toBe(1024 * 1024);
      const r = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        headers: { 'content-type': 'application/json' },
        payload: body,
      });
      expect(r.statusCode, r.body.slice(0, 300)).toBe(200);
    });

    it('a rejected request stores nothing: no decision, no agent, no event', async () => {
      const key = await freshAccountKey();
      const bad: unknown[] = [
        { action: 'orders.read' },
        { agent_id: 'val-nothing', action: 'Orders.read' },
        { agent_id: 'val-nothing', action: 'orders.*' },
        { agent_id: 'val-nothing', action: 'orders.read', extra: true },
        { agent_id: 'val-nothing', action: 'orders.read', ttl_seconds: 0 },
        { agent_id: 'val-nothing', action: 'orders.read', amount: 'x' },
      ];
      for (const payload of bad) expect((await decide(payload, key)).statusCode).toBe(400);
      const malformed = await rt.call(key, {
        method: 'POST',
        url: '/v1/decisions',
        headers: { 'content-type': 'application/json' },
        payload: '{"agent_id":',
      });
      expect(malformed.statusCode).toBe(400);
      await rt.services.writer.idle();
      for (const url of ['/v1/decisions?limit=100', '/v1/agents?limit=100', '/v1/events?limit=100']) {
        const r = await rt.call(key, { method: 'GET', url });
        expect(r.statusCode).toBe(200);
        expect(json(r).data, url).toEqual([]);
      }
      // And a valid request through the same key is stored (the check above can see rows).
      await decideOk({ agent_id: 'val-nothing', action: 'orders.read' }, key);
      expect(json(await rt.call(key, { method: 'GET', url: '/v1/decisions' })).data).toHaveLength(1);
    });

    it('input the store cannot hold, sent among concurrent valid requests, fails alone', async () => {
      const good = Array.from({ length: 10 }, () => decide({ agent_id: agent('batch'), action: 'orders.read' }));
      const bad = [
        decide({ agent_id: 'batch-\u0000', action: 'orders.read' }),
        decide({ agent_id: agent('batch'), action: 'orders.read', context: { k: '\u0000' } }),
      ];
      const rs = await Promise.all([...good, ...bad]);
      expect(rs.slice(0, 10).map((r) => r.statusCode)).toEqual(Array(10).fill(200));
      for (const r of rs.slice(10)) expectError(r, 400, 'validation.invalid_field');
    });

    it('the main account list count is unchanged by rejected requests', async () => {
      const count = async () => {
        let n = 0;
        let after: string | undefined;
        for (;;) {
          const r = json(
            await rt.call(rt.testKey, {
              method: 'GET',
              url: `/v1/decisions?limit=100${after ? `&starting_after=${after}` : ''}`,
            }),
          );
          n += r.data.length;
          if (!r.has_more) return n;
          after = r.data.at(-1).id;
        }
      };
      const before = await count();
      for (const [, send] of cases) await send();
      expect(await count()).toBe(before);
    });
  });

  describe('confirm and reject', () => {
    it('confirm a pending decision: 200 confirmed; again: 409 already_confirmed and unchanged', async () => {
      const d = await decideOk({ agent_id: agent('conf'), action: 'orders.read' });
      const c = await resolve(d.id, 'confirm', {});
      expect(c.statusCode, c.body).toBe(200);
      const confirmed = json(c);
      expect(confirmed).toMatchObject({ id: d.id, status: 'confirmed', effect: 'allow' });
      rt.clock.advance(1);
      expectError(await resolve(d.id, 'confirm', {}), 409, 'decision.already_confirmed');
      const g = json(await getDecision(d.id));
      expect(g).toEqual(confirmed);
    });

    it('reject a pending decision: 200 rejected', async () => {
      const d = await decideOk({ agent_id: agent('rej'), action: 'payments.refund' });
      const r = await resolve(d.id, 'reject');
      expect(r.statusCode, r.body).toBe(200);
      expect(json(r)).toMatchObject({ id: d.id, status: 'rejected', effect: 'review' });
      expect(json(await getDecision(d.id)).status).toBe('rejected');
    });

    it('reject after confirm: 409 not_pending', async () => {
      const d = await decideOk({ agent_id: agent('rc'), action: 'orders.read' });
      expect((await resolve(d.id, 'confirm')).statusCode).toBe(200);
      expectError(await resolve(d.id, 'reject'), 409, 'decision.not_pending');
      expect(json(await getDecision(d.id)).status).toBe('confirmed');
    });

    it('confirm after reject and reject after reject: 409 not_pending', async () => {
      const d = await decideOk({ agent_id: agent('cr'), action: 'orders.read' });
      expect((await resolve(d.id, 'reject')).statusCode).toBe(200);
      expectError(await resolve(d.id, 'confirm'), 409, 'decision.not_pending');
      expectError(await resolve(d.id, 'reject'), 409, 'decision.not_pending');
      expect(json(await getDecision(d.id)).status).toBe('rejected');
    });

    it('confirm or reject a deny decision: 409 not_pending', async () => {
      for (const action of ['orders.delete', 'nothing.matches']) {
        const d = await decideOk({ agent_id: agent('cd'), action });
        expect(d.effect).toBe('deny');
        expectError(await resolve(d.id, 'confirm'), 409, 'decision.not_pending');
        expectError(await resolve(d.id, 'reject'), 409, 'decision.not_pending');
        expect(json(await getDecision(d.id)).status).toBe('denied');
      }
    });

    it('after the TTL: 410 expired for confirm and reject; GET shows expired', async () => {
      const d = await decideOk({ agent_id: agent('exp'), action: 'orders.read', ttl_seconds: 10 });
      const e = await decideOk({ agent_id: agent('exp'), action: 'payments.refund', ttl_seconds: 10 });
      rt.clock.set(Date.parse(d.expires_at) - 1);
      expect(json(await getDecision(d.id)).status).toBe('pending');
      rt.clock.set(Date.parse(d.expires_at)); // exactly expires_at: elapsed
      expectError(await resolve(d.id, 'confirm', { amount: 1 }), 410, 'decision.expired');
      expectError(await resolve(e.id, 'reject'), 410, 'decision.expired');
      rt.clock.advance(60);
      expectError(await resolve(d.id, 'confirm'), 410, 'decision.expired');
      expectError(await resolve(e.id, 'confirm'), 410, 'decision.expired');
      const g = json(await getDecision(d.id));
      expect(g.status).toBe('expired');
      expect(g.confirmed_amount ?? null).toBeNull();
      expect(json(await getDecision(e.id)).status).toBe('expired');
      const listed = json(await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions?agent_id=${d.agent_id}` }));
      expect(listed.data.map((x: ListedItem) => x.status)).toEqual(['expired']);
    });

    it('unknown id, another account, another environment: 404 not_found', async () => {
      const mine = await decideOk({ agent_id: agent('nf'), action: 'orders.read' });
      const live = await decideOk({ agent_id: agent('nf'), action: 'orders.read' }, rt.liveKey);
      for (const verb of ['confirm', 'reject'] as const) {
        expectError(await resolve('dec_doesnotexist000000000000', verb), 404, 'decision.not_found');
        expectError(await resolve(mine.id, verb, {}, rt.otherKey), 404, 'decision.not_found');
        expectError(await resolve(mine.id, verb, {}, rt.liveKey), 404, 'decision.not_found');
        expectError(await resolve(live.id, verb, {}, rt.testKey), 404, 'decision.not_found');
        expectError(await resolve(live.id, verb, {}, otherLiveKey), 404, 'decision.not_found');
      }
      expectError(await getDecision('dec_doesnotexist000000000000'), 404, 'decision.not_found');
      expectError(await getDecision(live.id, rt.testKey), 404, 'decision.not_found');
      // Nothing was changed by the foreign attempts.
      expect(json(await getDecision(mine.id)).status).toBe('pending');
      expect(json(await getDecision(live.id, rt.liveKey)).status).toBe('pending');
      const c = await resolve(live.id, 'confirm', {}, rt.liveKey);
      expect(c.statusCode).toBe(200);
      expect(json(c)).toMatchObject({ status: 'confirmed', livemode: true });
    });

    it('confirm with an amount records confirmed_amount; without a body works', async () => {
      const d = await decideOk({ agent_id: agent('amt'), action: 'orders.read', amount: 5 });
      const c = await resolve(d.id, 'confirm', { amount: 3 });
      expect(c.statusCode, c.body).toBe(200);
      expect(json(c)).toMatchObject({ status: 'confirmed', amount: 5, confirmed_amount: 3 });
      expect(json(await getDecision(d.id)).confirmed_amount).toBe(3);

      const n = await decideOk({ agent_id: agent('amt'), action: 'orders.read' });
      const noBody = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${n.id}/confirm` });
      expect(noBody.statusCode, noBody.body).toBe(200);
      expect(json(noBody).status).toBe('confirmed');

      // An empty body sent as application/json (what many clients send) is no body too.
      const e = await decideOk({ agent_id: agent('amt'), action: 'orders.read' });
      const emptyJson = await rt.call(rt.testKey, {
        method: 'POST',
        url: `/v1/decisions/${e.id}/confirm`,
        headers: { 'content-type': 'application/json' },
        payload: '',
      });
      expect(emptyJson.statusCode, emptyJson.body).toBe(200);
      expect(json(emptyJson).status).toBe('confirmed');
      const e2 = await decideOk({ agent_id: agent('amt'), action: 'orders.read' });
      const emptyReject = await rt.call(rt.testKey, {
        method: 'POST',
        url: `/v1/decisions/${e2.id}/reject`,
        headers: { 'content-type': 'application/json' },
        payload: '',
      });
      expect(emptyReject.statusCode, emptyReject.body).toBe(200);
      expect(json(emptyReject).status).toBe('rejected');
      // Malformed JSON on confirm is still invalid_json, and leaves the decision pending.
      const m = await decideOk({ agent_id: agent('amt'), action: 'orders.read' });
      expectError(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: `/v1/decisions/${m.id}/confirm`,
          headers: { 'content-type': 'application/json' },
          payload: '{"amount":',
        }),
        400,
        'validation.invalid_json',
      );
      expect(json(await getDecision(m.id)).status).toBe('pending');

      const r = await decideOk({ agent_id: agent('amt'), action: 'orders.read' });
      const rejectNoBody = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${r.id}/reject` });
      expect(rejectNoBody.statusCode, rejectNoBody.body).toBe(200);
      expect(json(rejectNoBody).status).toBe('rejected');
    });

    it('confirm body validation: unknown field, wrong type, negative amount -> 400 invalid_field; decision untouched', async () => {
      const d = await decideOk({ agent_id: agent('cv'), action: 'orders.read' });
      expectError(await resolve(d.id, 'confirm', { amount: 'x' }), 400, 'validation.invalid_field');
      expectError(await resolve(d.id, 'confirm', { amount: -1 }), 400, 'validation.invalid_field');
      expectError(await resolve(d.id, 'confirm', { foo: 1 }), 400, 'validation.invalid_field');
      expect(json(await getDecision(d.id)).status).toBe('pending');
    });

    it('two concurrent confirms: exactly one 200 and one 409', async () => {
      for (let i = 0; i < 5; i++) {
        const d = await decideOk({ agent_id: agent('race'), action: 'orders.read' });
        const rs = await Promise.all([resolve(d.id, 'confirm', {}), resolve(d.id, 'confirm', {})]);
        const codes = rs.map((r) => r.statusCode).sort();
        expect(codes).toEqual([200, 409]);
        const loser = rs.find((r) => r.statusCode === 409)!;
        expect(json(loser).error.code).toBe('decision.already_confirmed');
      }
    });

    it('concurrent confirm and reject: exactly one wins', async () => {
      const d = await decideOk({ agent_id: agent('race2'), action: 'orders.read' });
      const [c, r] = await Promise.all([resolve(d.id, 'confirm', {}), resolve(d.id, 'reject')]);
      expect([c.statusCode, r.statusCode].sort()).toEqual([200, 409]);
      const final = json(await getDecision(d.id)).status;
      expect(final).toBe(c.statusCode === 200 ? 'confirmed' : 'rejected');
      expect(json(c.statusCode === 200 ? r : c).error.code).toBe('decision.not_pending');
    });
  });

  describe('GET /v1/decisions', () => {
    it('newest first, limit, starting_after, has_more, agent_id filter', async () => {
      const a = agent('page');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push((await decideOk({ agent_id: a, action: i % 2 ? 'orders.delete' : 'orders.read' })).id);
        rt.clock.advance(1);
      }
      await decideOk({ agent_id: agent('page-other'), action: 'orders.read' });
      const newest = [...ids].reverse();
      const page = async (q: string) => {
        const r = await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions?agent_id=${a}${q}` });
        expect(r.statusCode, r.body).toBe(200);
        const body = json(r);
        expect(body.object).toBe('list');
        return body;
      };
      const all = await page('');
      expect(all.data.map((d: ListedItem) => d.id)).toEqual(newest);
      expect(all.has_more).toBe(false);
      for (const d of all.data) expectDecisionShape(d, false);

      const p1 = await page('&limit=2');
      expect(p1.data.map((d: ListedItem) => d.id)).toEqual(newest.slice(0, 2));
      expect(p1.has_more).toBe(true);
      const p2 = await page(`&limit=2&starting_after=${p1.data[1].id}`);
      expect(p2.data.map((d: ListedItem) => d.id)).toEqual(newest.slice(2, 4));
      expect(p2.has_more).toBe(true);
      const p3 = await page(`&limit=2&starting_after=${p2.data[1].id}`);
      expect(p3.data.map((d: ListedItem) => d.id)).toEqual(newest.slice(4));
      expect(p3.has_more).toBe(false);
      const exact = await page('&limit=5');
      expect(exact.data).toHaveLength(5);
      expect(exact.has_more).toBe(false);

      // Unfiltered: newest first across agents, default limit 20.
      const unfiltered = json(await rt.call(rt.testKey, { method: 'GET', url: '/v1/decisions' }));
      expect(unfiltered.object).toBe('list');
      expect(unfiltered.data.length).toBeLessThanOrEqual(20);
      expect(unfiltered.data[0].agent_id).toMatch(/^page-other-/);
      expect(unfiltered.data[1].id).toBe(newest[0]);
      const times = unfiltered.data.map((d: ListedItem) => Date.parse(d.evaluated_at));
      expect([...times].sort((x, y) => y - x)).toEqual(times);
    });

    it('limit 0, 101, -1, abc and unknown query parameters: 400 invalid_field', async () => {
      for (const q of ['limit=0', 'limit=101', 'limit=-1', 'limit=abc', 'limit=1.5', 'foo=bar']) {
        expectError(
          await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions?${q}` }),
          400,
          'validation.invalid_field',
        );
      }
      for (const q of ['limit=1', 'limit=100'])
        expect((await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions?${q}` })).statusCode).toBe(200);
    });

    it('an unknown agent_id lists nothing', async () => {
      const r = json(await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions?agent_id=${agent('never')}` }));
      expect(r).toMatchObject({ object: 'list', data: [], has_more: false });
    });
  });

  // Isolation of decisions (and of every other resource) across accounts and environments: test/runtime/isolation.test.ts.

  describe('an environment without policies', () => {
    it('warns environment.no_policies naming the environment (a live key after the README start); not once it has one', async () => {
      const a = agent('empty-env');
      // The other account's live environment has no policy at all.
      const d = await decideOk({ agent_id: a, action: 'orders.read' }, otherLiveKey);
      expect(d).toMatchObject({ effect: 'deny', reason: 'policy.not_found', livemode: true });
      expect(d.metadata.warnings).toEqual([
        {
          code: 'environment.no_policies',
          message:
            "the live environment has no policies, so every request is denied: load them with a live key (authz push, PUT /v1/bundle or POST /v1/policies); the test environment's policies are separate",
          policy_ids: [],
        },
      ]);
      // Stored as answered: the read gives the same warning.
      expect(json(await getDecision(d.id, otherLiveKey)).metadata.warnings[0].code).toBe('environment.no_policies');
      // The other account's test environment: the same, named test.
      expect(
        (await decideOk({ agent_id: a, action: 'orders.read' }, rt.otherKey)).metadata.warnings[0].message,
      ).toMatch(/^the test environment has no policies/);
      // An environment with policies denies an unmatched action without it.
      const unmatched = await decideOk({ agent_id: a, action: 'nothing.here' }, rt.liveKey);
      expect(unmatched).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
      expect(unmatched.metadata.warnings).toEqual([]);
    });
  });

  describe('evaluation step 2: revoked agents', () => {
    it('a revoked agent gets deny agent.revoked even when a policy allows; restoring lifts it', async () => {
      const a = agent('revoked');
      expect((await decideOk({ agent_id: a, action: 'orders.read' })).effect).toBe('allow');
      const rv = await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${a}/revoke` });
      expect(rv.statusCode, rv.body).toBe(200);
      for (const action of ['orders.read', 'payments.refund', 'orders.delete', 'nothing.here']) {
        const d = await decideOk({ agent_id: a, action });
        expectDecisionShape(d);
        expect(d).toMatchObject({
          effect: 'deny',
          reason: 'agent.revoked',
          status: 'denied',
          policy_id: null,
          permit_token: null,
        });
        expect(d.metadata).toEqual({ matched_policy_ids: [], warnings: [] });
        expectError(await resolve(d.id, 'confirm'), 409, 'decision.not_pending');
      }
      // Still revoked after the directory's cache would have expired.
      rt.clock.advance(60);
      expect((await decideOk({ agent_id: a, action: 'orders.read' })).reason).toBe('agent.revoked');
      // Only this agent, and only this environment.
      expect((await decideOk({ agent_id: agent('revoked-neighbour'), action: 'orders.read' })).effect).toBe('allow');
      expect((await decideOk({ agent_id: a, action: 'orders.read' }, rt.liveKey)).effect).toBe('allow');
      expect((await decideOk({ agent_id: a, action: 'orders.read' }, rt.otherKey)).reason).toBe('policy.not_found');

      const rs = await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${a}/restore` });
      expect(rs.statusCode, rs.body).toBe(200);
      const back = await decideOk({ agent_id: a, action: 'orders.read' });
      expect(back).toMatchObject({ effect: 'allow', reason: 'policy.matched', status: 'pending' });
    });

    it('a revocation is seen even when this process cached the agent as active moments ago', async () => {
      const a = agent('cached');
      await decideOk({ agent_id: a, action: 'orders.read' });
      await decideOk({ agent_id: a, action: 'orders.read' });
      expect((await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${a}/revoke` })).statusCode).toBe(200);
      expect((await decideOk({ agent_id: a, action: 'orders.read' })).reason).toBe('agent.revoked');
    });
  });
});
