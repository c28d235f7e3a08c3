/**
 * The extension fields of docs/api.md#decisions, on both stores:
 * session_id and on_behalf_of (stored, listed, filterable, read by conditions,
 * carried in permits as sid and obo, in events), args_digest (the permit's
 * `args`, checked by the verifier library given the arguments), the request's
 * context in decision bodies; "would it be allowed?" (POST /v1/decisions/preview,
 * POST /v1/actions/possible); and a confirm's amount (only on a decision that
 * had one; without one, the decided amount is the confirmed one).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  argsDigest,
  canonicalizeJson,
  createPermitVerifier,
  PermitMismatchError,
} from '../../permit-verifier/index.js';
import { stateDigest } from '../fuzz/helpers/state-digest.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { agent, decide } from '../helpers/kit.js';

describe('argsDigest (RFC 8785)', () => {
  it('canonical JSON sorts members by UTF-16 code units at every level, numbers as ECMAScript prints them', () => {
    expect(
      canonicalizeJson({ b: [1, 'x', { d: 1, c: 2 }], a: { '10': true, '9': null }, '\u20ac': 1, '\ud83d\ude00': 2 }),
    ).toBe('{"a":{"10":true,"9":null},"b":[1,"x",{"c":2,"d":1}],"\u20ac":1,"\ud83d\ude00":2}');
    expect(canonicalizeJson({ n: 1e21, m: 0.1 + 0.2, z: -0 })).toBe('{"m":0.30000000000000004,"n":1e+21,"z":0}');
    expect(() => canonicalizeJson({ x: Number.NaN })).toThrow(TypeError);
  });

  it('is 43 base64url characters, equal for equal values whatever their key order', () => {
    const a = argsDigest({ path: '/tmp/a', mode: { write: true, append: false } });
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(argsDigest({ mode: { append: false, write: true }, path: '/tmp/a' })).toBe(a);
    expect(argsDigest({ path: '/tmp/b', mode: { write: true, append: false } })).not.toBe(a);
    expect(argsDigest(undefined)).toBe(argsDigest({}));
  });
});

for (const kind of STORE_KINDS) {
  describe(`decision fields (${kind})`, () => {
    let rt: TestRuntime;
    let jwks: Server;
    let jwksUrl: string;

    beforeAll(async () => {
      rt = await startRuntime(kind);
      await rt.setPolicies([
        { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
        {
          id: 'pol_runs',
          effect: 'allow',
          actions: ['research.search'],
          condition: "session_id != null && on_behalf_of == 'user-42'",
        },
        {
          id: 'pol_calls',
          effect: 'allow',
          actions: ['tools.call'],
          budget: { unit: 'calls', limit: 2, period: 'monthly', threshold_alert: 0.5 },
        },
        {
          id: 'pol_usd',
          effect: 'allow',
          actions: ['payments.charge'],
          budget: { unit: 'USD', limit: 100, period: 'monthly' },
        },
        { id: 'pol_rate', effect: 'allow', actions: ['mail.send'], rate_limit: { per_minute: 1 } },
        { id: 'pol_review', effect: 'review', actions: ['payments.refund'] },
        { id: 'pol_cond', effect: 'allow', actions: ['files.write'], condition: "context.path == '/tmp/ok'" },
        { id: 'pol_no', effect: 'deny', actions: ['admin.*'] },
      ]);
      // The verifier library fetches the JWKS over HTTP: serve the runtime's keys on 127.0.0.1.
      jwks = createServer((_req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(rt.services.ring.jwks()));
      });
      await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
      jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
    });
    afterAll(async () => {
      await new Promise((r) => jwks.close(r));
      await rt.close();
    });

    const claimsOf = (token: string | null) =>
      JSON.parse(Buffer.from(token!.split('.')[1]!, 'base64url').toString('utf8'));
    const verifier = () =>
      createPermitVerifier({
        jwksUrl,
        issuer: rt.services.config.baseUrl,
        account: rt.accountId,
        environment: 'test',
        now: () => rt.clock.now(),
      });

    it('session_id and on_behalf_of are stored, answered, read by conditions, carried in the permit and the event', async () => {
      const a = agent('run');
      const d = await decide(rt, {
        agent_id: a,
        action: 'research.search',
        session_id: 'run-1',
        on_behalf_of: 'user-42',
        context: { q: 'x' },
      });
      expect(d).toMatchObject({
        effect: 'allow',
        policy_id: 'pol_runs',
        session_id: 'run-1',
        on_behalf_of: 'user-42',
        context: { q: 'x' },
      });
      expect(claimsOf(d.permit_token)).toMatchObject({ sid: 'run-1', obo: 'user-42' });
      // The condition reads them: another user, or no session, does not match.
      expect(
        (await decide(rt, { agent_id: a, action: 'research.search', session_id: 'run-1', on_behalf_of: 'user-7' }))
          .reason,
      ).toBe('policy.not_found');
      expect((await decide(rt, { agent_id: a, action: 'research.search', on_behalf_of: 'user-42' })).reason).toBe(
        'policy.not_found',
      );
      const read = await rt.getOk(`/v1/decisions/${d.id}`);
      expect(read).toMatchObject({ session_id: 'run-1', on_behalf_of: 'user-42', context: { q: 'x' } });
      const events = (await rt.getOk('/v1/events?type=decision.allow&limit=100')).data as Array<{
        data: { decision: Record<string, unknown> };
      }>;
      expect(events.find((e) => e.data.decision.id === d.id)?.data.decision).toMatchObject({
        session_id: 'run-1',
        on_behalf_of: 'user-42',
        context: { q: 'x' },
      });
      // A decision without them says null, and its permit has no sid or obo.
      const plain = await decide(rt, { agent_id: a, action: 'orders.read' });
      expect(plain).toMatchObject({ session_id: null, on_behalf_of: null, context: null });
      expect(claimsOf(plain.permit_token)).not.toHaveProperty('sid');
      expect(claimsOf(plain.permit_token)).not.toHaveProperty('obo');
    });

    it('GET /v1/decisions filters by session_id and on_behalf_of', async () => {
      const a = agent('filter');
      const s1 = await decide(rt, { agent_id: a, action: 'orders.read', session_id: 'sess-A', on_behalf_of: 'u1' });
      const s2 = await decide(rt, { agent_id: a, action: 'orders.read', session_id: 'sess-B', on_behalf_of: 'u1' });
      await decide(rt, { agent_id: a, action: 'orders.read' });
      const ids = async (q: string) =>
        ((await rt.getOk(`/v1/decisions?agent_id=${a}&${q}`)).data as Array<{ id: string }>).map((x) => x.id);
      expect(await ids('session_id=sess-A')).toEqual([s1.id]);
      expect(await ids('on_behalf_of=u1')).toEqual([s2.id, s1.id]);
      expect(await ids('session_id=sess-B&on_behalf_of=u1')).toEqual([s2.id]);
      expect(await ids('session_id=none')).toEqual([]);
    });

    it('refuses fields out of shape with validation.invalid_field', async () => {
      for (const body of [
        { session_id: '' },
        { session_id: 'x'.repeat(257) },
        { on_behalf_of: 7 },
        { args_digest: 'short' },
        { args_digest: `${'a'.repeat(42)}=` },
      ]) {
        const r = await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: agent('bad'), action: 'orders.read', ...body },
        });
        expect(r.statusCode, JSON.stringify(body)).toBe(400);
        expect(json(r).error.code).toBe('validation.invalid_field');
      }
    });

    it("args_digest binds the permit to the call's arguments, and the verifier checks them", async () => {
      const args = { path: '/tmp/ok', content: 'hello' };
      const d = await decide(rt, {
        agent_id: agent('mcp'),
        action: 'files.write',
        args_digest: argsDigest(args),
        context: { path: '/tmp/ok' },
      });
      expect(d.effect).toBe('allow');
      expect(d.args_digest).toBe(argsDigest(args));
      expect(claimsOf(d.permit_token).args).toBe(argsDigest(args));
      const v = verifier();
      // The same arguments in another key order pass; other arguments do not.
      await expect(
        v.verify(d.permit_token!, { action: 'files.write', arguments: { content: 'hello', path: '/tmp/ok' } }),
      ).resolves.toMatchObject({ args: argsDigest(args) });
      await expect(
        v.verify(d.permit_token!, { action: 'files.write', arguments: { path: '/etc/passwd', content: 'hello' } }),
      ).rejects.toBeInstanceOf(PermitMismatchError);
      // The same arguments in another tool's handler do not pass either.
      await expect(v.verify(d.permit_token!, { action: 'files.delete', arguments: args })).rejects.toBeInstanceOf(
        PermitMismatchError,
      );
      // Without `arguments` the claim is not checked; a permit without args does not pass a check that asks for them.
      await expect(v.verify(d.permit_token!)).resolves.toBeTruthy();
      const unbound = await decide(rt, { agent_id: agent('mcp'), action: 'files.write', context: { path: '/tmp/ok' } });
      await expect(v.verify(unbound.permit_token!, { action: 'files.write', arguments: args })).rejects.toMatchObject({
        code: 'permit.mismatch',
      });
      // Arguments null and no arguments are two calls: the permit of one does not pass for the other.
      const none = await decide(rt, {
        agent_id: agent('mcp'),
        action: 'files.write',
        args_digest: argsDigest(undefined),
        context: { path: '/tmp/ok' },
      });
      const nulled = await decide(rt, {
        agent_id: agent('mcp'),
        action: 'files.write',
        args_digest: argsDigest(null),
        context: { path: '/tmp/ok' },
      });
      expect(nulled.args_digest).not.toBe(none.args_digest);
      await expect(v.verify(none.permit_token!, { action: 'files.write', arguments: {} })).resolves.toBeTruthy();
      await expect(v.verify(none.permit_token!, { action: 'files.write', arguments: null })).rejects.toBeInstanceOf(
        PermitMismatchError,
      );
      await expect(v.verify(nulled.permit_token!, { action: 'files.write', arguments: null })).resolves.toBeTruthy();
      await expect(
        v.verify(nulled.permit_token!, { action: 'files.write', arguments: undefined }),
      ).rejects.toBeInstanceOf(PermitMismatchError);
    });

    describe('POST /v1/decisions/preview', () => {
      const preview = async (body: Record<string, unknown>) => {
        const r = await rt.call(rt.testKey, { method: 'POST', url: '/v1/decisions/preview', payload: body });
        expect(r.statusCode, r.body).toBe(200);
        return json(r);
      };

      it('answers what a decision would be, and the store and limits are exactly as before', async () => {
        const a = agent('preview');
        // One call of the two consumed already, so the budget is past its 50% threshold.
        await decide(rt, { agent_id: a, action: 'tools.call' });
        await rt.services.writer.idle();
        const before = await stateDigest(rt.store.sql);
        const p = await preview({ agent_id: a, action: 'tools.call' });
        // The decision previewed would reach the limit (2 of 2): no budget.below_threshold warning, as for the
        // decision itself (docs/budgets-and-limits.md#budgets: past the threshold and under the limit).
        expect(p).toEqual({
          object: 'decision_preview',
          effect: 'allow',
          reason: 'policy.matched',
          policy_id: 'pol_calls',
          matched_policy_ids: ['pol_calls'],
          warnings: [],
        });
        // Another agent's first call would leave the budget at 1 of 2: past 50%, under the limit.
        expect((await preview({ agent_id: agent('preview-first'), action: 'tools.call' })).warnings).toEqual([
          expect.objectContaining({ code: 'budget.below_threshold' }),
        ]);
        expect(await preview({ agent_id: a, action: 'payments.refund' })).toMatchObject({
          effect: 'review',
          policy_id: 'pol_review',
        });
        expect(await preview({ agent_id: a, action: 'admin.delete' })).toMatchObject({
          effect: 'deny',
          reason: 'policy.matched',
          policy_id: 'pol_no',
        });
        expect(await preview({ agent_id: a, action: 'payments.charge', amount: 101 })).toMatchObject({
          effect: 'deny',
          reason: 'budget.exceeded',
          policy_id: 'pol_usd',
        });
        expect(await preview({ agent_id: a, action: 'payments.charge', amount: 100 })).toMatchObject({
          effect: 'allow',
        });
        expect(await preview({ agent_id: agent('never-seen'), action: 'orders.read' })).toMatchObject({
          effect: 'allow',
        });
        // Many previews use nothing: the same preview again, and a limiter never moved.
        for (let i = 0; i < 3; i++) expect((await preview({ agent_id: a, action: 'mail.send' })).effect).toBe('allow');
        expect(await stateDigest(rt.store.sql)).toEqual(before);
        // The real decision afterwards is the one previewed (the previews used nothing).
        expect((await decide(rt, { agent_id: a, action: 'tools.call' })).effect).toBe('allow');
        expect((await preview({ agent_id: a, action: 'tools.call' })).reason).toBe('budget.exceeded');
      });

      it('a rate limit the decision would hit is a value: deny rate_limit.exceeded with retry_after_seconds', async () => {
        const a = agent('preview-rate');
        await decide(rt, { agent_id: a, action: 'mail.send' });
        const p = await preview({ agent_id: a, action: 'mail.send' });
        expect(p).toMatchObject({ effect: 'deny', reason: 'rate_limit.exceeded' });
        expect(p.retry_after_seconds).toBeGreaterThanOrEqual(1);
        expect(p.retry_after_seconds).toBeLessThanOrEqual(60);
        const real = await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: a, action: 'mail.send' },
        });
        expect(real.statusCode).toBe(429);
        expect(Number(real.headers['retry-after'])).toBe(p.retry_after_seconds);
      });

      it("a revoked agent previews deny agent.revoked; bad input is the decision route's 400", async () => {
        const a = agent('preview-revoked');
        await decide(rt, { agent_id: a, action: 'orders.read' });
        expect((await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${a}/revoke` })).statusCode).toBe(200);
        expect(await preview({ agent_id: a, action: 'orders.read' })).toMatchObject({
          effect: 'deny',
          reason: 'agent.revoked',
        });
        const bad = await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions/preview',
          payload: { agent_id: a, action: 'Orders.Read' },
        });
        expect(bad.statusCode).toBe(400);
        expect(json(bad).error.code).toBe('validation.invalid_action');
        const missing = await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions/preview',
          payload: { agent_id: agent('no-amount'), action: 'payments.charge' },
        });
        expect(json(missing).error.code).toBe('validation.missing_field');
        const scope = await rt.call(await rt.keyWith(['decisions:read']), {
          method: 'POST',
          url: '/v1/decisions/preview',
          payload: { agent_id: a, action: 'orders.read' },
        });
        expect(scope.statusCode).toBe(403);
      });
    });

    describe('POST /v1/actions/possible', () => {
      const possible = async (agentId: string, actions: string[]) => {
        const r = await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/actions/possible',
          payload: { agent_id: agentId, actions },
        });
        expect(r.statusCode, r.body).toBe(200);
        return json(r);
      };

      it('yes for an action an enabled allow or review policy could grant (conditions and resources aside), no otherwise', async () => {
        const r = await possible(agent('possible'), [
          'orders.read',
          'files.write',
          'payments.refund',
          'admin.delete',
          'unknown.thing',
        ]);
        expect(r).toEqual({
          object: 'list',
          data: [
            { action: 'orders.read', possible: true },
            { action: 'files.write', possible: true },
            { action: 'payments.refund', possible: true },
            { action: 'admin.delete', possible: false },
            { action: 'unknown.thing', possible: false },
          ],
        });
        expect(JSON.stringify(r)).not.toContain('pol_');
      });

      it('no for everything once the agent is revoked; agent filters count', async () => {
        const a = agent('possible-revoked');
        await decide(rt, { agent_id: a, action: 'orders.read' });
        await rt.call(rt.testKey, { method: 'POST', url: `/v1/agents/${a}/revoke` });
        expect((await possible(a, ['orders.read'])).data).toEqual([{ action: 'orders.read', possible: false }]);
        const other = await rt.keyWith(['*'], 'live');
        await rt.setPolicies(
          [{ id: 'pol_support', effect: 'allow', agents: ['support-*'], actions: ['tickets.*'] }],
          'live',
        );
        const ask = async (agentId: string) =>
          json(
            await rt.call(other, {
              method: 'POST',
              url: '/v1/actions/possible',
              payload: { agent_id: agentId, actions: ['tickets.close'] },
            }),
          ).data[0].possible;
        expect(await ask('support-1')).toBe(true);
        expect(await ask('sales-1')).toBe(false);
      });

      it('an invalid action is 400 validation.invalid_action naming its place', async () => {
        const r = await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/actions/possible',
          payload: { agent_id: 'a', actions: ['orders.read', 'orders.*'] },
        });
        expect(r.statusCode).toBe(400);
        expect(json(r).error).toMatchObject({ code: 'validation.invalid_action', details: [{ path: '/actions/1' }] });
      });
    });

    describe('confirm amounts', () => {
      it('confirming without an amount consumes the amount decided, and confirmed_amount says so', async () => {
        const d = await decide(rt, { agent_id: agent('confirm'), action: 'payments.charge', amount: 12.5 });
        const c = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d.id}/confirm` });
        expect(c.statusCode, c.body).toBe(200);
        expect(json(c)).toMatchObject({ status: 'confirmed', confirmed_amount: 12.5 });
        expect((await rt.getOk(`/v1/decisions/${d.id}`)).confirmed_amount).toBe(12.5);
      });

      it('an amount on confirming a decision made without one is 400 validation.invalid_field, and the decision stays pending', async () => {
        const d = await decide(rt, { agent_id: agent('confirm'), action: 'orders.read' });
        const c = await rt.call(rt.testKey, {
          method: 'POST',
          url: `/v1/decisions/${d.id}/confirm`,
          payload: { amount: 3 },
        });
        expect(c.statusCode).toBe(400);
        expect(json(c).error).toMatchObject({ code: 'validation.invalid_field', details: [{ path: '/amount' }] });
        expect((await rt.getOk(`/v1/decisions/${d.id}`)).status).toBe('pending');
        const ok = await rt.call(rt.testKey, { method: 'POST', url: `/v1/decisions/${d.id}/confirm` });
        expect(json(ok)).toMatchObject({ status: 'confirmed', confirmed_amount: null });
      });
    });
  });
}
