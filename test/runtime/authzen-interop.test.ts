/**
 * AuthZEN as the interop scenarios use it, on both stores (docs/api.md#the-todo-scenario). Our own cases, written from the rules of
 * the working group's Todo and API gateway scenarios: the users' roles and
 * emails stored as agent attributes, the scenario's rules as the policies of
 * examples/authzen-todo (ownership through context.resource), action names
 * outside our grammar mapped to authzen.<name>. Then the standard to the
 * letter: the three evaluations semantics, an empty evaluations array, the
 * 100-entry limit, bodies that are not JSON objects (400, never 415), unknown
 * members ignored at every level, subject properties beside the stored
 * attributes.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSources, packageRoot, readSource } from '../../compiler/index.js';
import { installPolicies } from '../../runtime/seed.js';
import type { Principal } from '../../runtime/tenant.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { type EvaluationItem, expectError } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

/** The scenario's five users: an opaque subject id (as a PEP takes it from a token), an email, roles. */
const USERS = {
  rick: { id: 'c3ViLXJpY2stMDE', email: 'rick@the-citadel.com', roles: ['admin', 'evil_genius'] },
  morty: { id: 'c3ViLW1vcnR5LTAy', email: 'morty@the-citadel.com', roles: ['editor'] },
  summer: { id: 'c3ViLXN1bW1lci0wMw', email: 'summer@the-smiths.com', roles: ['editor'] },
  beth: { id: 'c3ViLWJldGgtMDQ', email: 'beth@the-smiths.com', roles: ['viewer'] },
  jerry: { id: 'c3ViLWplcnJ5LTA1', email: 'jerry@the-smiths.com', roles: ['viewer'] },
} as const;
type User = keyof typeof USERS;

/**
 * What the Todo rules give each user: read a user, read the todos, create a
 * todo, update their own todo, update someone else's, delete their own,
 * delete someone else's. (viewer reads; editor also creates and changes or
 * deletes their own; admin deletes any; evil_genius updates any.)
 */
const TODO_EXPECTED: Record<User, [boolean, boolean, boolean, boolean, boolean, boolean, boolean]> = {
  rick: [true, true, true, true, true, true, true],
  morty: [true, true, true, true, false, true, false],
  summer: [true, true, true, true, false, true, false],
  beth: [true, true, false, false, false, false, false],
  jerry: [true, true, false, false, false, false, false],
};
/** The gateway's route checks: GET /users/{userId}, GET /todos, POST /todos, PUT and DELETE /todos/{todoId}. */
const GATEWAY_EXPECTED: Record<User, [boolean, boolean, boolean, boolean, boolean]> = {
  rick: [true, true, true, true, true],
  morty: [true, true, true, true, true],
  summer: [true, true, true, true, true],
  beth: [true, true, false, false, false],
  jerry: [true, true, false, false, false],
};
const ROUTES: Array<[string, string]> = [
  ['GET', '/users/{userId}'],
  ['GET', '/todos'],
  ['POST', '/todos'],
  ['PUT', '/todos/{todoId}'],
  ['DELETE', '/todos/{todoId}'],
];

/** The policies of examples/authzen-todo, compiled as `authz compile` would. */
function todoPolicies() {
  const root = packageRoot();
  const dir = join(root, 'examples', 'authzen-todo');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && !f.endsWith('.test.yaml'));
  const result = compileSources(files.map((f) => readSource(join(dir, f), root)));
  if (!result.table) throw new Error(JSON.stringify(result.diagnostics));
  return result.policies;
}

describe.each(STORE_KINDS)('AuthZEN interop (%s)', (kind) => {
  let rt: TestRuntime;
  let principal: Principal;
  const evaluation = (body: unknown, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url: '/access/v1/evaluation', payload: body as object });
  const evaluations = (body: unknown, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url: '/access/v1/evaluations', payload: body as object });
  const ok = async (r: Promise<LightMyRequestResponse>) => {
    const answer = await r;
    expect(answer.statusCode, answer.body).toBe(200);
    return json(answer);
  };
  /** Decisions stored for the agent (every page). */
  const decisionCount = async (agentId: string) => {
    let count = 0;
    let after = '';
    for (;;) {
      const page = await rt.getOk(
        `/v1/decisions?agent_id=${encodeURIComponent(agentId)}&limit=100${after ? `&starting_after=${after}` : ''}`,
      );
      count += page.data.length;
      if (!page.has_more) return count;
      after = page.data.at(-1).id;
    }
  };
  const todo = (user: User, name: string, owner?: User) => ({
    subject: { type: 'user', id: USERS[user].id },
    action: { name },
    resource: {
      type: 'todo',
      id: `todo-${owner ?? 'none'}`,
      ...(owner ? { properties: { ownerID: USERS[owner].email } } : {}),
    },
  });

  beforeAll(async () => {
    rt = await startRuntime(kind);
    const [key] = await rt.store.sql<
      Array<{ id: string; scopes: string[] }>
    >`select id, scopes from api_keys where account_id = ${rt.accountId} and environment = 'test' limit 1`;
    principal = {
      keyId: key!.id,
      accountId: rt.accountId,
      environment: 'test',
      scopes: key!.scopes as Principal['scopes'],
    };
  });
  afterAll(() => rt.close());

  describe('the Todo and gateway scenarios, on agent attributes', () => {
    beforeAll(async () => {
      await installPolicies(rt.services, rt.accountId, 'test', todoPolicies());
    });

    it('without stored attributes only the always-true rule holds', async () => {
      const stranger = {
        subject: { type: 'user', id: 'c3ViLW5vYm9keQ' },
        action: { name: 'can_read_todos' },
        resource: { type: 'todo', id: 'todo-1' },
      };
      expect((await ok(evaluation(stranger))).decision).toBe(false);
      expect(
        (
          await ok(
            evaluation({
              ...stranger,
              action: { name: 'can_read_user' },
              resource: { type: 'user', id: 'rick@the-citadel.com' },
            }),
          )
        ).decision,
      ).toBe(true);
    });

    it('decides every Todo permission of every user as the rules say, as single evaluations and as a batch', async () => {
      for (const [name, user] of Object.entries(USERS)) {
        const r = await rt.call(rt.testKey, {
          method: 'PUT',
          url: `/v1/agents/${user.id}`,
          payload: { attributes: { name, email: user.email, roles: user.roles } },
        });
        expect(r.statusCode, r.body).toBe(200);
      }
      for (const user of Object.keys(USERS) as User[]) {
        const other: User = user === 'rick' ? 'morty' : 'rick';
        const requests = [
          {
            subject: { type: 'user', id: USERS[user].id },
            action: { name: 'can_read_user' },
            resource: { type: 'user', id: USERS[other].email },
          },
          todo(user, 'can_read_todos'),
          todo(user, 'can_create_todo'),
          todo(user, 'can_update_todo', user),
          todo(user, 'can_update_todo', other),
          todo(user, 'can_delete_todo', user),
          todo(user, 'can_delete_todo', other),
        ];
        const single = [];
        for (const request of requests) single.push((await ok(evaluation(request))).decision);
        expect(single, user).toEqual(TODO_EXPECTED[user]);
        // The same as one batch, with the subject as the default.
        const batch = await ok(
          evaluations({ subject: requests[0]!.subject, evaluations: requests.map(({ subject: _s, ...rest }) => rest) }),
        );
        expect(
          batch.evaluations.map((e: EvaluationItem) => e.decision),
          user,
        ).toEqual(TODO_EXPECTED[user]);
      }
    });

    it('stores the decision under the mapped action, with the owner in context.resource and the name in context.action', async () => {
      const answer = await ok(evaluation(todo('morty', 'can_update_todo', 'morty')));
      expect(answer).toMatchObject({ decision: true, context: { effect: 'allow', reason: 'policy.matched' } });
      const row = await rt.services.decisions.get(principal, answer.context.id);
      expect(row).toMatchObject({
        agent_id: USERS.morty.id,
        action: 'authzen.can_update_todo',
        resource: 'todo:todo-morty',
        policy_id: 'pol_todo_change_own',
      });
      expect(row.context).toEqual({
        subject: {},
        action: { name: 'can_update_todo' },
        resource: { ownerID: USERS.morty.email },
      });
    });

    it("answers the gateway's route checks (HTTP methods as actions) as the rules say", async () => {
      for (const user of Object.keys(USERS) as User[]) {
        const got = [];
        for (const [method, route] of ROUTES) {
          got.push(
            (
              await ok(
                evaluation({
                  subject: { type: 'identity', id: USERS[user].id },
                  action: { name: method },
                  resource: { type: 'route', id: route },
                }),
              )
            ).decision,
          );
        }
        expect(got, user).toEqual(GATEWAY_EXPECTED[user]);
      }
      const [last] = (await rt.getOk(`/v1/decisions?agent_id=${USERS.jerry.id}&limit=1`)).data;
      expect(last).toMatchObject({ action: 'authzen.delete', resource: 'route:/todos/{todoId}', effect: 'deny' });
    });

    it("keeps the subject's properties in context.subject: they do not change the stored attributes", async () => {
      // Beth claims to be an admin in the request: the stored roles decide.
      const claim = {
        ...todo('beth', 'can_delete_todo', 'rick'),
        subject: { type: 'user', id: USERS.beth.id, properties: { roles: ['admin'] } },
      };
      const answer = await ok(evaluation(claim));
      expect(answer.decision).toBe(false);
      expect((await rt.services.decisions.get(principal, answer.context.id)).context).toMatchObject({
        subject: { roles: ['admin'] },
      });
      expect((await rt.getOk(`/v1/agents/${USERS.beth.id}`)).attributes.roles).toEqual(['viewer']);
    });
  });

  describe('the standard to the letter', () => {
    const a = `semantics-${Math.random().toString(36).slice(2, 8)}`;
    const entry = (id: string) => ({ resource: { type: id.startsWith('o') ? 'order' : 'invoice', id } });
    const batch = (entries: unknown[], semantic?: string) => ({
      subject: { type: 'agent', id: a },
      action: { name: 'orders.read' },
      ...(semantic ? { options: { evaluations_semantic: semantic } } : {}),
      evaluations: entries,
    });
    const decisions = (answer: JsonObject) => answer.evaluations.map((e: EvaluationItem) => e.decision);
    const bad = { action: { name: 'x'.repeat(201) }, resource: { type: 'order', id: 'o1' } };

    beforeAll(async () => {
      await rt.setPolicies([{ id: 'pol_orders', effect: 'allow', actions: ['orders.read'], resources: ['order:*'] }]);
    });

    it('execute_all (the default) decides every entry', async () => {
      const before = await decisionCount(a);
      expect(decisions(await ok(evaluations(batch([entry('o1'), entry('i1'), entry('o2'), entry('i2')]))))).toEqual([
        true,
        false,
        true,
        false,
      ]);
      expect(decisions(await ok(evaluations(batch([entry('o1'), entry('i1')], 'execute_all'))))).toEqual([true, false]);
      expect(await decisionCount(a)).toBe(before + 6);
    });

    it('deny_on_first_deny stops at the first deny (a failed entry counts as one) and answers up to it', async () => {
      const before = await decisionCount(a);
      expect(
        decisions(
          await ok(evaluations(batch([entry('o1'), entry('i1'), entry('o2'), entry('i2')], 'deny_on_first_deny'))),
        ),
      ).toEqual([true, false]);
      const failed = await ok(evaluations(batch([entry('o1'), bad, entry('o2')], 'deny_on_first_deny')));
      expect(failed.evaluations).toEqual([
        expect.objectContaining({ decision: true }),
        {
          decision: false,
          context: { error: { code: 'validation.invalid_action', message: expect.stringContaining('200') } },
        },
      ]);
      // Nothing denies: every entry is answered.
      expect(decisions(await ok(evaluations(batch([entry('o1'), entry('o2')], 'deny_on_first_deny'))))).toEqual([
        true,
        true,
      ]);
      // Only what was decided is stored: 2 + 1 + 2.
      expect(await decisionCount(a)).toBe(before + 5);
    });

    it('permit_on_first_permit stops at the first permit and answers up to it', async () => {
      const before = await decisionCount(a);
      expect(
        decisions(
          await ok(
            evaluations(
              batch([entry('i1'), entry('i2'), entry('o1'), entry('i3'), entry('o2')], 'permit_on_first_permit'),
            ),
          ),
        ),
      ).toEqual([false, false, true]);
      const failedFirst = await ok(evaluations(batch([bad, entry('o1'), entry('o2')], 'permit_on_first_permit')));
      expect(decisions(failedFirst)).toEqual([false, true]);
      expect(failedFirst.evaluations[0].context.error.code).toBe('validation.invalid_action');
      expect(decisions(await ok(evaluations(batch([entry('i1'), entry('i2')], 'permit_on_first_permit'))))).toEqual([
        false,
        false,
      ]);
      expect(await decisionCount(a)).toBe(before + 3 + 1 + 2);
    });

    it('refuses an unknown semantic with 400 validation.invalid_field, deciding nothing', async () => {
      const before = await decisionCount(a);
      for (const semantic of ['first_deny', 'EXECUTE_ALL']) {
        const error = expectError(await evaluations(batch([entry('o1')], semantic)), 400, 'validation.invalid_field');
        expect(JSON.stringify(error)).toContain('evaluations_semantic');
      }
      expectError(
        await evaluations({ ...batch([entry('o1')]), options: { evaluations_semantic: 3 } }),
        400,
        'validation.invalid_field',
      );
      expect(await decisionCount(a)).toBe(before);
    });

    it('answers an empty evaluations array as one evaluation of the top-level request, in the single form', async () => {
      const answer = await ok(evaluations({ ...batch([]), resource: { type: 'order', id: 'o9' } }));
      expect(answer).toEqual({
        decision: true,
        context: {
          id: expect.stringMatching(/^dec_/),
          effect: 'allow',
          reason: 'policy.matched',
          permit_token: expect.any(String),
        },
      });
      expect(
        await ok(evaluations({ ...batch([], 'deny_on_first_deny'), resource: { type: 'invoice', id: 'i9' } })),
      ).toMatchObject({
        decision: false,
        context: { effect: 'deny' },
      });
      // Without a resource there is no evaluation to make: the single form's 400.
      expectError(await evaluations(batch([])), 400, 'validation.missing_field');
    });

    it('takes up to 100 entries; 101 are refused whole', async () => {
      const before = await decisionCount(a);
      const hundred = await ok(evaluations(batch(Array.from({ length: 100 }, (_, i) => entry(`o${i}`)))));
      expect(hundred.evaluations).toHaveLength(100);
      expect(hundred.evaluations.every((e: EvaluationItem) => e.decision === true)).toBe(true);
      expectError(
        await evaluations(batch(Array.from({ length: 101 }, (_, i) => entry(`o${i}`)))),
        400,
        'validation.invalid_field',
      );
      // 100 decided, none of the 101.
      expect(await decisionCount(a)).toBe(before + 100);
    });

    it('answers 400 validation.invalid_json for any body that is not a JSON object, whatever its Content-Type; never 415', async () => {
      const valid = JSON.stringify({
        subject: { type: 'agent', id: a },
        action: { name: 'orders.read' },
        resource: { type: 'order', id: 'o1' },
      });
      const bodies: Array<[string | undefined, string | undefined]> = [
        ['text/plain', 'subject=agent'],
        ['application/x-www-form-urlencoded', 'subject=agent&action=read'],
        ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n'],
        [undefined, 'subject=agent'],
        [undefined, undefined],
        ['application/json', '{"subject": '],
        ['application/json', ''],
        ['application/json', '[]'],
        ['application/json', 'null'],
        ['application/json', '"text"'],
        ['application/json', '42'],
        ['application/xml', '<subject/>'],
      ];
      const before = await decisionCount(a);
      for (const url of ['/access/v1/evaluation', '/access/v1/evaluations']) {
        for (const [type, payload] of bodies) {
          const r = await rt.app.inject({
            method: 'POST',
            url,
            headers: { authorization: `Bearer ${rt.testKey}`, ...(type ? { 'content-type': type } : {}) },
            ...(payload !== undefined ? { payload } : {}),
          });
          expect(r.statusCode, `${url} ${type} ${payload}: ${r.body}`).toBe(400);
          expect(json(r).error.code, `${url} ${type} ${payload}`).toBe('validation.invalid_json');
        }
        // A JSON object is read whatever the Content-Type said.
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8']) {
          const r = await rt.app.inject({
            method: 'POST',
            url,
            headers: { authorization: `Bearer ${rt.testKey}`, 'content-type': type },
            payload: valid,
          });
          expect(r.statusCode, `${url} ${type}: ${r.body}`).toBe(200);
          expect(json(r).decision).toBe(true);
        }
      }
      expect(await decisionCount(a)).toBe(before + 6);
      // The service's own routes keep refusing other media types.
      const own = await rt.app.inject({
        method: 'POST',
        url: '/v1/decisions',
        headers: { authorization: `Bearer ${rt.testKey}`, 'content-type': 'text/plain' },
        payload: '{}',
      });
      expectError(own, 415, 'validation.unsupported_media_type');
    });

    it('ignores unknown members at every level of an AuthZEN request; the own routes keep refusing them', async () => {
      const single = {
        _note: 'top',
        subject: { type: 'agent', id: a, _note: 'subject', properties: { team: 'x' } },
        action: { name: 'orders.read', _note: 'action' },
        resource: { type: 'order', id: 'o1', _note: 'resource' },
        context: { channel: 'api' },
        options: { _note: 'options', trace: true },
      };
      const answer = await ok(evaluation(single));
      expect(answer).toMatchObject({ decision: true, context: { effect: 'allow' } });
      // What is stored holds the defined members only (the context is the request's own).
      expect((await rt.services.decisions.get(principal, answer.context.id)).context).toEqual({
        channel: 'api',
        subject: { team: 'x' },
        action: { name: 'orders.read' },
        resource: {},
      });
      const many = await ok(
        evaluations({
          ...single,
          options: { evaluations_semantic: 'execute_all', _note: 'options' },
          evaluations: [
            { _note: 'entry', resource: { type: 'order', id: 'o2', _note: 'entry resource' } },
            {
              subject: { type: 'agent', id: a, extra: 1 },
              action: { name: 'orders.read', extra: [1] },
              resource: { type: 'invoice', id: 'i1', extra: {} },
            },
          ],
        }),
      );
      expect(decisions(many)).toEqual([true, false]);
      // POST /v1/decisions is the service's own API: unknown fields stay refused.
      const own = await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: a, action: 'orders.read', _note: 'x' },
      });
      expectError(own, 400, 'validation.invalid_field');
    });
  });
});
