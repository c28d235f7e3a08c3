/**
 * Input limits, each with a clear error (docs/operations.md: "Input limits"), on both
 * stores: a policy's size (64 KiB), policies per environment
 * (AUTHZ_MAX_POLICIES), condition length and depth through the API, list items
 * per policy, agent_id length, context depth, body sizes (1 MiB; 64 MiB for
 * bundles).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBundle } from '../../compiler/bundle/write.js';
import { compileSources } from '../../compiler/compile.js';
import { MAX_DEPTH, MAX_LENGTH } from '../../compiler/condition/index.js';
import { MAX_POLICY_BYTES } from '../../compiler/policy/check.js';
import { ConfigError, configFromEnv } from '../../runtime/config.js';
import { MAX_INPUT_DEPTH } from '../../runtime/http/validation.js';
import { expectContractAnswer } from '../fuzz/helpers/contract.js';
import { stateDigest } from '../fuzz/helpers/state-digest.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

const MAX_POLICIES = 3;

function bundleOf(n: number, prefix = 'b') {
  const yaml = Array.from(
    { length: n },
    (_, i) => `- id: pol_${prefix}${i}\n  effect: allow\n  actions: ["orders.read"]\n  agents: ["${prefix}${i}-*"]`,
  ).join('\n');
  const compiled = compileSources([{ file: 'b.yaml', text: n === 0 ? 'policies: []\n' : `policies:\n${yaml}\n` }]);
  if (!compiled.table) throw new Error(compiled.diagnostics[0]?.message);
  return createBundle(compiled.table);
}

/** A policy whose JSON is about `bytes` long (resources of 250 characters). */
function policyOfSize(bytes: number, name: string) {
  const resource = (i: number) => `r:${String(i).padStart(6, '0')}:${'x'.repeat(240)}`;
  const resources = Array.from({ length: Math.ceil(bytes / 253) }, (_, i) => resource(i));
  return { name, effect: 'allow', actions: ['orders.read'], resources };
}

describe.each(STORE_KINDS)('input limits (%s store)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { maxPolicies: MAX_POLICIES } });
  });
  afterAll(() => rt?.close());

  const post = (url: string, payload: unknown, key = rt.testKey) =>
    rt.call(key, {
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
  const put = (url: string, payload: unknown) =>
    rt.call(rt.testKey, {
      method: 'PUT',
      url,
      headers: { 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
  /** The answer is this error, and the store did not change. */
  async function rejected(
    send: () => Promise<Awaited<ReturnType<typeof post>>>,
    status: number,
    code: string,
    path?: string,
  ) {
    const before = await stateDigest(rt.store.sql);
    const r = await send();
    expect(r.statusCode, r.body.slice(0, 300)).toBe(status);
    expect(expectContractAnswer(r, code)).toBe(code);
    if (path !== undefined) expect(json(r).error.details.map((d: JsonObject) => d.path)).toContain(path);
    expect(await stateDigest(rt.store.sql)).toEqual(before);
    return json(r).error as { message: string; details?: Array<{ path: string; message: string }> };
  }

  it(`a policy over ${MAX_POLICY_BYTES / 1024} KiB: 400 validation.invalid_policy at /; just under is accepted`, async () => {
    const error = await rejected(
      () => post('/v1/policies', policyOfSize(MAX_POLICY_BYTES + 2000, 'too-big')),
      400,
      'validation.invalid_policy',
      '/',
    );
    expect(error.message).toContain('64 KiB');
    const under = await post('/v1/policies', policyOfSize(MAX_POLICY_BYTES - 2000, 'just-under'));
    expect(under.statusCode, under.body.slice(0, 300)).toBe(201);
    await rejected(
      () =>
        put(`/v1/policies/${json(under).id}`, {
          ...policyOfSize(MAX_POLICY_BYTES + 2000, 'just-under'),
          id: json(under).id,
        }),
      400,
      'validation.invalid_policy',
      '/',
    );
    expect((await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/policies/${json(under).id}` })).statusCode).toBe(
      200,
    );
  });

  it(`policies per environment (AUTHZ_MAX_POLICIES=${MAX_POLICIES}): 400 validation.too_many_policies beyond it, by POST or bundle`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < MAX_POLICIES; i++) {
      const r = await post('/v1/policies', {
        name: `count-${i}`,
        effect: 'allow',
        actions: ['orders.read'],
        agents: [`c${i}`],
      });
      expect(r.statusCode, r.body).toBe(201);
      ids.push(json(r).id);
    }
    const error = await rejected(
      () => post('/v1/policies', { name: 'one-too-many', effect: 'allow', actions: ['orders.read'] }),
      400,
      'validation.too_many_policies',
    );
    expect(error.message).toContain('AUTHZ_MAX_POLICIES');
    // Another environment has its own count.
    expect(
      (await post('/v1/policies', { name: 'live-one', effect: 'allow', actions: ['orders.read'] }, rt.liveKey))
        .statusCode,
    ).toBe(201);
    // Replacing is not adding.
    expect(
      (await put(`/v1/policies/${ids[0]}`, { id: ids[0], name: 'count-0', effect: 'deny', actions: ['orders.read'] }))
        .statusCode,
    ).toBe(200);
    await rejected(() => put('/v1/bundle', bundleOf(MAX_POLICIES + 1)), 400, 'validation.too_many_policies');
    const full = await put('/v1/bundle', bundleOf(MAX_POLICIES));
    expect(full.statusCode, full.body.slice(0, 300)).toBe(200);
    expect(json(full).policies).toBe(MAX_POLICIES);
    expect((await rt.call(rt.testKey, { method: 'DELETE', url: '/v1/policies/pol_b0' })).statusCode).toBe(200);
    expect(
      (await post('/v1/policies', { name: 'room-again', effect: 'allow', actions: ['orders.read'] })).statusCode,
    ).toBe(201);
    expect((await put('/v1/bundle', bundleOf(0))).statusCode).toBe(200);
  });

  it(`conditions over ${MAX_LENGTH} characters or ${MAX_DEPTH} levels: 400 validation.invalid_policy at /condition`, async () => {
    const long = `context.s == '${'a'.repeat(MAX_LENGTH)}'`;
    await rejected(
      () => post('/v1/policies', { name: 'long-cond', effect: 'allow', actions: ['orders.read'], condition: long }),
      400,
      'validation.invalid_policy',
      '/condition',
    );
    const deep = `${'('.repeat(MAX_DEPTH + 1)}amount < 5${')'.repeat(MAX_DEPTH + 1)}`;
    const error = await rejected(
      () => post('/v1/policies', { name: 'deep-cond', effect: 'allow', actions: ['orders.read'], condition: deep }),
      400,
      'validation.invalid_policy',
      '/condition',
    );
    expect(error.message).toMatch(/nested too deeply/);
    const ok = await post('/v1/policies', {
      name: 'ok-cond',
      effect: 'allow',
      actions: ['orders.read'],
      condition: `${'('.repeat(MAX_DEPTH - 1)}amount < 5${')'.repeat(MAX_DEPTH - 1)}`,
    });
    expect(ok.statusCode, ok.body).toBe(201);
    expect((await rt.call(rt.testKey, { method: 'DELETE', url: `/v1/policies/${json(ok).id}` })).statusCode).toBe(200);
  });

  it('more than 1000 agents, actions or resources in a policy: 400 validation.invalid_policy at the list', async () => {
    const many = (f: (i: number) => string) => Array.from({ length: 1001 }, (_, i) => f(i));
    const letters = (i: number) => i.toString(26).replace(/[0-9]/g, (d) => 'qrstuvwxyz'[Number(d)]!);
    await rejected(
      () =>
        post('/v1/policies', {
          name: 'many-agents',
          effect: 'allow',
          actions: ['orders.read'],
          agents: many((i) => `a${i}`),
        }),
      400,
      'validation.invalid_policy',
      '/agents',
    );
    await rejected(
      () =>
        post('/v1/policies', { name: 'many-actions', effect: 'allow', actions: many((i) => `orders.r${letters(i)}`) }),
      400,
      'validation.invalid_policy',
      '/actions',
    );
    await rejected(
      () =>
        post('/v1/policies', {
          name: 'many-res',
          effect: 'allow',
          actions: ['orders.read'],
          resources: many((i) => `r${i}`),
        }),
      400,
      'validation.invalid_policy',
      '/resources',
    );
  });

  it('agent_id over 256 characters: 400 validation.invalid_field, in a body and in a path', async () => {
    await rejected(
      () => post('/v1/decisions', { agent_id: 'a'.repeat(257), action: 'orders.read' }),
      400,
      'validation.invalid_field',
      '/agent_id',
    );
    const ok = await post('/v1/decisions', { agent_id: 'a'.repeat(256), action: 'orders.read' });
    expect(ok.statusCode, ok.body).toBe(200);
    await rejected(
      () => rt.call(rt.testKey, { method: 'GET', url: `/v1/agents/${'a'.repeat(257)}` }),
      400,
      'validation.invalid_field',
    );
    expect((await rt.call(rt.testKey, { method: 'GET', url: `/v1/agents/${'a'.repeat(256)}` })).statusCode).toBe(200);
  });

  it(`context nested over ${MAX_INPUT_DEPTH} levels: 400 validation.invalid_field; its size is bounded by the 1 MiB body`, async () => {
    const nested = (d: number) => JSON.parse(`${'['.repeat(d)}1${']'.repeat(d)}`);
    await rejected(
      () => post('/v1/decisions', { agent_id: 'ctx', action: 'orders.read', context: { a: nested(MAX_INPUT_DEPTH) } }),
      400,
      'validation.invalid_field',
      `/context/a${'/0'.repeat(MAX_INPUT_DEPTH - 2)}`,
    );
    expect(
      (
        await post('/v1/decisions', {
          agent_id: 'ctx',
          action: 'orders.read',
          context: { a: nested(MAX_INPUT_DEPTH - 3) },
        })
      ).statusCode,
    ).toBe(200);
    const error = await rejected(
      () =>
        post('/v1/decisions', { agent_id: 'ctx', action: 'orders.read', context: { pad: 'x'.repeat(1024 * 1024) } }),
      413,
      'validation.body_too_large',
    );
    expect(error.message).toContain('1 MiB');
  });

  it('PUT /v1/bundle takes bodies over 1 MiB but not over 64 MiB: 413 naming 64 MiB', async () => {
    const padded = JSON.stringify({ ...bundleOf(1, 'pad'), compiler: 'x'.repeat(2 * 1024 * 1024) });
    const r = await put('/v1/bundle', padded);
    expect(r.statusCode, r.body.slice(0, 200)).not.toBe(413);
    const huge = `{"format":"agent-authz.bundle","pad":"${'x'.repeat(64 * 1024 * 1024)}"}`;
    const error = await rejected(() => put('/v1/bundle', huge), 413, 'validation.body_too_large');
    expect(error.message).toContain('64 MiB');
  });
});

describe('limits in the compiler and the configuration', () => {
  it(`a policy file with a policy over ${MAX_POLICY_BYTES / 1024} KiB: policy.too_large at its line`, () => {
    const resources = Array.from({ length: 300 }, (_, i) => `    - "r:${i}:${'x'.repeat(240)}"`).join('\n');
    const text = `policies:\n  - id: pol_small\n    effect: allow\n    actions: ["a.b"]\n  - id: pol_big\n    effect: allow\n    actions: ["a.b"]\n    resources:\n${resources}\n`;
    const result = compileSources([{ file: 'big.yaml', text }]);
    expect(result.table).toBeUndefined();
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    expect(errors.map((d) => [d.code, d.line, d.path])).toEqual([['policy.too_large', 5, '/policies/1']]);
  });

  it('AUTHZ_MAX_POLICIES: default 100000, integer from 1', () => {
    expect(configFromEnv({}).maxPolicies).toBe(100_000);
    expect(configFromEnv({ AUTHZ_MAX_POLICIES: '5' }).maxPolicies).toBe(5);
    for (const bad of ['0', '-1', '1.5', 'many'])
      expect(() => configFromEnv({ AUTHZ_MAX_POLICIES: bad })).toThrow(ConfigError);
  });
});
