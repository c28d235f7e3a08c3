/**
 * AuthZEN 1.0 Search APIs on both stores (docs/api.md#post-accessv1searchsubject-and-accessv1searchaction): subject search answers the known, not revoked
 * agents the action would be allowed now (an attribute condition excludes some,
 * a revoked agent is left out, an approval-required review does not count),
 * sorted by id; action search answers the actions named exactly by enabled
 * allow and review policies; both page to the end with limit 1; nothing is
 * stored and no limit is used; bad pages and bodies are 400; discovery lists
 * the two endpoints and no resource search.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import { expectError } from '../helpers/kit.js';

const ROLES = "contains(agent.attributes.roles, 'viewer') || contains(agent.attributes.roles, 'editor')";

describe.each(STORE_KINDS)('AuthZEN search (%s)', (kind) => {
  let rt: TestRuntime;
  const post = (url: string, body: unknown, key = rt.testKey) =>
    rt.call(key, { method: 'POST', url, payload: body as object });
  const ok = async (url: string, body: unknown) => {
    const r = await post(url, body);
    expect(r.statusCode, r.body).toBe(200);
    return json(r);
  };
  const subjects = {
    subject: { type: 'user' },
    action: { name: 'can_read_todos' },
    resource: { type: 'todo', id: '1' },
  };
  const decisionCount = async () => (await rt.getOk('/v1/decisions?limit=100')).data.length as number;

  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { baseUrl: 'https://pdp.example.test' } });
    await rt.setPolicies([
      {
        id: 'pol_read',
        effect: 'allow',
        agents: ['*'],
        actions: ['authzen.can_read_todos'],
        resources: ['todo:*'],
        condition: ROLES,
        rate_limit: { per_minute: 1 },
      },
      { id: 'pol_comment', effect: 'review', agents: ['*'], actions: ['authzen.can_comment'] },
      {
        id: 'pol_publish',
        effect: 'review',
        agents: ['*'],
        actions: ['authzen.can_publish'],
        approval: { required: true },
      },
      { id: 'pol_reports', effect: 'allow', agents: ['*'], actions: ['reports.*'] },
      { id: 'pol_purge', effect: 'deny', agents: ['*'], actions: ['authzen.can_purge'] },
      { id: 'pol_off', effect: 'allow', state: 'disabled', agents: ['*'], actions: ['authzen.can_archive'] },
    ]);
    const people: Array<[string, string[]]> = [
      ['u-bob', ['viewer']],
      ['u-amy', ['editor']],
      ['u-cat', ['guest']],
      ['u-dan', ['editor']],
      ['u-eve', ['viewer']],
    ];
    for (const [id, roles] of people) {
      const r = await rt.call(rt.testKey, {
        method: 'PUT',
        url: `/v1/agents/${id}`,
        payload: { attributes: { roles } },
      });
      expect(r.statusCode, r.body).toBe(200);
    }
    expect((await rt.call(rt.testKey, { method: 'POST', url: '/v1/agents/u-dan/revoke' })).statusCode).toBe(200);
  });
  afterAll(() => rt.close());

  it('subject search: the agents allowed now, sorted by id; an attribute condition and a revocation leave some out', async () => {
    expect(await ok('/access/v1/search/subject', subjects)).toEqual({
      results: [
        { type: 'user', id: 'u-amy' },
        { type: 'user', id: 'u-bob' },
        { type: 'user', id: 'u-eve' },
      ],
      page: { next_token: '' },
    });
    // A review counts; one that needs a human's approval does not.
    expect(
      (await ok('/access/v1/search/subject', { ...subjects, action: { name: 'can_comment' } })).results.map(
        (r: { id: string }) => r.id,
      ),
    ).toEqual(['u-amy', 'u-bob', 'u-cat', 'u-eve']);
    expect((await ok('/access/v1/search/subject', { ...subjects, action: { name: 'can_publish' } })).results).toEqual(
      [],
    );
    // The answer's type is the request's.
    expect((await ok('/access/v1/search/subject', { ...subjects, subject: { type: 'identity' } })).results[0]).toEqual({
      type: 'identity',
      id: 'u-amy',
    });
  });

  it('subject search pages with limit 1 to the end', async () => {
    const seen: string[] = [];
    let token = '';
    for (let round = 0; round < 10; round++) {
      const page = await ok('/access/v1/search/subject', {
        ...subjects,
        page: { limit: 1, ...(token ? { token } : {}) },
      });
      expect(page.results.length).toBeLessThanOrEqual(1);
      seen.push(...page.results.map((r: { id: string }) => r.id));
      token = page.page.next_token;
      if (token === '') break;
    }
    expect(seen).toEqual(['u-amy', 'u-bob', 'u-eve']);
    expect(token).toBe('');
  });

  it('action search: the exactly named actions of enabled allow and review policies the subject would be allowed, sorted; paged', async () => {
    const body = (id: string) => ({ subject: { type: 'user', id }, resource: { type: 'todo', id: '1' } });
    expect(await ok('/access/v1/search/action', body('u-amy'))).toEqual({
      results: [{ name: 'authzen.can_comment' }, { name: 'authzen.can_read_todos' }],
      page: { next_token: '' },
    });
    expect((await ok('/access/v1/search/action', body('u-cat'))).results).toEqual([{ name: 'authzen.can_comment' }]);
    expect((await ok('/access/v1/search/action', body('u-dan'))).results).toEqual([]);
    expect((await ok('/access/v1/search/action', body('u-nobody'))).results).toEqual([{ name: 'authzen.can_comment' }]);
    const first = await ok('/access/v1/search/action', { ...body('u-amy'), page: { limit: 1 } });
    expect(first.results).toEqual([{ name: 'authzen.can_comment' }]);
    expect(first.page.next_token).not.toBe('');
    const second = await ok('/access/v1/search/action', {
      ...body('u-amy'),
      page: { limit: 1, token: first.page.next_token },
    });
    expect(second).toEqual({ results: [{ name: 'authzen.can_read_todos' }], page: { next_token: '' } });
  });

  it('a page token goes with its search: the same request with it pages on; a changed search, context or limit is 400', async () => {
    const first = await ok('/access/v1/search/subject', {
      ...subjects,
      context: { channel: 'web' },
      page: { limit: 2 },
    });
    expect(first.results.map((r: { id: string }) => r.id)).toEqual(['u-amy', 'u-bob']);
    const token = first.page.next_token as string;
    // Unchanged (members AuthZEN does not define may differ, and key order): the next page.
    const next = await ok('/access/v1/search/subject', {
      _note: 'retry',
      page: { token, limit: 2 },
      context: { channel: 'web' },
      resource: { id: '1', type: 'todo' },
      action: { name: 'can_read_todos' },
      subject: { type: 'user', id: 'ignored in a subject search' },
    });
    expect(next).toEqual({ results: [{ type: 'user', id: 'u-eve' }], page: { next_token: '' } });
    const changed = [
      { ...subjects, context: { channel: 'web' }, page: { limit: 3, token } },
      { ...subjects, page: { limit: 2, token } },
      { ...subjects, context: { channel: 'app' }, page: { limit: 2, token } },
      { ...subjects, action: { name: 'can_comment' }, context: { channel: 'web' }, page: { limit: 2, token } },
      { ...subjects, resource: { type: 'todo', id: '2' }, context: { channel: 'web' }, page: { limit: 2, token } },
      { ...subjects, subject: { type: 'identity' }, context: { channel: 'web' }, page: { limit: 2, token } },
    ];
    for (const body of changed) {
      const error = expectError(await post('/access/v1/search/subject', body), 400, 'validation.invalid_field');
      expect(error.message).toContain('another search');
    }
    // An action search's token is not a subject search's, and the other way round.
    const actions = await ok('/access/v1/search/action', {
      subject: { type: 'user', id: 'u-amy' },
      resource: { type: 'todo', id: '1' },
      page: { limit: 1 },
    });
    expectError(
      await post('/access/v1/search/subject', { ...subjects, page: { limit: 1, token: actions.page.next_token } }),
      400,
      'validation.invalid_field',
    );
    expectError(
      await post('/access/v1/search/action', {
        subject: { type: 'user', id: 'u-bob' },
        resource: { type: 'todo', id: '1' },
        page: { limit: 1, token: actions.page.next_token },
      }),
      400,
      'validation.invalid_field',
    );
  });

  it("a page token is bound to the account and environment that got it, and cannot be forged: another account's, the other environment's, an altered or a made-up one is 400", async () => {
    const page = { limit: 1 };
    const first = await ok('/access/v1/search/subject', { ...subjects, page });
    expect(first.results).toEqual([{ type: 'user', id: 'u-amy' }]);
    const token = first.page.next_token as string;
    const notGiven = (r: Awaited<ReturnType<typeof post>>) =>
      expect(expectError(r, 400, 'validation.invalid_field').message).toContain('not a token this service gave');
    // The same search by another account, and by the same account's live key.
    notGiven(await post('/access/v1/search/subject', { ...subjects, page: { ...page, token } }, rt.otherKey));
    notGiven(await post('/access/v1/search/subject', { ...subjects, page: { ...page, token } }, rt.liveKey));
    // Forged: the token's readable part with another position (skipping u-bob), with and without the token's MAC.
    const [payload, mac] = token.split('.');
    const skip = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')), after: 'u-bob' }),
    ).toString('base64url');
    for (const forged of [
      skip,
      `${skip}.${mac}`,
      `${payload}.${mac!.slice(0, -1)}B`,
      `${payload}.`,
      `${payload}.${mac}.${mac}`,
      `${payload}`,
    ]) {
      notGiven(await post('/access/v1/search/subject', { ...subjects, page: { ...page, token: forged } }));
    }
    // The token as given still pages on.
    expect((await ok('/access/v1/search/subject', { ...subjects, page: { ...page, token } })).results).toEqual([
      { type: 'user', id: 'u-bob' },
    ]);
  });

  it('stores nothing and uses no limit: the one-a-minute policy still allows the first real decision', async () => {
    const before = await decisionCount();
    for (let i = 0; i < 3; i++) {
      await ok('/access/v1/search/subject', subjects);
      await ok('/access/v1/search/action', {
        subject: { type: 'user', id: 'u-bob' },
        resource: { type: 'todo', id: '1' },
      });
    }
    expect(await decisionCount()).toBe(before);
    const evaluation = await ok('/access/v1/evaluation', {
      subject: { type: 'user', id: 'u-bob' },
      action: { name: 'can_read_todos' },
      resource: { type: 'todo', id: '1' },
    });
    expect(evaluation.decision).toBe(true);
    // Now the limit is used up: subject search counts it (as a preview does) and leaves u-bob out.
    expect((await ok('/access/v1/search/subject', subjects)).results.map((r: { id: string }) => r.id)).toEqual([
      'u-amy',
      'u-eve',
    ]);
  });

  it('refuses bad bodies and pages with 400, and needs decisions:write', async () => {
    for (const page of [{ limit: 0 }, { limit: 101 }, { limit: 1.5 }, { limit: '2' }, 'x']) {
      expectError(await post('/access/v1/search/subject', { ...subjects, page }), 400, 'validation.invalid_field');
    }
    expectError(
      await post('/access/v1/search/subject', { ...subjects, page: { token: 'not-a-token' } }),
      400,
      'validation.invalid_field',
    );
    expectError(
      await post('/access/v1/search/subject', { ...subjects, resource: undefined }),
      400,
      'validation.missing_field',
    );
    expectError(await post('/access/v1/search/subject', { ...subjects, subject: {} }), 400, 'validation.missing_field');
    expectError(
      await post('/access/v1/search/action', { subject: { type: 'user' }, resource: { type: 'todo', id: '1' } }),
      400,
      'validation.missing_field',
    );
    expectError(
      await post('/access/v1/search/action', {
        subject: { type: 'user', id: 'u-amy' },
        resource: { type: 'todo', id: '1' },
        context: [],
      }),
      400,
      'validation.invalid_field',
    );
    const garbage = await rt.app.inject({
      method: 'POST',
      url: '/access/v1/search/subject',
      headers: { authorization: `Bearer ${rt.testKey}`, 'content-type': 'text/plain' },
      payload: 'who?',
    });
    expectError(garbage, 400, 'validation.invalid_json');
    expectError(
      await post('/access/v1/search/subject', subjects, await rt.keyWith(['decisions:read'])),
      403,
      'auth.scope_insufficient',
    );
    // Unknown members are ignored, as everywhere in AuthZEN.
    const ignored = { ...subjects, _note: 1, subject: { type: 'user', _x: 1 }, action: { name: 'can_comment', _x: 2 } };
    expect((await ok('/access/v1/search/subject', ignored)).results).toHaveLength(4);
  });

  it('sorts subjects by id in byte order (upper case first), on both stores, and pages through them so', async () => {
    for (const id of ['U-zed', 'u_ann', 'u-Abe']) {
      const r = await rt.call(rt.testKey, {
        method: 'PUT',
        url: `/v1/agents/${id}`,
        payload: { attributes: { roles: ['viewer'] } },
      });
      expect(r.statusCode, r.body).toBe(200);
    }
    const byteOrder = ['U-zed', 'u-Abe', 'u-amy', 'u-bob', 'u-eve', 'u_ann'];
    const comment = { ...subjects, action: { name: 'can_comment' } };
    const all = (await ok('/access/v1/search/subject', comment)).results.map((r: { id: string }) => r.id);
    expect(all.filter((id: string) => byteOrder.includes(id))).toEqual(byteOrder);
    const seen: string[] = [];
    let token = '';
    do {
      const page = await ok('/access/v1/search/subject', {
        ...comment,
        page: { limit: 1, ...(token ? { token } : {}) },
      });
      seen.push(...page.results.map((r: { id: string }) => r.id));
      token = page.page.next_token;
    } while (token !== '' && seen.length < 20);
    expect(seen).toEqual(all);
  });

  it('discovery lists the search endpoints; resource search is absent', async () => {
    const r = await rt.call(null, { method: 'GET', url: '/.well-known/authzen-configuration' });
    const body = json(r);
    expect(body).toMatchObject({
      search_subject_endpoint: 'https://pdp.example.test/access/v1/search/subject',
      search_action_endpoint: 'https://pdp.example.test/access/v1/search/action',
    });
    expect(body).not.toHaveProperty('search_resource_endpoint');
    expect((await post('/access/v1/search/resource', { subject: { type: 'user', id: 'u-amy' } })).statusCode).toBe(404);
  });
});
