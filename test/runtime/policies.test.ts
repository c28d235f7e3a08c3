/**
 * /v1/policies (docs/api.md#policies, docs/api.md#conventions): create, whole replacement, read,
 * list, delete; every problem of an invalid body in error.details; a change
 * applies to the very next decision; policy.updated on each change; scopes;
 * isolation between accounts and environments. On both kinds of store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { FULL_POLICY } from './helpers/policies.js';
import type { JsonObject } from '../helpers/json.js';
import { decide as kitDecide } from '../helpers/kit.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const GENERATED_ID = /^pol_[0-9A-Za-z]{24}$/;

describe.each(STORE_KINDS)('policies API (%s store)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt?.close());

  const create = (body: unknown, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url: '/v1/policies', payload: body as object });
  const replace = (id: string, body: unknown, key = rt.testKey) =>
    rt.call(key, { method: 'PUT', url: `/v1/policies/${id}`, payload: body as object });
  const getOne = (id: string, key = rt.testKey) => rt.call(key, { method: 'GET', url: `/v1/policies/${id}` });
  const remove = (id: string, key = rt.testKey) => rt.call(key, { method: 'DELETE', url: `/v1/policies/${id}` });
  const list = async (query = 'limit=100', key = rt.testKey) => {
    const r = await rt.call(key, { method: 'GET', url: `/v1/policies?${query}` });
    expect(r.statusCode).toBe(200);
    return json(r) as { object: string; data: Array<JsonObject>; has_more: boolean };
  };
  const decide = (agent_id: string, action: string, resource?: string, key = rt.testKey) =>
    kitDecide(rt, { agent_id, action, ...(resource ? { resource } : {}) }, key);
  const policyEvents = async (key = rt.testKey) =>
    (await rt.getOk('/v1/events?type=policy.updated&limit=100', key)).data as Array<JsonObject>;
  /** A created policy's answer without its `warnings` (the lints of POST): the stored policy, as GET answers it. */
  const stored = (r: Parameters<typeof json>[0]) => {
    const { warnings, ...policy } = json(r) as JsonObject;
    expect(Array.isArray(warnings)).toBe(true);
    return policy;
  };
  const bundleState = async (key = rt.testKey) => json(await rt.call(key, { method: 'GET', url: '/v1/bundle' }));

  describe('create', () => {
    it('answers 201 with the normalised policy, a generated pol_ id and the defaults', async () => {
      const r = await create({ name: 'orders-read', effect: 'allow', actions: ['orders.read'] });
      expect(r.statusCode).toBe(201);
      expect(r.headers['request-id']).toMatch(/^req_/);
      expect(json(r).warnings).toEqual([]);
      const p = stored(r);
      expect(p.id).toMatch(GENERATED_ID);
      expect(p).toMatchObject({
        object: 'policy',
        name: 'orders-read',
        state: 'enabled',
        priority: 100,
        effect: 'allow',
        actions: ['orders.read'],
        livemode: false,
      });
      expect(p.created_at).toMatch(ISO_MS);
      expect(p.updated_at).toBe(p.created_at);
      expect(p).not.toHaveProperty('agents');
      expect(p).not.toHaveProperty('resources');
      expect(p).not.toHaveProperty('condition');

      const g = await getOne(p.id);
      expect(g.statusCode).toBe(200);
      expect(json(g)).toEqual(p);
    });

    it('keeps every field given, and the id when one is given', async () => {
      const body = FULL_POLICY;
      const r = await create(body);
      expect(r.statusCode).toBe(201);
      expect(json(r)).toMatchObject({ ...body, object: 'policy' });
    });

    it('generates distinct ids for names that differ only in punctuation (ids are opaque, not derived from the name)', async () => {
      const a = await create({ name: 'gen-id-x', effect: 'allow', actions: ['genid.read'] });
      const b = await create({ name: 'gen_id_x', effect: 'allow', actions: ['genid.read'] });
      expect(a.statusCode).toBe(201);
      expect(b.statusCode).toBe(201);
      expect(json(a).id).toMatch(GENERATED_ID);
      expect(json(b).id).toMatch(GENERATED_ID);
      expect(json(a).id).not.toBe(json(b).id);
    });

    it('answers 409 for an id that exists, and changes nothing', async () => {
      const first = await create({
        id: 'pol_conflict_1',
        name: 'conflict-1',
        effect: 'allow',
        actions: ['conflict.read'],
      });
      expect(first.statusCode).toBe(201);
      const before = await bundleState();
      const eventsBefore = (await policyEvents()).length;
      const again = await create({
        id: 'pol_conflict_1',
        name: 'conflict-1b',
        effect: 'deny',
        actions: ['conflict.write'],
      });
      expect(again.statusCode).toBe(409);
      expect(json(again).error.code).toBe('policy.already_exists');
      expect(json(again).error.request_id).toBe(again.headers['request-id']);
      expect(json(await getOne('pol_conflict_1'))).toEqual(stored(first));
      expect(await bundleState()).toEqual(before);
      expect((await policyEvents()).length).toBe(eventsBefore);
    });
  });

  describe('warnings', () => {
    it('answers the lints of the new policy beside it, as POST /v1/policies/validate reports them', async () => {
      const first = await create({ name: 'lint-allow', priority: 40, effect: 'allow', actions: ['lintcheck.read'] });
      expect(json(first).warnings).toEqual([]);
      const second = { name: 'lint-deny', priority: 40, effect: 'deny', actions: ['lintcheck.read'] };
      const validated = json(
        await rt.call(rt.testKey, { method: 'POST', url: '/v1/policies/validate', payload: second }),
      );
      const expected = (validated.diagnostics as Array<JsonObject>).filter((d) => d.severity === 'warning');
      expect(expected.map((d) => d.code)).toEqual(['lint.conflict']);
      const r = await create(second);
      expect(r.statusCode).toBe(201);
      const body = json(r);
      expect(body.warnings.map((d: JsonObject) => d.code)).toEqual(['lint.conflict']);
      // The same words (the message names the other policy, whose id is the same either way).
      expect(body.warnings[0].message).toBe(
        expected[0]!.message.replace(/pol_[0-9A-Za-z]{24}/g, (id: string) => (id === json(first).id ? id : body.id)),
      );
      expect(body.warnings[0]).toMatchObject({ severity: 'warning', path: '/' });
      // The policy is stored all the same, and GET answers it without the warnings.
      expect(json(await getOne(body.id))).toEqual(stored(r));
    });
  });

  describe('invalid bodies', () => {
    const expectInvalid = async (r: Awaited<ReturnType<typeof create>>) => {
      expect(r.statusCode).toBe(400);
      const error = json(r).error;
      expect(error.code).toBe('validation.invalid_policy');
      expect(error.request_id).toBe(r.headers['request-id']);
      expect(typeof error.message).toBe('string');
      expect(Array.isArray(error.details)).toBe(true);
      for (const d of error.details) {
        expect(typeof d.path).toBe('string');
        expect(d.path.startsWith('/')).toBe(true);
        expect(typeof d.message).toBe('string');
        expect(d.message.length).toBeGreaterThan(0);
      }
      return error as { code: string; message: string; details: Array<{ path: string; message: string }> };
    };

    it('lists every problem: an unknown field, a bad action pattern and a bad condition', async () => {
      const r = await create({
        name: 'three-problems',
        effect: 'allow',
        acton: ['x.y'],
        actions: ['Orders.Read'],
        condition: 'amount <= ',
      });
      const error = await expectInvalid(r);
      expect(error.details.map((d) => d.path).sort()).toEqual(['/actions/0', '/acton', '/condition']);
      expect(error.details.find((d) => d.path === '/acton')!.message).toMatch(/acton/);
      expect(error.details.find((d) => d.path === '/actions/0')!.message).toMatch(/Orders\.Read/);
    });

    it('lists a missing required field and wrong types', async () => {
      const error = await expectInvalid(
        await create({ name: 'no-effect', actions: ['a.b'], priority: 'high', state: 'paused' }),
      );
      const paths = error.details.map((d) => d.path);
      expect(paths).toContain('/priority');
      expect(paths).toContain('/state');
      expect(error.details.some((d) => /effect/.test(d.message))).toBe(true);
    });

    it('rejects a body that is not an object', async () => {
      await expectInvalid(await create(['not', 'a', 'policy']));
    });

    it('rejects malformed JSON with validation.invalid_json', async () => {
      const r = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/policies',
        payload: '{"name": ',
        headers: { 'content-type': 'application/json' },
      });
      expect(r.statusCode).toBe(400);
      expect(json(r).error.code).toBe('validation.invalid_json');
    });

    it('rejects a name that another policy of the environment has', async () => {
      const first = await create({ name: 'unique-name', effect: 'allow', actions: ['unique.read'] });
      expect(first.statusCode).toBe(201);
      const error = await expectInvalid(
        await create({ name: 'unique-name', effect: 'deny', actions: ['unique.write'] }),
      );
      expect(error.details.some((d) => d.path === '/name' && /unique-name/.test(d.message))).toBe(true);
      // Renaming another policy to that name is refused too.
      const other = stored(await create({ name: 'another-name', effect: 'allow', actions: ['unique.list'] }));
      const renamed = await replace(other.id, { name: 'unique-name', effect: 'allow', actions: ['unique.list'] });
      const e2 = await expectInvalid(renamed);
      expect(e2.details.some((d) => d.path === '/name')).toBe(true);
      expect(json(await getOne(other.id)).name).toBe('another-name');
    });

    it('stores nothing and fires nothing for a rejected request', async () => {
      const before = await list();
      const version = await bundleState();
      const events = (await policyEvents()).length;
      await expectInvalid(await create({ name: 'rejected-1', effect: 'allow', actions: ['*.*.*'] }));
      await expectInvalid(await create({ name: 'rejected-2', effect: 'maybe', actions: ['rejected.read'] }));
      await expectInvalid(
        await create({ name: 'rejected-3', effect: 'allow', actions: ['rejected.read'], condition: 'context.x ==' }),
      );
      expect(await list()).toEqual(before);
      expect(await bundleState()).toEqual(version);
      expect((await policyEvents()).length).toBe(events);
      expect(before.data.some((p) => String(p.name).startsWith('rejected-'))).toBe(false);
      expect((await decide('anyone', 'rejected.read')).reason).toBe('policy.not_found');
    });

    it('rejects an invalid replacement and keeps the stored policy', async () => {
      const p = stored(await create({ name: 'keep-me', effect: 'allow', actions: ['keep.read'] }));
      const r = await replace(p.id, {
        name: 'keep-me',
        effect: 'allow',
        actions: ['keep.read'],
        budget: { unit: 'USD' },
      });
      const error = await expectInvalid(r);
      expect(error.details.some((d) => d.path.startsWith('/budget'))).toBe(true);
      expect(json(await getOne(p.id))).toEqual(p);
    });
  });

  describe('replace, read, list, delete', () => {
    it('PUT replaces the whole policy (omitted fields fall back to their defaults)', async () => {
      const created = json(
        await create({
          name: 'replace-me',
          description: 'before',
          priority: 5,
          effect: 'deny',
          agents: ['a-*'],
          actions: ['replace.read'],
          resources: ['r:*'],
        }),
      );
      rt.clock.advance(60);
      const r = await replace(created.id, { name: 'replace-me', effect: 'allow', actions: ['replace.write'] });
      expect(r.statusCode).toBe(200);
      const updated = json(r);
      expect(updated).toMatchObject({
        id: created.id,
        object: 'policy',
        name: 'replace-me',
        state: 'enabled',
        priority: 100,
        effect: 'allow',
        actions: ['replace.write'],
      });
      expect(updated).not.toHaveProperty('description');
      expect(updated).not.toHaveProperty('agents');
      expect(updated).not.toHaveProperty('resources');
      expect(updated.created_at).toBe(created.created_at);
      expect(updated.updated_at).toMatch(ISO_MS);
      expect(Date.parse(updated.updated_at)).toBeGreaterThan(Date.parse(created.updated_at));
      expect(json(await getOne(created.id))).toEqual(updated);
    });

    it('PUT of an identical body changes nothing: same updated_at as a later GET, no event', async () => {
      const created = stored(await create({ name: 'no-op', effect: 'allow', actions: ['noop.read'] }));
      const events = (await policyEvents()).length;
      rt.clock.advance(30);
      const r = await replace(created.id, { name: 'no-op', effect: 'allow', actions: ['noop.read'] });
      expect(r.statusCode).toBe(200);
      expect(json(r)).toEqual(created);
      expect(json(await getOne(created.id))).toEqual(created);
      expect((await policyEvents()).length).toBe(events);
    });

    it('PUT accepts the id in the body when it equals the path, and refuses a different one', async () => {
      const created = stored(await create({ name: 'id-match', effect: 'allow', actions: ['idmatch.read'] }));
      const same = await replace(created.id, {
        id: created.id,
        name: 'id-match',
        effect: 'allow',
        actions: ['idmatch.write'],
      });
      expect(same.statusCode).toBe(200);
      expect(json(same).actions).toEqual(['idmatch.write']);
      const other = await replace(created.id, {
        id: 'pol_something_else',
        name: 'id-match',
        effect: 'deny',
        actions: ['idmatch.write'],
      });
      expect(other.statusCode).toBe(400);
      expect(json(other).error.code).toBe('validation.invalid_policy');
      expect(json(other).error.details).toContainEqual(expect.objectContaining({ path: '/id' }));
      // The id mismatch is listed beside the body's other problems.
      const both = await replace(created.id, {
        id: 'pol_something_else',
        name: 'id-match',
        effect: 'deny',
        actions: ['Bad'],
      });
      expect(both.statusCode).toBe(400);
      expect(
        json(both)
          .error.details.map((d: { path: string }) => d.path)
          .sort(),
      ).toEqual(['/actions/0', '/id']);
      expect(json(await getOne(created.id))).toEqual(json(same));
    });

    it('PUT of an unknown id answers 404 policy.not_found and creates nothing', async () => {
      const r = await replace('pol_does_not_exist', { name: 'ghost', effect: 'allow', actions: ['ghost.read'] });
      expect(r.statusCode).toBe(404);
      expect(json(r).error.code).toBe('policy.not_found');
      expect((await getOne('pol_does_not_exist')).statusCode).toBe(404);
      expect((await list()).data.some((p) => p.name === 'ghost')).toBe(false);
    });

    it('GET of an unknown id answers 404 policy.not_found', async () => {
      const r = await getOne('pol_nope');
      expect(r.statusCode).toBe(404);
      expect(json(r).error).toMatchObject({ code: 'policy.not_found' });
      expect(json(r).error.request_id).toMatch(/^req_/);
    });

    it('lists newest first with cursor pagination', async () => {
      const ids: string[] = [];
      for (const n of [1, 2, 3])
        ids.push(stored(await create({ name: `page-${n}`, effect: 'allow', actions: [`page.p${n}`] })).id);
      const first = await list('limit=2');
      expect(first.object).toBe('list');
      expect(first.data.map((p) => p.id)).toEqual([ids[2], ids[1]]);
      expect(first.has_more).toBe(true);
      for (const p of first.data) expect(p.object).toBe('policy');
      const second = await list(`limit=2&starting_after=${ids[1]}`);
      expect(second.data[0]!.id).toBe(ids[0]);
      const all = await list('limit=100');
      expect(all.has_more).toBe(false);
      const positions = ids.map((id) => all.data.findIndex((p) => p.id === id));
      expect(positions.every((i) => i >= 0)).toBe(true);
      expect(positions[2]! < positions[1]! && positions[1]! < positions[0]!).toBe(true);
      // Walking every page with starting_after visits each policy once.
      const seen: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await list(`limit=3${cursor ? `&starting_after=${cursor}` : ''}`);
        seen.push(...page.data.map((p) => p.id as string));
        if (!page.has_more) break;
        cursor = page.data.at(-1)!.id;
      }
      expect(seen).toEqual(all.data.map((p) => p.id));
    });

    it('rejects a bad limit', async () => {
      const r = await rt.call(rt.testKey, { method: 'GET', url: '/v1/policies?limit=0' });
      expect(r.statusCode).toBe(400);
      const r2 = await rt.call(rt.testKey, { method: 'GET', url: '/v1/policies?limit=101' });
      expect(r2.statusCode).toBe(400);
    });

    it('DELETE removes the policy; later GET, PUT and DELETE answer 404', async () => {
      const created = stored(await create({ name: 'delete-me', effect: 'allow', actions: ['delete.read'] }));
      const r = await remove(created.id);
      expect(r.statusCode).toBe(200);
      expect(json(r)).toMatchObject({ id: created.id, object: 'policy', deleted: true });
      expect((await getOne(created.id)).statusCode).toBe(404);
      expect((await list()).data.some((p) => p.id === created.id)).toBe(false);
      const again = await remove(created.id);
      expect(again.statusCode).toBe(404);
      expect(json(again).error.code).toBe('policy.not_found');
      expect(
        (await replace(created.id, { name: 'delete-me', effect: 'allow', actions: ['delete.read'] })).statusCode,
      ).toBe(404);
      // The name is free again.
      expect((await create({ name: 'delete-me', effect: 'allow', actions: ['delete.read'] })).statusCode).toBe(201);
    });
  });

  describe('changes apply to the next decision and fire policy.updated', () => {
    it('create -> allow; disable -> policy.disabled; enable -> allow; delete -> policy.not_found', async () => {
      const body = {
        name: 'lifecycle',
        effect: 'allow',
        agents: ['life-*'],
        actions: ['life.check'],
        resources: ['thing:*'],
      };
      expect((await decide('life-1', 'life.check', 'thing:1')).reason).toBe('policy.not_found');

      const created = stored(await create(body));
      const allow = await decide('life-1', 'life.check', 'thing:1');
      expect(allow).toMatchObject({ effect: 'allow', reason: 'policy.matched', policy_id: created.id });

      expect((await replace(created.id, { ...body, state: 'disabled' })).statusCode).toBe(200);
      expect(await decide('life-1', 'life.check', 'thing:1')).toMatchObject({
        effect: 'deny',
        reason: 'policy.disabled',
      });

      expect((await replace(created.id, { ...body, state: 'enabled' })).statusCode).toBe(200);
      expect(await decide('life-1', 'life.check', 'thing:1')).toMatchObject({ effect: 'allow', policy_id: created.id });

      expect((await replace(created.id, { ...body, resources: ['other:*'] })).statusCode).toBe(200);
      expect(await decide('life-1', 'life.check', 'thing:1')).toMatchObject({
        effect: 'deny',
        reason: 'resource.not_allowed',
      });

      expect((await remove(created.id)).statusCode).toBe(200);
      expect(await decide('life-1', 'life.check', 'thing:1')).toMatchObject({
        effect: 'deny',
        reason: 'policy.not_found',
      });

      const events = (await policyEvents()).filter((e) => e.data.policy.id === created.id).reverse();
      expect(events.map((e) => e.data.change)).toEqual(['created', 'disabled', 'enabled', 'updated', 'deleted']);
      for (const e of events) {
        expect(e).toMatchObject({ object: 'event', type: 'policy.updated', account_id: rt.accountId, livemode: false });
        expect(e.id).toMatch(/^evt_/);
        expect(e.created_at).toMatch(ISO_MS);
        expect(e.data.policy).toMatchObject({ id: created.id, object: 'policy', name: 'lifecycle' });
      }
      expect(events[1]!.data.policy.state).toBe('disabled');
      expect(events[3]!.data.policy.resources).toEqual(['other:*']);
      const one = await rt.call(rt.testKey, { method: 'GET', url: `/v1/events/${events[0]!.id}` });
      expect(json(one)).toEqual(events[0]);
    });

    it('a higher-priority deny created later wins at once', async () => {
      const allow = stored(await create({ name: 'prio-allow', effect: 'allow', actions: ['prio.check'] }));
      expect((await decide('p-1', 'prio.check')).policy_id).toBe(allow.id);
      const deny = stored(await create({ name: 'prio-deny', priority: 10, effect: 'deny', actions: ['prio.check'] }));
      const d = await decide('p-1', 'prio.check');
      expect(d).toMatchObject({ effect: 'deny', reason: 'policy.matched', policy_id: deny.id });
      expect(d.metadata.warnings).toContainEqual(expect.objectContaining({ code: 'policy.conflict' }));
    });

    it('only policy.updated events are listed with ?type=policy.updated', async () => {
      await decide('type-filter', 'orders.read');
      const events = await policyEvents();
      expect(events.length).toBeGreaterThan(0);
      for (const e of events) expect(e.type).toBe('policy.updated');
      for (const e of events) expect(['created', 'updated', 'enabled', 'disabled', 'deleted']).toContain(e.data.change);
    });
  });

  describe('scopes', () => {
    it('policies:read reads but cannot write', async () => {
      const reader = await rt.keyWith(['policies:read']);
      const existing = stored(await create({ name: 'scope-target', effect: 'allow', actions: ['scope.read'] }));
      expect((await rt.call(reader, { method: 'GET', url: '/v1/policies' })).statusCode).toBe(200);
      expect((await getOne(existing.id, reader)).statusCode).toBe(200);
      for (const r of [
        await create({ name: 'scope-new', effect: 'allow', actions: ['scope.write'] }, reader),
        await replace(existing.id, { name: 'scope-target', effect: 'deny', actions: ['scope.read'] }, reader),
        await remove(existing.id, reader),
      ]) {
        expect(r.statusCode).toBe(403);
        expect(json(r).error.code).toBe('auth.scope_insufficient');
      }
      expect(json(await getOne(existing.id))).toEqual(existing);
    });

    it('policies:write writes but does not read', async () => {
      const writer = await rt.keyWith(['policies:write']);
      const r = await create({ name: 'scope-writer', effect: 'allow', actions: ['scopew.read'] }, writer);
      expect(r.statusCode).toBe(201);
      const id = json(r).id;
      expect(
        (await replace(id, { name: 'scope-writer', effect: 'deny', actions: ['scopew.read'] }, writer)).statusCode,
      ).toBe(200);
      for (const g of [await getOne(id, writer), await rt.call(writer, { method: 'GET', url: '/v1/policies' })]) {
        expect(g.statusCode).toBe(403);
        expect(json(g).error.code).toBe('auth.scope_insufficient');
      }
      expect((await remove(id, writer)).statusCode).toBe(200);
    });

    it('another scope is not enough; no key is 401', async () => {
      const decider = await rt.keyWith(['decisions:write', 'decisions:read']);
      const r = await create({ name: 'scope-decider', effect: 'allow', actions: ['scoped.read'] }, decider);
      expect(r.statusCode).toBe(403);
      expect(json(r).error.code).toBe('auth.scope_insufficient');
      const anon = await rt.call(null, { method: 'GET', url: '/v1/policies' });
      expect(anon.statusCode).toBe(401);
      expect(json(anon).error.code).toBe('auth.invalid_key');
    });
  });

  describe('isolation', () => {
    it("another account's policies are invisible and never affect decisions", async () => {
      const theirs = await create(
        { id: 'pol_isolated', name: 'isolated', effect: 'allow', actions: ['iso.check'] },
        rt.otherKey,
      );
      expect(theirs.statusCode).toBe(201);
      expect((await decide('iso-1', 'iso.check', undefined, rt.otherKey)).effect).toBe('allow');

      expect(await decide('iso-1', 'iso.check')).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
      for (const r of [
        await getOne('pol_isolated'),
        await replace('pol_isolated', { name: 'isolated', effect: 'deny', actions: ['iso.check'] }),
        await remove('pol_isolated'),
      ]) {
        expect(r.statusCode).toBe(404);
        expect(json(r).error.code).toBe('policy.not_found');
      }
      expect((await list()).data.some((p) => p.id === 'pol_isolated')).toBe(false);
      expect((await policyEvents()).some((e) => e.data.policy.id === 'pol_isolated')).toBe(false);
      // Still theirs, unchanged.
      expect(json(await getOne('pol_isolated', rt.otherKey))).toMatchObject({ effect: 'allow' });
      // Ids are unique per environment: the same id can exist here too.
      const mine = await create({ id: 'pol_isolated', name: 'isolated', effect: 'deny', actions: ['iso.check'] });
      expect(mine.statusCode).toBe(201);
      expect((await decide('iso-1', 'iso.check', undefined, rt.otherKey)).effect).toBe('allow');
      expect((await decide('iso-1', 'iso.check')).effect).toBe('deny');
      expect((await decide('iso-1', 'iso.check')).reason).toBe('policy.matched');
      // Our policies are invisible to them as well.
      const own = stored(await create({ name: 'mine-only', effect: 'allow', actions: ['mine.read'] }));
      expect((await getOne(own.id, rt.otherKey)).statusCode).toBe(404);
      expect((await list('limit=100', rt.otherKey)).data.map((p) => p.id)).toEqual(['pol_isolated']);
    });

    it("the live environment's policies are invisible to test keys and never affect test decisions", async () => {
      const live = await create({ name: 'live-only', effect: 'allow', actions: ['live.check'] }, rt.liveKey);
      expect(live.statusCode).toBe(201);
      expect(json(live).livemode).toBe(true);
      const id = json(live).id;
      expect((await decide('l-1', 'live.check', undefined, rt.liveKey)).effect).toBe('allow');
      expect(await decide('l-1', 'live.check')).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
      expect((await getOne(id)).statusCode).toBe(404);
      expect((await remove(id)).statusCode).toBe(404);
      expect((await list()).data.some((p) => p.id === id)).toBe(false);
      expect((await list('limit=100', rt.liveKey)).data.map((p) => p.id)).toEqual([id]);
      // A name used in live is free in test.
      expect((await create({ name: 'live-only', effect: 'deny', actions: ['live.check'] })).statusCode).toBe(201);
      expect((await decide('l-1', 'live.check', undefined, rt.liveKey)).effect).toBe('allow');
    });
  });
});
