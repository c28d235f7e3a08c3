/**
 * PUT/GET /v1/bundle (docs/api.md#bundles): the artifact of `authz compile`
 * replaces the environment's whole policy set atomically (API-made policies
 * too), policy.updated fires once per changed policy, decisions follow the
 * bundle at once, and a bundle of another format version, a tampered bundle or
 * something else altogether is refused with 400 without changing anything. On
 * both kinds of store.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../compiler/cli/main.js';
import type { CliIo } from '../../compiler/cli/io.js';
import { canonicalJson, sha256Hex } from '../../compiler/bundle/canonical-json.js';
import type { Bundle } from '../../compiler/bundle/format.js';
import type { Policy } from '../../compiler/policy/types.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';
import { decide as kitDecide } from '../helpers/kit.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** `authz compile PATHS -o FILE`, in-process, quietly; the parsed bundle. */
function compile(paths: string[], dir: string, name: string): Bundle {
  const out: string[] = [];
  const io: CliIo = { out: (t) => out.push(t), err: (t) => out.push(t), isTTY: false, cwd: ROOT };
  const file = join(dir, name);
  const code = main(['compile', ...paths, '-o', file], io);
  if (code !== 0) throw new Error(`authz compile failed (${code}):\n${out.join('\n')}`);
  return JSON.parse(readFileSync(file, 'utf8')) as Bundle;
}

/** A bundle of the given policies, compiled by the CLI from one YAML (JSON) file. */
function compilePolicies(policies: Policy[], dir: string, name: string): Bundle {
  const src = join(dir, `${name}.yaml`);
  writeFileSync(src, JSON.stringify({ policies }, null, 1));
  return compile([src], dir, `${name}.json`);
}

describe.each(STORE_KINDS)('bundles (%s store)', (kind) => {
  let rt: TestRuntime;
  let dir: string;
  let examples: Bundle;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'authz-bundle-'));
    examples = compile(['examples'], dir, 'examples.json');
    rt = await startRuntime(kind);
  });
  afterAll(async () => {
    await rt?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const putBundle = (body: unknown, key = rt.testKey) =>
    rt.call(key, { method: 'PUT', url: '/v1/bundle', payload: body as object });
  const getBundle = (key = rt.testKey) => rt.getOk('/v1/bundle', key);
  const decide = async (payload: Record<string, unknown>, key = rt.testKey) => {
    // The examples rate-limit their agents (orders.read: 10 per second); a second
    // between decisions keeps these checks clear of those limits.
    rt.clock.advance(1);
    return kitDecide(rt, payload, key);
  };
  const policyEvents = async (key = rt.testKey) =>
    (await rt.getOk('/v1/events?type=policy.updated&limit=100', key)).data as Array<JsonObject>;
  const policyIds = async (key = rt.testKey) =>
    ((await rt.getOk('/v1/policies?limit=100', key)).data as Array<{ id: string }>).map((p) => p.id).sort();
  const readOrder = { agent_id: 'support-bot-1', action: 'orders.read', resource: 'order:1001' };

  /** Runs `fn` and checks that the active set, the policies and the events are as before. */
  async function expectNothingChanged(fn: () => Promise<void>) {
    const bundle = await getBundle();
    const ids = await policyIds();
    const events = (await policyEvents()).length;
    const decision = await decide(readOrder);
    await fn();
    expect(await getBundle()).toEqual(bundle);
    expect(await policyIds()).toEqual(ids);
    expect((await policyEvents()).length).toBe(events);
    expect(await decide(readOrder)).toMatchObject({
      effect: decision.effect,
      reason: decision.reason,
      policy_id: decision.policy_id,
    });
  }

  it('the compiled examples are a bundle of the current format', () => {
    expect(examples).toMatchObject({ format: 'agent-authz.bundle', format_version: 1 });
    expect(examples.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(examples.policies.length).toBeGreaterThan(10);
  });

  it('starts empty', async () => {
    const b = await getBundle();
    expect(b).toMatchObject({ object: 'bundle', policies: 0 });
    expect(b.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('replaces the whole set, API-made policies included, and decisions follow it', async () => {
    const made = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/policies',
      payload: { name: 'api-made', effect: 'allow', actions: ['orders.read'] },
    });
    expect(made.statusCode).toBe(201);
    const apiId = json(made).id as string;
    expect(await decide(readOrder)).toMatchObject({ effect: 'allow', policy_id: apiId });
    expect(await getBundle()).toMatchObject({ policies: 1 });
    const eventsBefore = (await policyEvents()).length;

    const r = await putBundle(examples);
    expect(r.statusCode).toBe(200);
    expect(json(r)).toEqual({ object: 'bundle', hash: examples.hash, policies: examples.policies.length });

    const active = await getBundle();
    expect(active).toMatchObject({ object: 'bundle', hash: examples.hash, policies: examples.policies.length });
    expect(await policyIds()).toEqual(examples.policies.map((p) => p.id).sort());
    expect((await rt.call(rt.testKey, { method: 'GET', url: `/v1/policies/${apiId}` })).statusCode).toBe(404);

    // Decisions follow the bundle from the very next request.
    expect(await decide(readOrder)).toMatchObject({
      effect: 'allow',
      reason: 'policy.matched',
      policy_id: 'pol_support_read_orders_customers',
    });
    expect(await decide({ agent_id: 'support-bot-1', action: 'accounts.delete', resource: 'account:1' })).toMatchObject(
      {
        effect: 'deny',
        reason: 'policy.matched',
        policy_id: 'pol_support_account_deletion_deny',
      },
    );
    expect(
      await decide({ agent_id: 'support-bot-1', action: 'credits.issue', resource: 'customer:1', amount: 5 }),
    ).toMatchObject({
      effect: 'deny',
      reason: 'policy.disabled',
    });
    expect(await decide({ agent_id: 'someone', action: 'api.read' })).toMatchObject({
      effect: 'deny',
      reason: 'policy.not_found',
    });

    // One policy.updated per changed policy: each bundle policy created, the API-made one deleted.
    const events = await policyEvents();
    const fired = events.slice(0, events.length - eventsBefore);
    expect(fired).toHaveLength(examples.policies.length + 1);
    const changes = new Map(fired.map((e) => [e.data.policy.id as string, e.data.change as string]));
    expect(changes.size).toBe(fired.length);
    expect(changes.get(apiId)).toBe('deleted');
    for (const p of examples.policies) expect(changes.get(p.id)).toBe('created');
    const one = fired.find((e) => e.data.policy.id === 'pol_support_read_orders_customers')!;
    expect(one).toMatchObject({
      type: 'policy.updated',
      account_id: rt.accountId,
      data: { change: 'created', policy: { object: 'policy', effect: 'allow' } },
    });
  });

  it('a second identical PUT changes nothing and fires no event', async () => {
    const events = (await policyEvents()).length;
    const r = await putBundle(examples);
    expect(r.statusCode).toBe(200);
    expect(json(r)).toEqual({ object: 'bundle', hash: examples.hash, policies: examples.policies.length });
    expect((await policyEvents()).length).toBe(events);
    expect(await getBundle()).toMatchObject({ hash: examples.hash, policies: examples.policies.length });
  });

  it('fires one event per changed policy with the kind of change', async () => {
    const next = examples.policies
      .filter((p) => p.id !== 'pol_infra_guard_iam')
      .map((p): Policy => {
        if (p.id === 'pol_support_read_orders_customers') return { ...p, effect: 'deny' };
        if (p.id === 'pol_support_tier2_account_maintenance') return { ...p, state: 'disabled' };
        if (p.id === 'pol_support_goodwill_credits') return { ...p, state: 'enabled' };
        return p;
      });
    next.push({
      id: 'pol_bundle_added',
      name: 'bundle-added',
      state: 'enabled',
      priority: 100,
      effect: 'allow',
      actions: ['added.read'],
    });
    const changed = compilePolicies(next, dir, 'changed');
    const before = (await policyEvents()).length;

    const r = await putBundle(changed);
    expect(r.statusCode).toBe(200);
    expect(json(r)).toEqual({ object: 'bundle', hash: changed.hash, policies: next.length });
    expect(await getBundle()).toMatchObject({ hash: changed.hash, policies: next.length });

    const events = await policyEvents();
    const fired = events.slice(0, events.length - before);
    expect(Object.fromEntries(fired.map((e) => [e.data.policy.id, e.data.change]))).toEqual({
      pol_support_read_orders_customers: 'updated',
      pol_support_tier2_account_maintenance: 'disabled',
      pol_support_goodwill_credits: 'enabled',
      pol_infra_guard_iam: 'deleted',
      pol_bundle_added: 'created',
    });
    expect(await decide(readOrder)).toMatchObject({
      effect: 'deny',
      reason: 'policy.matched',
      policy_id: 'pol_support_read_orders_customers',
    });
    expect(await decide({ agent_id: 'any', action: 'added.read' })).toMatchObject({
      effect: 'allow',
      policy_id: 'pol_bundle_added',
    });

    // Back to the examples: the same five policies change back.
    const back = await putBundle(examples);
    expect(back.statusCode).toBe(200);
    expect((await policyEvents()).length - events.length).toBe(5);
    expect(await decide(readOrder)).toMatchObject({ effect: 'allow', policy_id: 'pol_support_read_orders_customers' });
  });

  it('an API change after a bundle changes the active hash and count', async () => {
    const r = await rt.call(rt.testKey, {
      method: 'POST',
      url: '/v1/policies',
      payload: { id: 'pol_after_bundle', name: 'after-bundle', effect: 'allow', actions: ['after.read'] },
    });
    expect(r.statusCode).toBe(201);
    const active = await getBundle();
    expect(active.policies).toBe(examples.policies.length + 1);
    expect(active.hash).not.toBe(examples.hash);
    expect((await rt.call(rt.testKey, { method: 'DELETE', url: '/v1/policies/pol_after_bundle' })).statusCode).toBe(
      200,
    );
    expect(await getBundle()).toMatchObject({ hash: examples.hash, policies: examples.policies.length });
  });

  describe('refused bundles change nothing', () => {
    const expectRefused = async (body: unknown, message: RegExp) => {
      let response: Awaited<ReturnType<typeof putBundle>> | undefined;
      await expectNothingChanged(async () => {
        response = await putBundle(body);
      });
      expect(response!.statusCode).toBe(400);
      const error = json(response!).error;
      expect(error.code).toBe('validation.invalid_bundle');
      expect(error.request_id).toBe(response!.headers['request-id']);
      expect(error.message).toMatch(message);
      return error;
    };

    it('a newer format version: 400 saying newer', async () => {
      const error = await expectRefused({ ...examples, format_version: 2 }, /newer/);
      expect(error.details).toContainEqual(expect.objectContaining({ path: '/format_version' }));
    });

    it('an older format version: 400 saying older', async () => {
      await expectRefused({ ...examples, format_version: 0 }, /older/);
    });

    it('a tampered bundle (hash mismatch): 400', async () => {
      const tampered = structuredClone(examples);
      const p = tampered.policies.find((x) => x.id === 'pol_support_read_orders_customers')!;
      p.effect = 'deny';
      await expectRefused(tampered, /hash/);
    });

    it('a tampered bundle whose hash was recomputed but whose table is wrong: 400', async () => {
      const other = compilePolicies(
        [
          { id: 'pol_a', name: 'a', state: 'enabled', priority: 1, effect: 'allow', actions: ['x.read'] },
          { id: 'pol_b', name: 'b', state: 'enabled', priority: 2, effect: 'deny', actions: ['x.read'] },
        ],
        dir,
        'two',
      );
      const reversed = { ...other, table: { ...other.table, rows: [...other.table.rows].reverse() } };
      await expectRefused(reversed, /rank order|row/);
    });

    it('a bundle with two policies of one name (hash recomputed): 400', async () => {
      const dup = structuredClone(examples);
      dup.policies[1]!.name = dup.policies[0]!.name;
      dup.hash = `sha256:${sha256Hex(canonicalJson(dup.policies))}`;
      let response: Awaited<ReturnType<typeof putBundle>> | undefined;
      await expectNothingChanged(async () => {
        response = await putBundle(dup);
      });
      expect(response!.statusCode).toBe(400);
      expect(json(response!).error.message).toMatch(/duplicate/);
    });

    it('JSON that is not a bundle: 400', async () => {
      await expectRefused({ hello: 'world' }, /not an agent-authz bundle/);
      await expectRefused([examples], /not an agent-authz bundle/);
      await expectRefused(
        { format: 'agent-authz.bundle', format_version: 1, hash: examples.hash, policies: examples.policies },
        /schema|table/,
      );
    });

    it('malformed JSON: 400 validation.invalid_json', async () => {
      await expectNothingChanged(async () => {
        const r = await rt.call(rt.testKey, {
          method: 'PUT',
          url: '/v1/bundle',
          payload: '{"format": "agent-',
          headers: { 'content-type': 'application/json' },
        });
        expect(r.statusCode).toBe(400);
        expect(json(r).error.code).toBe('validation.invalid_json');
      });
    });
  });

  describe('scopes and isolation', () => {
    it('PUT needs policies:write, GET policies:read', async () => {
      const reader = await rt.keyWith(['policies:read']);
      const writer = await rt.keyWith(['policies:write']);
      await expectNothingChanged(async () => {
        const r = await putBundle(examples, reader);
        expect(r.statusCode).toBe(403);
        expect(json(r).error.code).toBe('auth.scope_insufficient');
      });
      expect((await rt.call(reader, { method: 'GET', url: '/v1/bundle' })).statusCode).toBe(200);
      const w = await rt.call(writer, { method: 'GET', url: '/v1/bundle' });
      expect(w.statusCode).toBe(403);
      expect((await putBundle(examples, writer)).statusCode).toBe(200);
      expect((await rt.call(null, { method: 'PUT', url: '/v1/bundle', payload: examples as object })).statusCode).toBe(
        401,
      );
    });

    it("touches only the key's own account and environment", async () => {
      expect(await getBundle(rt.otherKey)).toMatchObject({ policies: 0 });
      expect(await getBundle(rt.liveKey)).toMatchObject({ policies: 0 });
      expect(await decide(readOrder, rt.otherKey)).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
      expect(await decide(readOrder, rt.liveKey)).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
      expect(await policyEvents(rt.otherKey)).toEqual([]);
      expect(await policyEvents(rt.liveKey)).toEqual([]);
      // A bundle put by the other account leaves ours alone.
      const small = compilePolicies(
        [{ id: 'pol_theirs', name: 'theirs', state: 'enabled', priority: 1, effect: 'deny', actions: ['orders.read'] }],
        dir,
        'theirs',
      );
      expect((await putBundle(small, rt.otherKey)).statusCode).toBe(200);
      expect(await decide(readOrder, rt.otherKey)).toMatchObject({ effect: 'deny', policy_id: 'pol_theirs' });
      expect(await decide(readOrder)).toMatchObject({
        effect: 'allow',
        policy_id: 'pol_support_read_orders_customers',
      });
      expect(await getBundle()).toMatchObject({ hash: examples.hash });
    });
  });

  it('accepts a bundle larger than the 1 MiB limit of other bodies', async () => {
    const many: Policy[] = Array.from({ length: 600 }, (_, i) => ({
      id: `pol_big_${i}`,
      name: `big-${i}`,
      description: 'x'.repeat(1900),
      state: 'enabled',
      priority: 100,
      effect: 'allow',
      agents: [`big-agent-${i}`],
      actions: ['big.read'],
    }));
    const big = compilePolicies(many, dir, 'big');
    expect(JSON.stringify(big).length).toBeGreaterThan(1024 * 1024);
    const r = await putBundle(big, rt.liveKey);
    expect(r.statusCode).toBe(200);
    expect(json(r)).toMatchObject({ hash: big.hash, policies: 600 });
    expect(await decide({ agent_id: 'big-agent-599', action: 'big.read' }, rt.liveKey)).toMatchObject({
      effect: 'allow',
      policy_id: 'pol_big_599',
    });
  });
});
