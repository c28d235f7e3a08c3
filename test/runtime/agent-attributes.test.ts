/**
 * Agent attributes on both stores (docs/policies.md#agent-attributes):
 * PUT /v1/agents/:agent_id replaces them (at most 8,192 bytes of JSON, 413
 * above), registers an unseen agent with agent.registered once (its first
 * decision then fires nothing), GET and the list show them ({} by default),
 * conditions read them as agent.attributes.… at once in the process that
 * answered the PUT, revocation keeps them, and the scopes and isolation hold.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type ListedItem, agent, expectError, decide as kitDecide } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

const path = (agentId: string) => `/v1/agents/${encodeURIComponent(agentId)}`;

describe.each(STORE_KINDS)('agent attributes (%s)', (kind) => {
  let rt: TestRuntime;
  const put = (agentId: string, payload: unknown, key = rt.testKey) =>
    rt.call(key, { method: 'PUT', url: path(agentId), payload: payload as object });
  const decide = (agentId: string, action: string, context?: Record<string, unknown>, key = rt.testKey) =>
    kitDecide(rt, { agent_id: agentId, action, ...(context ? { context } : {}) }, key);
  const registrations = async (agentId: string) =>
    ((await rt.getOk('/v1/events?type=agent.registered&limit=100')).data as Array<JsonObject>).filter(
      (e) => e.data.agent_id === agentId,
    );

  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      {
        id: 'pol_editors',
        effect: 'allow',
        agents: ['*'],
        actions: ['docs.edit'],
        condition: "contains(agent.attributes.roles, 'editor')",
      },
      {
        id: 'pol_owner',
        effect: 'allow',
        agents: ['*'],
        actions: ['docs.delete'],
        condition: 'context.resource.owner == agent.attributes.email',
      },
      {
        id: 'pol_level',
        effect: 'allow',
        agents: ['*'],
        actions: ['docs.publish'],
        condition: 'agent.attributes.level >= 3',
      },
    ]);
  });
  afterAll(() => rt.close());

  it('PUT registers an unseen agent (agent.registered once), GET shows the attributes; its first decision fires nothing', async () => {
    const a = agent('put');
    const at = new Date(rt.clock.now()).toISOString();
    const r = await put(a, { attributes: { email: 'morty@the-citadel.com', roles: ['editor'] } });
    expect(r.statusCode, r.body).toBe(200);
    expect(json(r)).toEqual({
      agent_id: a,
      object: 'agent',
      status: 'active',
      first_seen_at: at,
      revoked_at: null,
      attributes: { email: 'morty@the-citadel.com', roles: ['editor'] },
      livemode: false,
    });
    expect(await rt.getOk(path(a))).toEqual(json(r));
    const [registered, ...more] = await registrations(a);
    expect(more).toEqual([]);
    expect(registered.data.agent).toMatchObject({
      agent_id: a,
      status: 'active',
      attributes: { email: 'morty@the-citadel.com', roles: ['editor'] },
    });
    // The first decision of the now known agent registers nothing again.
    expect((await decide(a, 'docs.edit')).effect).toBe('allow');
    // A second PUT replaces the attributes whole, and fires nothing.
    rt.clock.advance(5);
    const replaced = json(await put(a, { attributes: { roles: ['viewer'] } }));
    expect(replaced).toMatchObject({ attributes: { roles: ['viewer'] }, first_seen_at: at });
    expect(await registrations(a)).toHaveLength(1);
    // The list shows them too.
    const listed = (await rt.getOk('/v1/agents?limit=100')).data.find((x: ListedItem) => x.agent_id === a);
    expect(listed.attributes).toEqual({ roles: ['viewer'] });
  });

  it('an agent first seen by a decision has {} and can be given attributes later (no second agent.registered)', async () => {
    const a = agent('implicit');
    expect((await decide(a, 'docs.edit')).effect).toBe('deny');
    expect((await rt.getOk(path(a))).attributes).toEqual({});
    expect((await put(a, { attributes: { roles: ['editor'] } })).statusCode).toBe(200);
    expect(await registrations(a)).toHaveLength(1);
  });

  it('the next decision in this process uses the new attributes; the missing-value rule applies', async () => {
    const a = agent('decide');
    expect((await decide(a, 'docs.edit')).reason).toBe('policy.not_found');
    await put(a, { attributes: { roles: ['editor'], email: 'a@example.com', level: 2 } });
    const allowed = await decide(a, 'docs.edit');
    expect(allowed).toMatchObject({ effect: 'allow', policy_id: 'pol_editors' });
    // The decision body does not repeat the attributes.
    expect(JSON.stringify(allowed)).not.toContain('a@example.com');
    // Ownership through the request's context.
    expect((await decide(a, 'docs.delete', { resource: { owner: 'a@example.com' } })).effect).toBe('allow');
    expect((await decide(a, 'docs.delete', { resource: { owner: 'b@example.com' } })).effect).toBe('deny');
    expect((await decide(a, 'docs.publish')).effect).toBe('deny');
    await put(a, { attributes: { roles: ['viewer'], level: 3 } });
    expect((await decide(a, 'docs.edit')).effect).toBe('deny');
    expect((await decide(a, 'docs.publish')).effect).toBe('allow');
    // No email now: the comparison with a missing value is false.
    expect((await decide(a, 'docs.delete', { resource: { owner: 'a@example.com' } })).effect).toBe('deny');
    // A level of the wrong type is no match either.
    await put(a, { attributes: { level: '9' } });
    expect((await decide(a, 'docs.publish')).effect).toBe('deny');
    // A context field of the same name is not an attribute.
    expect((await decide(a, 'docs.edit', { roles: ['editor'] })).effect).toBe('deny');
  });

  it('revoke and restore keep the attributes; a revoked agent is denied whatever they say', async () => {
    const a = agent('revoked');
    await put(a, { attributes: { roles: ['editor'] } });
    const revoked = await rt.call(rt.testKey, { method: 'POST', url: `${path(a)}/revoke` });
    expect(json(revoked)).toMatchObject({ status: 'revoked', attributes: { roles: ['editor'] } });
    expect(await decide(a, 'docs.edit')).toMatchObject({ effect: 'deny', reason: 'agent.revoked' });
    // New attributes do not lift a revocation.
    expect(json(await put(a, { attributes: { roles: ['editor', 'admin'] } })).status).toBe('revoked');
    expect((await decide(a, 'docs.edit')).reason).toBe('agent.revoked');
    await rt.call(rt.testKey, { method: 'POST', url: `${path(a)}/restore` });
    expect((await decide(a, 'docs.edit')).effect).toBe('allow');
  });

  it('refuses bad bodies: attributes missing or not an object, unknown fields, more than 8,192 bytes of JSON (413)', async () => {
    const a = agent('bad');
    expectError(await put(a, {}), 400, 'validation.missing_field');
    expectError(await put(a, { attributes: [] }), 400, 'validation.invalid_field');
    expectError(await put(a, { attributes: 'x' }), 400, 'validation.invalid_field');
    expectError(await put(a, { attributes: null }), 400, 'validation.invalid_field');
    expectError(await put(a, { attributes: {}, status: 'revoked' }), 400, 'validation.invalid_field');
    expectError(
      await rt.call(rt.testKey, {
        method: 'PUT',
        url: path(a),
        payload: '{"attributes":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'validation.invalid_json',
    );
    // 8,192 bytes exactly is fine; one more is 413. Bytes of UTF-8, not characters: "é" is two.
    const wrap = (n: number) => ({ note: 'x'.repeat(n) });
    const exact = wrap(8192 - JSON.stringify(wrap(0)).length);
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(8192);
    expect((await put(a, { attributes: exact })).statusCode).toBe(200);
    expectError(
      await put(a, { attributes: wrap(8193 - JSON.stringify(wrap(0)).length) }),
      413,
      'validation.body_too_large',
    );
    const accents = { note: 'é'.repeat(4092) };
    expect(JSON.stringify(accents).length).toBeLessThan(8192);
    expect(Buffer.byteLength(JSON.stringify(accents))).toBeGreaterThan(8192);
    expectError(await put(a, { attributes: accents }), 413, 'validation.body_too_large');
    // The refused PUTs changed nothing.
    expect((await rt.getOk(path(a))).attributes).toEqual(exact);
    // An id longer than 256 characters is refused; so is an empty one.
    expectError(await put('x'.repeat(257), { attributes: {} }), 400, 'validation.invalid_field');
  });

  it('needs agents:write; another environment or account has its own agents', async () => {
    const a = agent('scopes');
    expectError(await put(a, { attributes: {} }, await rt.keyWith(['agents:read'])), 403, 'auth.scope_insufficient');
    expectError(await put(a, { attributes: {} }, null as unknown as string), 401, 'auth.invalid_key');
    expect((await put(a, { attributes: { roles: ['editor'] } }, await rt.keyWith(['agents:write']))).statusCode).toBe(
      200,
    );
    // Not visible to the live environment nor to another account.
    expectError(await rt.call(rt.liveKey, { method: 'GET', url: path(a) }), 404, 'agent.not_found');
    expectError(await rt.call(rt.otherKey, { method: 'GET', url: path(a) }), 404, 'agent.not_found');
    // The other account's agent of the same id is its own: attributes set there do not reach here.
    expect((await put(a, { attributes: { roles: ['viewer'] } }, rt.otherKey)).statusCode).toBe(200);
    expect((await rt.getOk(path(a))).attributes).toEqual({ roles: ['editor'] });
    expect((await decide(a, 'docs.edit')).effect).toBe('allow');
  });
});
