/**
 * Policies as YAML on /v1/policies, on both stores: GET with Accept YAML (a
 * policy-file document, Vary: Accept, errors still JSON); POST and PUT with YAML
 * bodies (every problem with its 1-based line and column, YAML syntax errors,
 * multi-document and empty bodies); the GET -> PUT round trip; 415 for YAML on
 * every other route; POST /v1/policies/validate (errors, warnings of the
 * environment, stores nothing, scope); Idempotency-Key with YAML bodies.
 * Every test works on an account of its own (created through the admin API).
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { STORE_KINDS } from '../helpers/postgres.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import { FULL_POLICY } from './helpers/policies.js';
import type { JsonObject } from '../helpers/json.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RESOURCE_FIELDS = ['object', 'livemode', 'created_at', 'updated_at'];

interface Detail {
  path: string;
  message: string;
  line?: number;
  column?: number;
}

interface Diagnostic {
  severity: 'error' | 'warning';
  code: string;
  message: string;
  path: string;
  line?: number;
  column?: number;
}

/** Line and column (1-based) of the first `needle` on line `line` of `text`. */
function at(text: string, line: number, needle: string): { line: number; column: number } {
  const l = text.split('\n')[line - 1]!;
  const i = l.indexOf(needle);
  if (i < 0) throw new Error(`"${needle}" is not on line ${line}: ${l}`);
  return { line, column: i + 1 };
}

/** The policy fields of a resource (what a policy file holds). */
const policyFields = (resource: JsonObject) =>
  Object.fromEntries(Object.entries(resource).filter(([k]) => !RESOURCE_FIELDS.includes(k)));

describe.each(STORE_KINDS)('policies as YAML (%s store)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt?.close());

  interface Account {
    id: string;
    /** A test key with every scope. */
    key: string;
    keyWith(scopes: string[], environment?: 'test' | 'live'): Promise<string>;
  }

  /** A new account: its lists and events hold only what the test does. */
  async function newAccount(): Promise<Account> {
    const acc = await rt.call(ADMIN_TOKEN, { method: 'POST', url: '/admin/accounts', payload: { name: 'yaml' } });
    expect(acc.statusCode, acc.body).toBe(201);
    const id = json(acc).id as string;
    const keyWith = async (scopes: string[], environment: 'test' | 'live' = 'test') => {
      const r = await rt.call(ADMIN_TOKEN, {
        method: 'POST',
        url: `/admin/accounts/${id}/api-keys`,
        payload: { environment, scopes },
      });
      expect(r.statusCode, r.body).toBe(201);
      return json(r).key as string;
    };
    return { id, key: await keyWith(['*']), keyWith };
  }

  const sendYaml = (
    key: string,
    method: 'POST' | 'PUT',
    url: string,
    text: string,
    headers: Record<string, string> = {},
  ) => rt.call(key, { method, url, payload: text, headers: { 'content-type': 'application/yaml', ...headers } });
  const postYaml = (key: string, text: string, headers?: Record<string, string>) =>
    sendYaml(key, 'POST', '/v1/policies', text, headers);
  const putYaml = (key: string, id: string, text: string, headers?: Record<string, string>) =>
    sendYaml(key, 'PUT', `/v1/policies/${id}`, text, headers);
  const validateYaml = (key: string, text: string) => sendYaml(key, 'POST', '/v1/policies/validate', text);
  const validateJson = (key: string, body: unknown) =>
    rt.call(key, { method: 'POST', url: '/v1/policies/validate', payload: body as object });
  const createJson = async (key: string, body: Record<string, unknown>) => {
    const r = await rt.call(key, { method: 'POST', url: '/v1/policies', payload: body });
    expect(r.statusCode, r.body).toBe(201);
    // The stored policy, as GET answers it: POST adds the lints of the new policy (`warnings`).
    const { warnings, ...policy } = json(r) as JsonObject;
    expect(Array.isArray(warnings)).toBe(true);
    return policy;
  };
  const getJson = (key: string, id: string) => rt.call(key, { method: 'GET', url: `/v1/policies/${id}` });
  const getYaml = (key: string, id: string, accept = 'application/yaml') =>
    rt.call(key, { method: 'GET', url: `/v1/policies/${id}`, headers: { accept } });
  const listPolicies = async (key: string) => {
    const r = await rt.call(key, { method: 'GET', url: '/v1/policies?limit=100' });
    expect(r.statusCode, r.body).toBe(200);
    return json(r).data as Array<JsonObject>;
  };
  const events = async (key: string) => {
    const r = await rt.call(key, { method: 'GET', url: '/v1/events?limit=100' });
    expect(r.statusCode, r.body).toBe(200);
    return json(r).data as Array<JsonObject>;
  };
  const policyEvents = async (key: string) => (await events(key)).filter((e) => e.type === 'policy.updated');

  const expectJsonError = (r: LightMyRequestResponse, status: number, code: string) => {
    expect(r.statusCode, r.body).toBe(status);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    const body = json(r);
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error.code).toBe(code);
    expect(body.error.request_id).toBe(r.headers['request-id']);
    return body.error as { code: string; message: string; details?: Detail[] };
  };

  /** 400 validation.invalid_policy; every detail of a YAML body has a line and column; the message starts with the first one's. */
  const expectInvalidYaml = (r: LightMyRequestResponse) => {
    const error = expectJsonError(r, 400, 'validation.invalid_policy');
    expect(error.details!.length).toBeGreaterThan(0);
    for (const d of error.details!) {
      expect(Object.keys(d).sort()).toEqual(['column', 'line', 'message', 'path']);
      expect(d.path.startsWith('/')).toBe(true);
      expect(Number.isInteger(d.line) && d.line! >= 1).toBe(true);
      expect(Number.isInteger(d.column) && d.column! >= 1).toBe(true);
    }
    const first = error.details![0]!;
    expect(error.message).toBe(`invalid policy: line ${first.line}, column ${first.column}: ${first.message}`);
    return error as { code: string; message: string; details: Required<Detail>[] };
  };
  const positions = (details: Detail[]) =>
    details.map(({ path, line, column }) => ({ path, line, column })).sort((x, y) => x.path.localeCompare(y.path));

  describe('GET with Accept: application/yaml', () => {
    // Every field given; a description long enough that YAML would fold it.
    const FULL = {
      ...FULL_POLICY,
      description: `Support agents may refund small orders; ${'a long sentence that must not be folded, '.repeat(4)}end`,
    };

    it('answers the policy as a policy-file document: application/yaml, Vary: Accept, no resource fields', async () => {
      const { key } = await newAccount();
      const created = await createJson(key, FULL);
      for (const accept of ['application/yaml', 'text/yaml']) {
        const r = await getYaml(key, FULL.id, accept);
        expect(r.statusCode, r.body).toBe(200);
        expect(r.headers['content-type']).toMatch(/^application\/yaml/);
        expect(String(r.headers.vary)).toMatch(/\bAccept\b/i);
        const doc = parseYaml(r.body) as Record<string, unknown>;
        expect(doc).toEqual(FULL);
        // Canonical field order (as the JSON resource of POST), and nothing of the resource.
        expect(Object.keys(doc)).toEqual(Object.keys(created).filter((k) => !RESOURCE_FIELDS.includes(k)));
        for (const k of RESOURCE_FIELDS) expect(r.body).not.toMatch(new RegExp(`^${k}:`, 'm'));
        // Long strings stay on one line.
        expect(r.body.split('\n')).toContain(`description: ${FULL.description}`);
      }
    });

    it('fills in the defaults of a minimal policy', async () => {
      const { key } = await newAccount();
      const created = await createJson(key, { name: 'minimal', effect: 'allow', actions: ['orders.read'] });
      const r = await getYaml(key, created.id);
      expect(r.statusCode).toBe(200);
      expect(parseYaml(r.body)).toEqual({
        id: created.id,
        name: 'minimal',
        state: 'enabled',
        priority: 100,
        effect: 'allow',
        actions: ['orders.read'],
      });
    });

    it('answers JSON by default, for JSON and for wildcards, with Vary: Accept too', async () => {
      const { key } = await newAccount();
      const created = await createJson(key, { name: 'negotiated', effect: 'deny', actions: ['orders.delete'] });
      const asJson = [
        undefined,
        'application/json',
        '*/*',
        'application/*',
        'text/*',
        'text/html',
        'application/yaml;q=0',
        'application/yaml;q=0.5, application/json',
        'application/yaml, application/json', // equal q: JSON named explicitly wins
        'application/json, text/yaml',
      ];
      for (const accept of asJson) {
        const r = await rt.call(key, {
          method: 'GET',
          url: `/v1/policies/${created.id}`,
          headers: accept === undefined ? {} : { accept },
        });
        expect(r.statusCode, String(accept)).toBe(200);
        expect(r.headers['content-type'], String(accept)).toMatch(/^application\/json/);
        expect(String(r.headers.vary)).toMatch(/\bAccept\b/i);
        expect(json(r)).toEqual(created);
      }
      const asYaml = [
        'application/yaml',
        'text/yaml',
        'APPLICATION/YAML',
        'application/json;q=0.5, application/yaml',
        'text/yaml, */*',
        'application/yaml;q=0.9, */*;q=0.1',
        'text/html, text/yaml',
      ];
      for (const accept of asYaml) {
        const r = await getYaml(key, created.id, accept);
        expect(r.statusCode, accept).toBe(200);
        expect(r.headers['content-type'], accept).toMatch(/^application\/yaml/);
        expect(parseYaml(r.body), accept).toEqual(policyFields(created));
      }
    });

    it('errors stay JSON, and other routes ignore Accept: application/yaml', async () => {
      const { key, keyWith } = await newAccount();
      expectJsonError(await getYaml(key, 'pol_does_not_exist'), 404, 'policy.not_found');
      const writer = await keyWith(['policies:write']);
      const created = await createJson(key, { name: 'json-only', effect: 'allow', actions: ['orders.read'] });
      expectJsonError(await getYaml(writer, created.id), 403, 'auth.scope_insufficient');
      expectJsonError(await getYaml('sk_test_not_a_key', created.id), 401, 'auth.invalid_key');
      const list = await rt.call(key, { method: 'GET', url: '/v1/policies', headers: { accept: 'application/yaml' } });
      expect(list.statusCode).toBe(200);
      expect(list.headers['content-type']).toMatch(/^application\/json/);
      expect(json(list).data).toEqual([created]);
    });
  });

  describe('POST with a YAML body', () => {
    it('creates the policy (application/yaml, text/yaml, with a charset) and answers JSON', async () => {
      const { key } = await newAccount();
      const text = [
        '# refunds for the support team',
        'name: refunds-yaml',
        'description: |',
        '  Line one.',
        '  Line two.',
        'priority: 5',
        'effect: review',
        'agents: ["support-*"]',
        'actions:',
        '  - payments.refund',
        'resources: [order:*]',
        "condition: amount <= 50 && context.channel == 'chat'",
        'budget: { unit: USD, limit: 500, period: monthly }',
        '',
      ].join('\n');
      const r = await postYaml(key, text);
      expect(r.statusCode, r.body).toBe(201);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      const { warnings, ...p } = json(r) as JsonObject;
      expect(warnings).toEqual([]);
      expect(p.id).toMatch(/^pol_[0-9A-Za-z]{24}$/);
      expect(p).toEqual({
        id: p.id,
        object: 'policy',
        name: 'refunds-yaml',
        description: 'Line one.\nLine two.\n',
        state: 'enabled',
        priority: 5,
        effect: 'review',
        agents: ['support-*'],
        actions: ['payments.refund'],
        resources: ['order:*'],
        condition: "amount <= 50 && context.channel == 'chat'",
        budget: { unit: 'USD', limit: 500, period: 'monthly' },
        livemode: false,
        created_at: p.created_at,
        updated_at: p.created_at,
      });
      expect(p.created_at).toMatch(ISO_MS);
      expect(json(await getJson(key, p.id))).toEqual(p);

      const t = await postYaml(key, 'id: pol_text_yaml\nname: text-yaml\neffect: allow\nactions: [orders.read]\n', {
        'content-type': 'text/yaml',
      });
      expect(t.statusCode, t.body).toBe(201);
      expect(json(t)).toMatchObject({ id: 'pol_text_yaml', name: 'text-yaml', effect: 'allow' });
      const c = await postYaml(key, 'name: charset-yaml\neffect: deny\nactions: [orders.delete]\n', {
        'content-type': 'application/yaml; charset=utf-8',
      });
      expect(c.statusCode, c.body).toBe(201);
      expect((await listPolicies(key)).map((x) => x.name).sort()).toEqual([
        'charset-yaml',
        'refunds-yaml',
        'text-yaml',
      ]);
      // The new policy decides at once.
      const d = await rt.call(key, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'a-1', action: 'orders.read' },
      });
      expect(json(d)).toMatchObject({ effect: 'allow', policy_id: 'pol_text_yaml' });
    });

    it('lists every problem with the line and column of the offending value (or unknown key)', async () => {
      const { key } = await newAccount();
      const text =
        'name: three-problems\neffect: maybe\npriority: high\nactions:\n  - orders.read\n  - Orders.Read\nacton: [x.y]\n';
      const error = expectInvalidYaml(await postYaml(key, text));
      expect(positions(error.details)).toEqual(
        positions([
          { path: '/acton', message: '', ...at(text, 7, 'acton') },
          { path: '/actions/1', message: '', ...at(text, 6, 'Orders.Read') },
          { path: '/effect', message: '', ...at(text, 2, 'maybe') },
          { path: '/priority', message: '', ...at(text, 3, 'high') },
        ]),
      );
      expect(error.details.find((d) => d.path === '/acton')!.message).toMatch(/acton/);
      expect(error.details.find((d) => d.path === '/actions/1')!.message).toMatch(/Orders\.Read/);
      expect(error.details.find((d) => d.path === '/effect')!.message).toMatch(/maybe/);
    });

    it('a missing field is reported at the mapping, wrong nested values at their own line', async () => {
      const { key } = await newAccount();
      const text =
        '# no effect\nname: nested\nactions: [orders.read]\nbudget:\n  unit: USD\n  limit: -5\n  period: fortnightly\n';
      const error = expectInvalidYaml(await postYaml(key, text));
      const byPath = new Map(error.details.map((d) => [d.path, d]));
      expect(error.details.some((d) => /effect/.test(d.message) && d.line === 2 && d.column === 1)).toBe(true);
      expect(byPath.get('/budget/limit')).toMatchObject(at(text, 6, '-5'));
      expect(byPath.get('/budget/period')).toMatchObject(at(text, 7, 'fortnightly'));
    });

    it('a condition error points at the character, in plain, quoted and block scalars', async () => {
      const { key } = await newAccount();
      const cases: Array<[string, number]> = [
        ['name: c1\neffect: allow\nactions: [orders.read]\ncondition: amount > 5 && context.tier ~ 3\n', 4],
        ['name: c2\neffect: allow\nactions: [orders.read]\ncondition: "amount > 5 && context.tier ~ 3"\n', 4],
        ["name: c3\neffect: allow\nactions: [orders.read]\ncondition: 'amount > 5 && context.tier ~ 3'\n", 4],
        ['name: c4\neffect: allow\nactions: [orders.read]\ncondition: |\n  amount > 5 &&\n    context.tier ~ 3\n', 6],
      ];
      for (const [text, line] of cases) {
        const error = expectInvalidYaml(await postYaml(key, text));
        expect(error.details, text).toEqual([
          { path: '/condition', message: expect.stringMatching(/~/), ...at(text, line, '~') },
        ]);
      }
      const unknownName = 'name: c5\neffect: allow\nactions: [orders.read]\ncondition: amount > 1 && foo > 3\n';
      const e5 = expectInvalidYaml(await postYaml(key, unknownName));
      expect(e5.details).toEqual([
        { path: '/condition', message: expect.stringMatching(/foo/), ...at(unknownName, 4, 'foo') },
      ]);
    });

    it('YAML syntax errors: the same code, with line and column', async () => {
      const { key } = await newAccount();
      const duplicateKey = 'name: dup-key\neffect: allow\neffect: deny\nactions: [orders.read]\n';
      const e1 = expectInvalidYaml(await postYaml(key, duplicateKey));
      expect(e1.details).toEqual([{ path: '/', message: expect.stringMatching(/unique/i), line: 3, column: 1 }]);
      for (const text of [
        'name: unclosed\neffect: allow\nactions: [orders.read\n',
        'name: x\neffect: allow\nactions:\n  - a.b\n - c.d\n',
        'name: "unterminated\neffect: allow\n',
      ]) {
        const e = expectInvalidYaml(await postYaml(key, text));
        for (const d of e.details) expect(d.path, text).toBe('/');
        expect(e.details[0]!.line, text).toBeGreaterThan(1);
      }
    });

    it('refuses a multi-document, empty, comment-only, list, scalar or policies: body', async () => {
      const { key } = await newAccount();
      const multi = 'name: a\neffect: allow\nactions: [a.b]\n---\nname: b\neffect: allow\nactions: [a.c]\n';
      const e = expectInvalidYaml(await postYaml(key, multi));
      expect(e.details).toEqual([
        { path: '/', message: expect.stringMatching(/2 YAML documents/), line: 5, column: 1 },
      ]);
      for (const text of ['', '# nothing but a comment\n', '---\n']) {
        const empty = expectInvalidYaml(await postYaml(key, text));
        expect(empty.details, JSON.stringify(text)).toEqual([
          { path: '/', message: expect.stringMatching(/empty/), line: 1, column: 1 },
        ]);
      }
      for (const text of ['- name: a\n  effect: allow\n', 'just a string\n', '42\n']) {
        const notMap = expectInvalidYaml(await postYaml(key, text));
        expect(notMap.details, text).toEqual([
          { path: '/', message: expect.stringMatching(/mapping/), line: 1, column: 1 },
        ]);
      }
      const file = expectInvalidYaml(
        await postYaml(key, 'policies:\n  - name: a\n    effect: allow\n    actions: [a.b]\n'),
      );
      expect(file.details).toEqual([
        { path: '/policies', message: expect.stringMatching(/PUT \/v1\/bundle/), line: 1, column: 1 },
      ]);
      expect(await listPolicies(key)).toEqual([]);
    });

    it('a name in use is refused at /name with its position', async () => {
      const { key } = await newAccount();
      const first = await createJson(key, { name: 'taken', effect: 'allow', actions: ['orders.read'] });
      const text = '# second\nname: taken\neffect: deny\nactions: [orders.read]\n';
      const error = expectInvalidYaml(await postYaml(key, text));
      expect(error.details).toEqual([
        { path: '/name', message: expect.stringContaining(first.id), ...at(text, 2, 'taken') },
      ]);
    });

    it('a value the store cannot hold is 400 validation.invalid_field with its position', async () => {
      const { key } = await newAccount();
      const text = 'name: nul\ndescription: "a\\0b"\neffect: allow\nactions: [orders.read]\n';
      const error = expectJsonError(await postYaml(key, text), 400, 'validation.invalid_field');
      expect(error.details).toEqual([{ path: '/description', message: expect.any(String), ...at(text, 2, '"') }]);
    });

    it('stores nothing and fires nothing for rejected YAML bodies', async () => {
      const { key } = await newAccount();
      for (const text of [
        'name: r1\neffect: maybe\nactions: [a.b]\n',
        'name: r2\neffect: allow\nactions: [a.b\n',
        '',
        'name: r3\neffect: allow\nactions: [a.b]\n---\nname: r4\n',
      ]) {
        expect((await postYaml(key, text)).statusCode).toBe(400);
      }
      expect(await listPolicies(key)).toEqual([]);
      expect(await events(key)).toEqual([]);
    });
  });

  describe('PUT with a YAML body', () => {
    it('replaces the whole policy; omitted fields fall back to their defaults', async () => {
      const { key } = await newAccount();
      const created = await createJson(key, {
        name: 'replace-me',
        description: 'before',
        priority: 5,
        effect: 'deny',
        agents: ['a-*'],
        actions: ['orders.read'],
      });
      rt.clock.advance(60);
      const r = await putYaml(key, created.id, 'name: replace-me\neffect: allow\nactions:\n  - orders.write\n');
      expect(r.statusCode, r.body).toBe(200);
      const updated = json(r);
      expect(policyFields(updated)).toEqual({
        id: created.id,
        name: 'replace-me',
        state: 'enabled',
        priority: 100,
        effect: 'allow',
        actions: ['orders.write'],
      });
      expect(updated.created_at).toBe(created.created_at);
      expect(Date.parse(updated.updated_at) - Date.parse(created.updated_at)).toBe(60_000);
      expect(json(await getJson(key, created.id))).toEqual(updated);
      expect((await policyEvents(key)).map((e) => e.data.change)).toEqual(['updated', 'created']);
    });

    it('refuses a body id that differs from the path, a name in use and problems, with positions; keeps the policy', async () => {
      const { key } = await newAccount();
      const p = await createJson(key, { name: 'keep-me', effect: 'allow', actions: ['orders.read'] });
      await createJson(key, { name: 'other-name', effect: 'allow', actions: ['orders.list'] });
      const idText = 'id: pol_something_else\nname: keep-me\neffect: allow\nactions: [orders.read]\n';
      const e1 = expectInvalidYaml(await putYaml(key, p.id, idText));
      expect(positions(e1.details)).toEqual([{ path: '/id', ...at(idText, 1, 'pol_something_else') }]);
      const both = 'id: pol_something_else\nname: keep-me\neffect: allow\nactions: [Bad]\n';
      expect(positions(expectInvalidYaml(await putYaml(key, p.id, both)).details)).toEqual(
        positions([
          { path: '/actions/0', message: '', ...at(both, 4, 'Bad') },
          { path: '/id', message: '', ...at(both, 1, 'pol_something_else') },
        ]),
      );
      const nameText = 'name: other-name\neffect: allow\nactions: [orders.read]\n';
      expect(positions(expectInvalidYaml(await putYaml(key, p.id, nameText)).details)).toEqual([
        { path: '/name', ...at(nameText, 1, 'other-name') },
      ]);
      const budgetText = 'name: keep-me\neffect: allow\nactions: [orders.read]\nbudget:\n  unit: USD\n';
      const e4 = expectInvalidYaml(await putYaml(key, p.id, budgetText));
      for (const d of e4.details) expect(d.path.startsWith('/budget')).toBe(true);
      expect(json(await getJson(key, p.id))).toEqual(p);
      expect((await policyEvents(key)).length).toBe(2);
    });

    it('an unknown id is 404 policy.not_found and creates nothing', async () => {
      const { key } = await newAccount();
      expectJsonError(
        await putYaml(key, 'pol_ghost', 'name: ghost\neffect: allow\nactions: [orders.read]\n'),
        404,
        'policy.not_found',
      );
      expect(await listPolicies(key)).toEqual([]);
    });
  });

  describe('round trip', () => {
    const TRICKY = [
      '  leading spaces',
      'trailing spaces  ',
      'multi\nline\n\n',
      '- looks like a list',
      '*looks like an alias',
      'key: value # not a comment',
      "'single quoted'",
      '"double quoted"',
      'tab\there',
      'yes',
      'null',
      '~',
      '0x1F',
      '1e3',
      'é 😀 日本',
      'trailing   \nnext line',
      '\n',
      'a\r\nb',
      '%directive',
      '@at',
      '`tick',
      '!tag',
      '&anchor',
      '|pipe',
      '>fold',
      '? question',
      '{ flow: map }',
      '[flow, seq]',
    ];

    it('GET as YAML then PUT as YAML gives the identical policy, with no change and no event', async () => {
      const { key } = await newAccount();
      const created: Array<JsonObject> = [];
      for (const [i, description] of TRICKY.entries()) {
        created.push(
          await createJson(key, {
            name: i % 2 ? `tricky-${i}` : `${i}`,
            description,
            priority: i,
            effect: (['allow', 'deny', 'review'] as const)[i % 3],
            agents: ['*', 'support-*'],
            actions: ['*', `ns${i}.read`],
            resources: ['*', 'order:#1', 'a: b'],
            condition: `context.k == '#x' && amount > 1e3 || context.s == "it's"`,
            rate_limit: { per_second: 1 + i },
            budget: { unit: 'USD', limit: 0.1, period: 'daily', threshold_alert: 0.5 },
          }),
        );
      }
      const eventsBefore = (await policyEvents(key)).length;
      rt.clock.advance(30);
      for (const p of created) {
        const g = await getYaml(key, p.id);
        expect(g.statusCode).toBe(200);
        const put = await putYaml(key, p.id, g.body);
        expect(put.statusCode, `${JSON.stringify(p.description)}\n${g.body}\n${put.body}`).toBe(200);
        expect(json(put), JSON.stringify(p.description)).toEqual(p);
        expect(json(await getJson(key, p.id))).toEqual(p);
        // Stable: the same text again.
        expect((await getYaml(key, p.id)).body).toBe(g.body);
      }
      expect((await policyEvents(key)).length).toBe(eventsBefore);
    });

    it('an edited YAML document is a change: PUT applies it and fires policy.updated', async () => {
      const { key } = await newAccount();
      const p = await createJson(key, { name: 'edit-me', effect: 'allow', actions: ['orders.read'] });
      const text = (await getYaml(key, p.id)).body;
      expect(text).toMatch(/^state: enabled$/m);
      rt.clock.advance(5);
      const r = await putYaml(key, p.id, text.replace('state: enabled', 'state: disabled'));
      expect(r.statusCode, r.body).toBe(200);
      expect(json(r)).toMatchObject({ id: p.id, state: 'disabled' });
      expect(json(r).updated_at).not.toBe(p.updated_at);
      expect((await policyEvents(key)).map((e) => e.data.change)).toEqual(['disabled', 'created']);
      const d = await rt.call(key, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'a-1', action: 'orders.read' },
      });
      expect(json(d)).toMatchObject({ effect: 'deny', reason: 'policy.disabled' });
    });

    it('a GET YAML document creates the same policy in another account (POST as YAML)', async () => {
      const from = await newAccount();
      const to = await newAccount();
      const p = await createJson(from.key, {
        id: 'pol_portable',
        name: 'portable',
        effect: 'review',
        actions: ['payments.refund'],
        condition: 'amount > 10',
      });
      const r = await postYaml(to.key, (await getYaml(from.key, p.id)).body);
      expect(r.statusCode, r.body).toBe(201);
      const { warnings, ...posted } = json(r) as JsonObject;
      expect(warnings).toEqual([]);
      expect(policyFields(posted)).toEqual(policyFields(p));
    });
  });

  describe('415 for YAML everywhere else', () => {
    it('routes that take JSON only answer 415 with the JSON-only message, and store nothing', async () => {
      const { key } = await newAccount();
      const routes: Array<[string, string, string]> = [
        ['POST', '/v1/decisions', 'agent_id: a-1\naction: orders.read\n'],
        ['POST', '/v1/decisions/dec_whatever/confirm', 'amount: 1\n'],
        ['POST', '/v1/decisions/dec_whatever/reject', 'reason: x\n'],
        ['POST', '/v1/webhooks', 'url: http://127.0.0.1:9/hooks\n'],
        ['PUT', '/v1/bundle', 'policies: []\n'],
        ['POST', '/v1/permits/verify', 'token: x\n'],
        ['POST', '/v1/agents/a-1/revoke', 'x: 1\n'],
      ];
      for (const [method, url, text] of routes) {
        for (const type of ['application/yaml', 'text/yaml']) {
          const r = await rt.call(key, {
            method: method as 'POST' | 'PUT',
            url,
            payload: text,
            headers: { 'content-type': type },
          });
          const error = expectJsonError(r, 415, 'validation.unsupported_media_type');
          expect(error.message, `${method} ${url}`).toBe('send the body as application/json');
        }
      }
      for (const url of [
        '/v1/decisions?limit=100',
        '/v1/webhooks?limit=100',
        '/v1/agents?limit=100',
        '/v1/events?limit=100',
      ]) {
        const r = await rt.call(key, { method: 'GET', url });
        expect(json(r).data, url).toEqual([]);
      }
    });

    it('the policy routes refuse other media types with a message naming YAML', async () => {
      const { key } = await newAccount();
      const p = await createJson(key, { name: 'media', effect: 'allow', actions: ['orders.read'] });
      const text = 'name: media\neffect: allow\nactions: [orders.read]\n';
      for (const type of ['application/x-yaml', 'application/xml', 'text/x-yaml']) {
        for (const [method, url] of [
          ['POST', '/v1/policies'],
          ['PUT', `/v1/policies/${p.id}`],
          ['POST', '/v1/policies/validate'],
        ] as const) {
          const error = expectJsonError(
            await rt.call(key, { method, url, payload: text, headers: { 'content-type': type } }),
            415,
            'validation.unsupported_media_type',
          );
          expect(error.message, `${type} ${method} ${url}`).toBe(
            'send the body as application/json or application/yaml',
          );
        }
      }
      expect(await listPolicies(key)).toEqual([p]);
    });
  });

  describe('POST /v1/policies/validate', () => {
    it('a valid policy, JSON or YAML, in an empty environment: valid, no diagnostics', async () => {
      const { key } = await newAccount();
      const yamlR = await validateYaml(key, 'name: ok\neffect: allow\nactions: [orders.read]\n');
      expect(yamlR.statusCode, yamlR.body).toBe(200);
      expect(json(yamlR)).toEqual({ object: 'policy_validation', valid: true, diagnostics: [] });
      const jsonR = await validateJson(key, {
        name: 'ok',
        effect: 'allow',
        actions: ['orders.read'],
        condition: 'amount < 5',
      });
      expect(jsonR.statusCode, jsonR.body).toBe(200);
      expect(json(jsonR)).toEqual({ object: 'policy_validation', valid: true, diagnostics: [] });
    });

    it('errors: the same problems as POST, with code, severity and position', async () => {
      const { key } = await newAccount();
      const bodies = [
        'name: three-problems\neffect: maybe\npriority: high\nactions:\n  - orders.read\n  - Orders.Read\nacton: [x.y]\n',
        'name: cond\neffect: allow\nactions: [orders.read]\ncondition: "amount <= 50 && context.tier ~ 3"\n',
        'name: syntax\neffect: allow\neffect: deny\nactions: [orders.read]\n',
        'name: a\neffect: allow\nactions: [a.b]\n---\nname: b\n',
        '',
      ];
      for (const text of bodies) {
        const post = expectInvalidYaml(await postYaml(key, text));
        const r = await validateYaml(key, text);
        expect(r.statusCode, r.body).toBe(200);
        const v = json(r) as { object: string; valid: boolean; diagnostics: Diagnostic[] };
        expect(v.object).toBe('policy_validation');
        expect(v.valid, text).toBe(false);
        for (const d of v.diagnostics) expect(d.severity).toBe('error');
        const asDetails = v.diagnostics.map(({ path, message, line, column }) => ({ path, message, line, column }));
        expect(positions(asDetails), text).toEqual(positions(post.details));
        expect(new Set(asDetails.map((d) => d.message))).toEqual(new Set(post.details.map((d) => d.message)));
      }
      const codes = async (text: string) =>
        (json(await validateYaml(key, text)).diagnostics as Diagnostic[]).map((d) => d.code);
      expect(await codes(bodies[0]!)).toEqual([
        'policy.invalid_field',
        'policy.invalid_field',
        'policy.invalid_field',
        'policy.invalid_field',
      ]);
      expect(await codes(bodies[1]!)).toEqual(['condition.syntax']);
      expect(await codes(bodies[2]!)).toEqual(['yaml.syntax']);
      // Sorted by position.
      const lines = (json(await validateYaml(key, bodies[0]!)).diagnostics as Diagnostic[]).map((d) => d.line);
      expect(lines).toEqual([2, 3, 6, 7]);
      // A JSON body: the same checks, without line and column.
      const j = json(
        await validateJson(key, { name: 'json-bad', effect: 'allow', actions: ['Bad'], condition: 'amount <=' }),
      );
      expect(j.valid).toBe(false);
      expect(j.diagnostics).toEqual([
        { severity: 'error', code: 'policy.invalid_field', message: expect.stringMatching(/Bad/), path: '/actions/0' },
        { severity: 'error', code: 'condition.syntax', message: expect.any(String), path: '/condition' },
      ]);
    });

    it('a name another policy of the environment has: policy.duplicate_name at /name; its own name when it replaces that policy: valid', async () => {
      const { key, keyWith } = await newAccount();
      const holder = await createJson(key, {
        id: 'pol_holder',
        name: 'taken',
        effect: 'allow',
        actions: ['orders.read'],
      });
      await createJson(key, { id: 'pol_second', name: 'second', effect: 'allow', actions: ['orders.list'] });
      const text = '# a new policy\nname: taken\neffect: deny\nactions: [orders.delete]\n';
      expect(json(await validateYaml(key, text))).toEqual({
        object: 'policy_validation',
        valid: false,
        diagnostics: [
          {
            severity: 'error',
            code: 'policy.duplicate_name',
            message: expect.stringContaining(holder.id),
            path: '/name',
            ...at(text, 2, 'taken'),
          },
        ],
      });
      // The holder itself, changed: checked as its replacement (what PUT would store).
      expect(
        json(await validateYaml(key, 'id: pol_holder\nname: taken\neffect: deny\nactions: [orders.delete]\n')),
      ).toEqual({
        object: 'policy_validation',
        valid: true,
        diagnostics: [],
      });
      // Another policy taking the name: refused, as PUT would.
      const rename = 'id: pol_second\nname: taken\neffect: allow\nactions: [orders.list]\n';
      const v = json(await validateYaml(key, rename));
      expect(v.valid).toBe(false);
      expect(v.diagnostics.map((d: Diagnostic) => [d.code, d.path, d.line, d.column])).toEqual([
        ['policy.duplicate_name', '/name', 2, 7],
      ]);
      // Names are per environment: the live environment and another account do not clash.
      const live = await keyWith(['*'], 'live');
      expect(json(await validateYaml(live, text)).valid).toBe(true);
      const other = await newAccount();
      expect(json(await validateYaml(other.key, text)).valid).toBe(true);
    });

    it('warnings: lints against the policies already in the environment, only those concerning this policy', async () => {
      const { key } = await newAccount();
      // pol_wide shadows pol_narrow already: a lint of the environment that concerns neither body below.
      await createJson(key, { id: 'pol_wide', name: 'wide', priority: 10, effect: 'deny', actions: ['orders.*'] });
      await createJson(key, {
        id: 'pol_narrow',
        name: 'narrow',
        priority: 100,
        effect: 'allow',
        actions: ['orders.read'],
      });

      expect(json(await validateYaml(key, 'name: unrelated\neffect: allow\nactions: [billing.read]\n'))).toEqual({
        object: 'policy_validation',
        valid: true,
        diagnostics: [],
      });

      // Shadowed by an existing policy: a warning at the policy's root, valid all the same.
      const shadowed = '# shadowed\nname: list-orders\neffect: allow\nactions: [orders.list]\n';
      const v1 = json(await validateYaml(key, shadowed));
      expect(v1).toEqual({
        object: 'policy_validation',
        valid: true,
        diagnostics: [
          {
            severity: 'warning',
            code: 'lint.shadowed',
            message: expect.stringContaining('pol_wide'),
            path: '/',
            line: 2,
            column: 1,
          },
        ],
      });

      // Shadowing existing policies: a warning for each, naming both.
      const top = 'id: pol_top\nname: top\npriority: 1\neffect: review\nactions: [orders.*]\n';
      const v2 = json(await validateYaml(key, top));
      expect(v2.valid).toBe(true);
      expect(v2.diagnostics).toHaveLength(2);
      for (const d of v2.diagnostics as Diagnostic[]) {
        expect(d).toMatchObject({ severity: 'warning', code: 'lint.shadowed', path: '/', line: 1, column: 1 });
        expect(d.message).toContain('pol_top');
        // The body has no file name: none is shown.
        expect(d.message).not.toMatch(/body\.yaml|\.yaml:/);
      }
      expect(
        v2.diagnostics
          .map((d: Diagnostic) =>
            d.message.includes('pol_wide') ? 'pol_wide' : d.message.includes('pol_narrow') ? 'pol_narrow' : '?',
          )
          .sort(),
      ).toEqual(['pol_narrow', 'pol_wide']);

      // Same priority, other effect: a conflict.
      const same = json(
        await validateYaml(key, 'id: pol_same\nname: same\npriority: 10\neffect: review\nactions: [orders.*]\n'),
      );
      expect(same.valid).toBe(true);
      expect(same.diagnostics.map((d: Diagnostic) => d.code).sort()).toEqual(['lint.conflict', 'lint.shadowed']);
      for (const d of same.diagnostics as Diagnostic[]) {
        expect(d.message).toContain('pol_same');
        expect(d.message).not.toMatch(/\.yaml/);
      }

      // A condition that is always false.
      const never = json(
        await validateYaml(key, 'name: never\neffect: allow\nactions: [billing.read]\ncondition: "1 > 2"\n'),
      );
      expect(never).toEqual({
        object: 'policy_validation',
        valid: true,
        diagnostics: [
          {
            severity: 'warning',
            code: 'lint.never_matches',
            message: expect.any(String),
            path: '/',
            line: 1,
            column: 1,
          },
        ],
      });

      // A replacement is linted as such: pol_narrow at priority 5 is shadowed no more.
      expect(
        json(
          await validateYaml(key, 'id: pol_narrow\nname: narrow\npriority: 5\neffect: allow\nactions: [orders.read]\n'),
        ),
      ).toEqual({
        object: 'policy_validation',
        valid: true,
        diagnostics: [],
      });

      // JSON: the same warnings, without positions.
      const j = json(await validateJson(key, { name: 'list-orders', effect: 'allow', actions: ['orders.list'] }));
      expect(j).toEqual({
        object: 'policy_validation',
        valid: true,
        diagnostics: [
          { severity: 'warning', code: 'lint.shadowed', message: expect.stringContaining('pol_wide'), path: '/' },
        ],
      });

      // An error and no lints: lints run on a policy without errors.
      const both = json(await validateYaml(key, 'name: wide\neffect: allow\nactions: [orders.list]\n'));
      expect(both.valid).toBe(false);
      expect(both.diagnostics.map((d: Diagnostic) => d.code)).toEqual(['policy.duplicate_name']);
    });

    it('stores nothing and emits no event', async () => {
      const { key } = await newAccount();
      const existing = await createJson(key, {
        id: 'pol_existing',
        name: 'existing',
        effect: 'allow',
        actions: ['orders.read'],
      });
      const policiesBefore = await listPolicies(key);
      const eventsBefore = await events(key);
      const bundleBefore = json(await rt.call(key, { method: 'GET', url: '/v1/bundle' }));
      rt.clock.advance(10);
      const bodies = [
        'name: new-valid\neffect: allow\nactions: [billing.read]\n',
        'id: pol_existing\nname: existing\neffect: deny\nactions: [orders.read]\n',
        'name: bad\neffect: maybe\nactions: [a.b]\n',
        'name: [unclosed\n',
        '',
      ];
      for (const text of bodies) expect((await validateYaml(key, text)).statusCode).toBe(200);
      expect(
        (await validateJson(key, { name: 'new-json', effect: 'deny', actions: ['billing.write'] })).statusCode,
      ).toBe(200);
      expect(
        (await validateJson(key, { id: 'pol_existing', name: 'existing', effect: 'deny', actions: ['orders.read'] }))
          .statusCode,
      ).toBe(200);

      expect(await listPolicies(key)).toEqual(policiesBefore);
      expect(json(await getJson(key, existing.id))).toEqual(existing);
      expect(await events(key)).toEqual(eventsBefore);
      expect(await policyEvents(key)).toHaveLength(1);
      expect(json(await rt.call(key, { method: 'GET', url: '/v1/bundle' }))).toEqual(bundleBefore);
      // Decisions still see the stored policy only.
      const d1 = json(
        await rt.call(key, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: 'a-1', action: 'orders.read' },
        }),
      );
      expect(d1).toMatchObject({ effect: 'allow', policy_id: 'pol_existing' });
      const d2 = json(
        await rt.call(key, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: 'a-1', action: 'billing.read' },
        }),
      );
      expect(d2).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
      // A validated name is not reserved.
      expect((await postYaml(key, bodies[0]!)).statusCode).toBe(201);
    });

    it('needs policies:read: other scopes get 403 auth.scope_insufficient', async () => {
      const { keyWith } = await newAccount();
      const text = 'name: scoped\neffect: allow\nactions: [orders.read]\n';
      for (const scopes of [['policies:write'], ['decisions:read', 'decisions:write'], ['agents:read']]) {
        const k = await keyWith(scopes);
        expectJsonError(await validateYaml(k, text), 403, 'auth.scope_insufficient');
        expectJsonError(
          await validateJson(k, { name: 'scoped', effect: 'allow', actions: ['orders.read'] }),
          403,
          'auth.scope_insufficient',
        );
      }
      const reader = await keyWith(['policies:read']);
      expect(json(await validateYaml(reader, text))).toEqual({
        object: 'policy_validation',
        valid: true,
        diagnostics: [],
      });
      expectJsonError(await validateYaml('sk_test_nope', text), 401, 'auth.invalid_key');
    });
  });

  describe('Idempotency-Key with a YAML body', () => {
    let n = 0;
    const newKey = () => `yaml-idem-${Date.now().toString(36)}-${++n}`;

    it('the same text replays the first answer; other text is idempotency.key_reused', async () => {
      const { key } = await newAccount();
      const idem = newKey();
      const text = 'name: idem-yaml\neffect: allow\nactions: [orders.read]\n';
      const first = await postYaml(key, text, { 'idempotency-key': idem });
      expect(first.statusCode, first.body).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      rt.clock.advance(1);
      const again = await postYaml(key, text, { 'idempotency-key': idem });
      expect(again.statusCode).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers['request-id']).not.toBe(first.headers['request-id']);
      expect(json(again)).toEqual(json(first));
      // The same policy, with a comment: other text, so another request.
      const reused = await postYaml(key, `${text}# a comment\n`, { 'idempotency-key': idem });
      expectJsonError(reused, 400, 'idempotency.key_reused');
      const other = await postYaml(key, 'name: idem-yaml-2\neffect: deny\nactions: [orders.delete]\n', {
        'idempotency-key': idem,
      });
      expectJsonError(other, 400, 'idempotency.key_reused');
      // The same characters sent as a JSON string are another body, not a replay.
      const asJsonString = await rt.call(key, {
        method: 'POST',
        url: '/v1/policies',
        payload: JSON.stringify(text),
        headers: { 'content-type': 'application/json', 'idempotency-key': idem },
      });
      expectJsonError(asJsonString, 400, 'idempotency.key_reused');
      expect((await listPolicies(key)).map((p) => p.id)).toEqual([json(first).id]);
      expect(await policyEvents(key)).toHaveLength(1);
      // A new key is a new request (the name is taken now).
      expectInvalidYaml(await postYaml(key, text, { 'idempotency-key': newKey() }));
    });

    it('a refused YAML body is stored and replayed as well', async () => {
      const { key } = await newAccount();
      const idem = newKey();
      const text = 'name: bad\neffect: allow\nactions: [Not An Action]\n';
      const first = await postYaml(key, text, { 'idempotency-key': idem });
      const error = expectInvalidYaml(first);
      expect(error.details.map((d) => [d.path, d.line, d.column])).toEqual([['/actions/0', 3, 11]]);
      const again = await postYaml(key, text, { 'idempotency-key': idem });
      expect(again.statusCode).toBe(400);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(json(again)).toEqual(json(first));
      expect(await listPolicies(key)).toEqual([]);
    });
  });
});
