/**
 * agent-authz/client (docs/agents.md#2-a-typescript-agent) against a real
 * service listening on loopback, on both stores: decisions as values, confirm
 * and reject, guard, error codes, retries under one Idempotency-Key (429 with
 * Retry-After, 5xx, answers lost after the service committed, timeouts), and
 * failing closed when the service is down. Faults come from a real HTTP
 * forwarder in front of the service (helpers/fault-proxy.ts) or from the
 * service itself (a rate limit, policies that do not load, the manual clock).
 * The types are checked against the request schemas and real answers.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  AuthzClient,
  AuthzError,
  CLIENT_ERROR_CODES,
  DecisionDeniedError,
  type AuthzClientOptions,
  type ClientRetryEvent,
  type ConfirmOptions,
  type Decision,
  type DecisionRequest,
  type DecisionRequestExtensions,
  type FetchLike,
} from '../../clients/typescript/index.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { startRuntime, type TestRuntime } from '../runtime/helpers/app.js';
import { startFaultProxy, type FaultProxy } from './helpers/fault-proxy.js';
import { agent } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

/** A fresh agent id per call, so tests never share decisions, limits or budgets. */

const schemaProperties = (name: string): string[] =>
  Object.keys(
    (
      JSON.parse(readFileSync(new URL(`../../schemas/api/${name}.schema.json`, import.meta.url), 'utf8')) as {
        properties: object;
      }
    ).properties,
  ).sort();

/** Every field of the request types, set: the compiler refuses a field missing here or unknown to the type. */
const FULL_REQUEST = {
  agent_id: 'a',
  action: 'orders.read',
  resource: 'r',
  amount: 1,
  amounts: { USD: 1 },
  context: {},
  ttl_seconds: 60,
  session_id: 's',
  on_behalf_of: 'u',
  args_digest: 'd',
} satisfies Required<DecisionRequest>;
const FULL_EXTENSIONS = {} satisfies Required<DecisionRequestExtensions>;
const FULL_CONFIRM = { amount: 1, amounts: { USD: 1 } } satisfies Required<ConfirmOptions>;
const FULL_DECISION = {
  id: 'dec_1',
  object: 'decision',
  effect: 'allow',
  reason: 'policy.matched',
  agent_id: 'a',
  action: 'orders.read',
  resource: null,
  amount: null,
  policy_id: null,
  status: 'pending',
  evaluated_at: '',
  expires_at: '',
  ttl_seconds: 300,
  permit_token: null,
  livemode: false,
  resolved_at: null,
  confirmed_amount: null,
  metadata: { matched_policy_ids: [], warnings: [] },
  context: null,
  session_id: null,
  on_behalf_of: null,
  review: null,
  approval_expires_at: null,
  output: null,
  args_digest: 'd',
} satisfies Required<Decision>;
/** Decision fields marked (extension) in docs/api.md#post-v1decisions, which a service may not send yet. */
const DECISION_EXTENSION_FIELDS: Array<keyof Decision> = [
  'context',
  'session_id',
  'on_behalf_of',
  'args_digest',
  'review',
  'approval_expires_at',
  'output',
];

describe('agent-authz/client types follow the service schemas', () => {
  it('DecisionRequest has exactly the properties of schemas/api/decision-request.schema.json', () => {
    expect(Object.keys(FULL_REQUEST).sort()).toEqual(schemaProperties('decision-request'));
  });

  it('the extension fields are not in the schema yet (when one is, it moves to DecisionRequest)', () => {
    const schema = schemaProperties('decision-request');
    expect(Object.keys(FULL_EXTENSIONS).filter((f) => schema.includes(f))).toEqual([]);
  });

  it('ConfirmOptions has exactly the properties of schemas/api/decision-resolve.schema.json', () => {
    expect(Object.keys(FULL_CONFIRM).sort()).toEqual(schemaProperties('decision-resolve'));
  });

  it('package.json exports ./client, the built module with the public names', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      exports: Record<string, string>;
    };
    expect(pkg.exports['./client']).toBe('./dist/clients/typescript/index.js');
    const built = (await import(new URL(`../../${pkg.exports['./client']}`, import.meta.url).href)) as Record<
      string,
      unknown
    >;
    expect(Object.keys(built).sort()).toEqual([
      'AuthzClient',
      'AuthzError',
      'CLIENT_ERROR_CODES',
      'DecisionDeniedError',
    ]);
  });
});

async function rejection(promise: Promise<unknown>): Promise<AuthzError> {
  let settled: unknown;
  try {
    settled = await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AuthzError);
    return error as AuthzError;
  }
  throw new Error(`expected an AuthzError, got ${JSON.stringify(settled)}`);
}

interface Sent {
  method: string;
  url: string;
  headers: Headers;
  body: Record<string, unknown> | undefined;
}

/** The global fetch, recording what the client sends. */
function recordingFetch(): { sent: Sent[]; fetch: FetchLike } {
  const sent: Sent[] = [];
  const fetch: FetchLike = (input, init) => {
    sent.push({
      method: init.method ?? 'GET',
      url: input,
      headers: new Headers(init.headers),
      body: typeof init.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : undefined,
    });
    return globalThis.fetch(input, init);
  };
  return { sent, fetch };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.each(STORE_KINDS)('agent-authz/client against the service (%s store)', (kind) => {
  let rt: TestRuntime;
  let base: string;
  let proxy: FaultProxy;

  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
      { id: 'pol_delete', effect: 'deny', actions: ['orders.delete'] },
      { id: 'pol_refund', effect: 'review', actions: ['payments.refund'] },
      {
        id: 'pol_charge',
        effect: 'allow',
        actions: ['payments.charge'],
        budget: { unit: 'USD', limit: 100, period: 'monthly', threshold_alert: 0.8 },
      },
      { id: 'pol_export', effect: 'allow', actions: ['reports.export'], rate_limit: { per_second: 1 } },
      {
        id: 'pol_llm_usd',
        effect: 'allow',
        actions: ['llm.call'],
        budget: { unit: 'USD', limit: 1, period: 'daily', scope: 'session' },
      },
      {
        id: 'pol_llm_tokens',
        effect: 'allow',
        actions: ['llm.call'],
        budget: { unit: 'tokens', limit: 10_000, period: 'daily', scope: 'session' },
      },
    ]);
    await rt.setPolicies([{ id: 'pol_live_read', effect: 'allow', actions: ['orders.read'] }], 'live');
    await rt.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(rt.app.server.address() as { port: number }).port}`;
    proxy = await startFaultProxy(Number(new URL(base).port));
  });
  afterAll(async () => {
    await proxy?.close();
    await rt?.close();
  });

  const client = (options: Partial<AuthzClientOptions> = {}) =>
    new AuthzClient({ baseUrl: base, apiKey: rt.testKey, backoffMs: 10, ...options });
  const viaProxy = (options: Partial<AuthzClientOptions> = {}) => client({ baseUrl: proxy.url, ...options });
  const decisionsOf = async (agentId: string, key = rt.testKey) =>
    (await rt.getOk(`/v1/decisions?agent_id=${encodeURIComponent(agentId)}`, key)).data as Array<JsonObject>;
  const chargeBudget = async (agentId: string) =>
    ((await rt.getOk(`/v1/budgets?agent_id=${encodeURIComponent(agentId)}`)).data as Array<JsonObject>).find(
      (b) => b.policy_id === 'pol_charge',
    );
  const statusOf = async (id: string) => (await rt.getOk(`/v1/decisions/${id}`)).status as string;
  /** The proxy's requests from `from` on. */
  const seenSince = (from: number) => proxy.seen.slice(from);

  describe('decide, confirm, reject, get', () => {
    it('answers allow, deny and review as values, with the body the types describe', async () => {
      const authz = client();
      const a = agent('values');
      const allow = await authz.decide({ agent_id: a, action: 'orders.read', resource: 'order:1' });
      expect(allow).toMatchObject({
        object: 'decision',
        effect: 'allow',
        reason: 'policy.matched',
        status: 'pending',
        agent_id: a,
        resource: 'order:1',
        policy_id: 'pol_read',
      });
      expect(allow.id).toMatch(/^dec_/);
      expect(allow.permit_token).toMatch(/^eyJ/);
      const deny = await authz.decide({ agent_id: a, action: 'orders.delete' });
      expect(deny).toMatchObject({ effect: 'deny', reason: 'policy.matched', status: 'denied', permit_token: null });
      const notFound = await authz.decide({ agent_id: a, action: 'orders.archive' });
      expect(notFound).toMatchObject({ effect: 'deny', reason: 'policy.not_found' });
      const review = await authz.decide({
        agent_id: a,
        action: 'payments.refund',
        context: { channel: 'chat' },
        ttl_seconds: 60,
      });
      expect(review).toMatchObject({ effect: 'review', status: 'pending', ttl_seconds: 60 });

      for (const d of [allow, deny, notFound, review]) {
        const keys = Object.keys(d);
        expect(
          keys.filter((k) => !(k in FULL_DECISION)),
          'fields the Decision type lacks',
        ).toEqual([]);
        const required = Object.keys(FULL_DECISION).filter(
          (k) => !DECISION_EXTENSION_FIELDS.includes(k as keyof Decision),
        );
        expect(
          required.filter((k) => !keys.includes(k)),
          'Decision fields the service did not send',
        ).toEqual([]);
      }
      expect((await authz.get(review.id)).id).toBe(review.id);
      expect((await decisionsOf(a)).length).toBe(4);
    });

    it('sends only the fields that are set, with the client session and user defaults; one random Idempotency-Key per call', async () => {
      const { sent, fetch } = recordingFetch();
      const plain = client({ fetch });
      const a = agent('fields');
      await plain.decide({ agent_id: a, action: 'orders.read', resource: undefined, context: { k: 1 } });
      expect(sent[0]!.body).toEqual({ agent_id: a, action: 'orders.read', context: { k: 1 } });
      await plain.decide({ agent_id: a, action: 'orders.read' });
      const keys = sent.map((s) => s.headers.get('idempotency-key'));
      expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(keys[1]).toMatch(/^[0-9a-f-]{36}$/);
      expect(keys[0]).not.toBe(keys[1]);
      expect(sent.map((s) => s.headers.get('authorization'))).toEqual([`Bearer ${rt.testKey}`, `Bearer ${rt.testKey}`]);

      // The session and user fields are extensions (docs/api.md#post-v1decisions); what a
      // service without them answers (400 validation.invalid_field) is not the point here.
      const withDefaults = client({ fetch, sessionId: 'run-1', onBehalfOf: 'user-1', retries: 0 });
      const answers = [
        await withDefaults.decide({ agent_id: a, action: 'orders.read' }).catch((e: unknown) => e),
        await withDefaults.decide({ agent_id: a, action: 'orders.read', session_id: 'run-2' }).catch((e: unknown) => e),
        await withDefaults
          .decide({ agent_id: a, action: 'orders.read', session_id: null, on_behalf_of: null })
          .catch((e: unknown) => e),
      ];
      expect(sent.slice(2).map((s) => [s.body!.session_id, s.body!.on_behalf_of])).toEqual([
        ['run-1', 'user-1'],
        ['run-2', 'user-1'],
        [undefined, undefined],
      ]);
      expect(answers[2]).toMatchObject({ effect: 'allow' });
      for (const answer of answers.slice(0, 2)) {
        if (answer instanceof AuthzError) expect(answer.code).toBe('validation.invalid_field');
        else expect(answer).toMatchObject({ effect: 'allow' });
      }
    });

    it('confirm with an amount turns the USD hold into that consumption', async () => {
      const authz = client();
      const a = agent('usd');
      const d = await authz.decide({ agent_id: a, action: 'payments.charge', amount: 40 });
      expect(d).toMatchObject({ effect: 'allow', amount: 40 });
      expect(await chargeBudget(a)).toMatchObject({ unit: 'USD', held: 40, consumed: 0 });
      const confirmed = await authz.confirm(d.id, { amount: 30 });
      expect(confirmed).toMatchObject({ id: d.id, status: 'confirmed', confirmed_amount: 30 });
      expect(await chargeBudget(a)).toMatchObject({ held: 0, consumed: 30 });
      // A second confirm, not a retry, is a 409 (docs/api.md#post-v1decisionsidconfirm-and-reject).
      const again = await rejection(authz.confirm(d.id));
      expect(again).toMatchObject({ code: 'decision.already_confirmed', status: 409 });
      expect(await chargeBudget(a)).toMatchObject({ held: 0, consumed: 30 });
    });

    it('reject releases the hold; reject after reject, or confirm after reject, is 409 decision.not_pending', async () => {
      const authz = client();
      const a = agent('reject');
      const d = await authz.decide({ agent_id: a, action: 'payments.charge', amount: 25 });
      expect(await authz.reject(d.id)).toMatchObject({ id: d.id, status: 'rejected' });
      expect(await chargeBudget(a)).toMatchObject({ held: 0, consumed: 0 });
      expect(await rejection(authz.confirm(d.id))).toMatchObject({ code: 'decision.not_pending', status: 409 });
      expect(await rejection(authz.reject(d.id))).toMatchObject({ code: 'decision.not_pending', status: 409 });
    });
  });

  describe('spend controls', () => {
    const llm = <T extends { policy_id: string }>(left: T[]) => left.filter((b) => b.policy_id.startsWith('pol_llm_'));

    it('guard holds amounts per unit and confirms them; the run is stopped by its budget, another run goes on', async () => {
      const a = agent('spend');
      const run = agent('run');
      const authz = client({ sessionId: run });
      let calls = 0;
      const stopped = await (async () => {
        for (let i = 0; i < 10; i++)
          await authz.guard({ agent_id: a, action: 'llm.call', amounts: { USD: 0.3, tokens: 100 } }, () => calls++);
      })().then(
        () => null,
        (e: unknown) => e,
      );
      expect(stopped).toBeInstanceOf(DecisionDeniedError);
      expect((stopped as DecisionDeniedError).decision).toMatchObject({
        reason: 'budget.exceeded',
        session_id: run,
        policy_id: 'pol_llm_usd',
      });
      expect(calls).toBe(3);
      expect(llm(await authz.budgetsRemaining({ agent_id: a }))).toEqual([
        expect.objectContaining({
          policy_id: 'pol_llm_tokens',
          unit: 'tokens',
          scope: 'session',
          consumed: 300,
          held: 0,
          remaining: 9700,
        }),
        expect.objectContaining({
          policy_id: 'pol_llm_usd',
          unit: 'USD',
          scope: 'session',
          consumed: 0.9,
          held: 0,
          remaining: 0.1,
        }),
      ]);
      // Without the session, session budgets are not answered; another run has its own.
      expect(llm(await authz.budgetsRemaining({ agent_id: a, session_id: null }))).toEqual([]);
      expect(
        await authz.decide({
          agent_id: a,
          action: 'llm.call',
          session_id: agent('run'),
          amounts: { USD: 0.3, tokens: 100 },
        }),
      ).toMatchObject({ effect: 'allow' });
    });

    it('confirm takes amounts per unit; amount alone under two held units is 400 validation.invalid_field', async () => {
      const a = agent('spend');
      const run = agent('run');
      const authz = client({ sessionId: run });
      const d = await authz.decide({ agent_id: a, action: 'llm.call', amounts: { USD: 0.5, tokens: 400 } });
      expect(await authz.confirm(d.id, { amounts: { USD: 0.25, tokens: 350 } })).toMatchObject({ status: 'confirmed' });
      expect(llm(await authz.budgetsRemaining({ agent_id: a })).map((b) => [b.unit, b.consumed])).toEqual([
        ['tokens', 350],
        ['USD', 0.25],
      ]);
      expect(await rejection(authz.decide({ agent_id: a, action: 'llm.call', amount: 0.1 }))).toMatchObject({
        code: 'validation.invalid_field',
        status: 400,
      });
      expect(
        await rejection(
          authz.decide({ agent_id: a, action: 'llm.call', session_id: null, amounts: { USD: 0.1, tokens: 1 } }),
        ),
      ).toMatchObject({
        code: 'validation.missing_field',
        status: 400,
      });
    });
  });

  describe('guard', () => {
    it('runs the work, then confirms with the amount; answers the work answer', async () => {
      const a = agent('guard-ok');
      let seen: Decision | undefined;
      const out = await client().guard({ agent_id: a, action: 'payments.charge', amount: 12.5 }, async (decision) => {
        seen = decision;
        expect(await statusOf(decision.id)).toBe('pending');
        return { receipt: 'r-1' };
      });
      expect(out).toEqual({ receipt: 'r-1' });
      expect(seen).toMatchObject({ effect: 'allow', agent_id: a });
      expect(await rt.getOk(`/v1/decisions/${seen!.id}`)).toMatchObject({
        status: 'confirmed',
        confirmed_amount: 12.5,
      });
      expect(await chargeBudget(a)).toMatchObject({ held: 0, consumed: 12.5 });
    });

    it('runs the work for a review decision and confirms it', async () => {
      const out = await client().guard(
        { agent_id: agent('guard-review'), action: 'payments.refund' },
        (decision) => decision,
      );
      expect(out.effect).toBe('review');
      expect(await statusOf(out.id)).toBe('confirmed');
    });

    it('rejects the decision when the work throws, and rethrows the work error', async () => {
      const a = agent('guard-throw');
      const failure = new Error('the card was declined');
      let id = '';
      const thrown = await client()
        .guard({ agent_id: a, action: 'payments.charge', amount: 9 }, (decision) => {
          id = decision.id;
          throw failure;
        })
        .catch((e: unknown) => e);
      expect(thrown).toBe(failure);
      expect(await statusOf(id)).toBe('rejected');
      expect(await chargeBudget(a)).toMatchObject({ held: 0, consumed: 0 });
    });

    it('throws DecisionDeniedError on deny without running the work', async () => {
      const a = agent('guard-deny');
      let ran = false;
      for (const action of ['orders.delete', 'orders.archive']) {
        const error = await rejection(client().guard({ agent_id: a, action }, () => (ran = true)));
        expect(error).toBeInstanceOf(DecisionDeniedError);
        const decision = (error as DecisionDeniedError).decision;
        expect(decision).toMatchObject({ effect: 'deny', agent_id: a, action, status: 'denied' });
        expect(error.code).toBe(decision.reason);
        expect(error.requestId).toMatch(/^req_/);
        expect(await statusOf(decision.id)).toBe('denied');
      }
      expect(ran).toBe(false);
    });

    it('when the confirm fails after the work succeeded, throws the AuthzError with the work answer in .result', async () => {
      const retries: ClientRetryEvent[] = [];
      let id = '';
      const error = await rejection(
        client({ onRetry: (e) => void retries.push(e) }).guard(
          { agent_id: agent('guard-late'), action: 'orders.read', ttl_seconds: 1 },
          (decision) => {
            id = decision.id;
            rt.clock.advance(2); // the work outlives the decision
            return 'work done';
          },
        ),
      );
      expect(error).toMatchObject({ code: 'decision.expired', status: 410, result: 'work done' });
      expect(retries).toEqual([]);
      expect(await statusOf(id)).toBe('expired');
    });
  });

  describe('errors', () => {
    it('maps error answers to AuthzError with the code of docs/errors.md#error-codes, status and request id; a 4xx is not retried', async () => {
      const retries: ClientRetryEvent[] = [];
      const { sent, fetch } = recordingFetch();
      const authz = client({ fetch, onRetry: (e) => void retries.push(e) });
      const a = agent('errors');
      const invalid = await rejection(authz.decide({ agent_id: a, action: 'Orders Read' }));
      expect(invalid).toMatchObject({ code: 'validation.invalid_action', status: 400, retryAfter: null });
      expect(invalid.requestId).toMatch(/^req_/);
      expect(invalid.message.length).toBeGreaterThan(5);
      const badKey = await rejection(
        client({
          fetch,
          apiKey: 'svc_test_sk_thisKeyDoesNotExist0123456789abcdef',
          onRetry: (e) => void retries.push(e),
        }).decide({ agent_id: a, action: 'orders.read' }),
      );
      expect(badKey).toMatchObject({ code: 'auth.invalid_key', status: 401 });
      expect(await rejection(authz.confirm('dec_doesnotexist'))).toMatchObject({
        code: 'decision.not_found',
        status: 404,
      });
      expect(await rejection(authz.get('dec_doesnotexist'))).toMatchObject({ code: 'decision.not_found', status: 404 });
      expect(retries).toEqual([]);
      expect(sent.length).toBe(4);
      expect(await decisionsOf(a)).toEqual([]);
    });

    it('fails closed when the service is down: connection refused is client.network_error after the retries, and guard runs nothing', async () => {
      const retries: ClientRetryEvent[] = [];
      const down = client({
        baseUrl: `http://127.0.0.1:${await closedPort()}`,
        retries: 2,
        onRetry: (e) => void retries.push(e),
      });
      const error = await rejection(down.decide({ agent_id: agent('down'), action: 'orders.read' }));
      expect(error).toMatchObject({ code: CLIENT_ERROR_CODES.networkError, status: null, requestId: null });
      expect(error).not.toBeInstanceOf(DecisionDeniedError);
      expect(error.message).toMatch(/ECONNREFUSED/);
      expect(retries.map((r) => [r.attempt, r.error.code])).toEqual([
        [1, 'client.network_error'],
        [2, 'client.network_error'],
      ]);
      let ran = false;
      const guarded = await rejection(
        down.guard({ agent_id: agent('down'), action: 'orders.read' }, () => (ran = true)),
      );
      expect(guarded.code).toBe(CLIENT_ERROR_CODES.networkError);
      expect(ran).toBe(false);
    });
  });

  describe('retries under one Idempotency-Key', () => {
    it('a 429 is retried after its Retry-After, and succeeds once the window has passed', async () => {
      const a = agent('rate');
      const first = await client().decide({ agent_id: a, action: 'reports.export' });
      expect(first.effect).toBe('allow');

      const noRetry = await rejection(client({ retries: 0 }).decide({ agent_id: a, action: 'reports.export' }));
      expect(noRetry).toMatchObject({ code: 'rate_limit.exceeded', status: 429, retryAfter: 1 });
      const tooLong = await rejection(
        client({
          maxRetryAfterSeconds: 0,
          onRetry: () => expect.fail('a Retry-After past the maximum is not waited for'),
        }).decide({ agent_id: a, action: 'reports.export' }),
      );
      expect(tooLong.code).toBe('rate_limit.exceeded');

      const retries: ClientRetryEvent[] = [];
      const recording = recordingFetch();
      const sent = recording.sent;
      // The service's clock moves past the window when the retry is sent, after
      // the announced wait (no real timer racing the client's own wait): had the
      // client retried without waiting for Retry-After, onRetry would have
      // announced less than 1000 ms.
      const fetch: FetchLike = (input, init) => {
        if (sent.length === 1) rt.clock.advance(retries[0]!.error.retryAfter!);
        return recording.fetch(input, init);
      };
      const waiting = client({ fetch, onRetry: (e) => void retries.push(e) });
      const second = await waiting.decide({ agent_id: a, action: 'reports.export' });
      expect(second.effect).toBe('allow');
      expect(retries.map((r) => [r.error.code, r.error.status, r.error.retryAfter, r.method, r.path])).toEqual([
        ['rate_limit.exceeded', 429, 1, 'POST', '/v1/decisions'],
      ]);
      expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(1000);
      expect(sent.length).toBe(2);
      expect(sent[1]!.headers.get('idempotency-key')).toBe(sent[0]!.headers.get('idempotency-key'));
      expect((await decisionsOf(a)).map((d) => d.id).sort()).toEqual([first.id, second.id].sort());
    });

    it('an answer lost after the service committed the decision: the retry gets the same decision, not a second one', async () => {
      const a = agent('dropped');
      const from = proxy.seen.length;
      proxy.dropResponses(1);
      const retries: ClientRetryEvent[] = [];
      const d = await viaProxy({ onRetry: (e) => void retries.push(e) }).decide({
        agent_id: a,
        action: 'payments.charge',
        amount: 20,
      });
      expect(d).toMatchObject({ effect: 'allow', agent_id: a });
      expect(d.permit_token).toMatch(/^eyJ/); // a replay signs a fresh token for the same decision
      const seen = seenSince(from);
      expect(seen.map((s) => s.fate)).toEqual(['dropped', 'forwarded']);
      expect(seen[1]!.idempotencyKey).toBe(seen[0]!.idempotencyKey);
      expect(retries.map((r) => r.error.code)).toEqual([CLIENT_ERROR_CODES.networkError]);
      expect((await decisionsOf(a)).map((x) => x.id)).toEqual([d.id]);
      expect(await chargeBudget(a)).toMatchObject({ held: 20, consumed: 0 });
    });

    it('a confirm whose answer was lost after it was applied: the retry is done, consumed once', async () => {
      const a = agent('confirm-dropped');
      const d = await client().decide({ agent_id: a, action: 'payments.charge', amount: 30 });
      const from = proxy.seen.length;
      proxy.dropResponses(1);
      expect(await viaProxy().confirm(d.id, { amount: 25 })).toMatchObject({
        id: d.id,
        status: 'confirmed',
        confirmed_amount: 25,
      });
      expect(seenSince(from).map((s) => [s.method, s.fate])).toEqual([
        ['POST', 'dropped'],
        ['POST', 'forwarded'],
      ]);
      expect(await chargeBudget(a)).toMatchObject({ held: 0, consumed: 25 });
    });

    it('a confirm or reject retried after it was applied, when the service no longer has the stored answer: the 409 counts as done', async () => {
      for (const [verb, wanted] of [
        ['confirm', 'confirmed'],
        ['reject', 'rejected'],
      ] as const) {
        const a = agent(`${verb}-forgotten`);
        const d = await client().decide({ agent_id: a, action: 'payments.charge', amount: 10 });
        const from = proxy.seen.length;
        proxy.dropResponses(1);
        // Between the attempts the stored answer is gone (as after its 24 h, or a store failure).
        const authz = viaProxy({
          onRetry: async () =>
            void (await rt.store.sql`delete from idempotency_keys where account_id = ${rt.accountId}`),
        });
        const settled = verb === 'confirm' ? await authz.confirm(d.id) : await authz.reject(d.id);
        expect(settled).toMatchObject({ id: d.id, status: wanted });
        expect(seenSince(from).map((s) => [s.method, s.path, s.fate])).toEqual([
          ['POST', `/v1/decisions/${d.id}/${verb}`, 'dropped'],
          ['POST', `/v1/decisions/${d.id}/${verb}`, 'forwarded'],
          ['GET', `/v1/decisions/${d.id}`, 'forwarded'],
        ]);
        expect(await chargeBudget(a)).toMatchObject({ held: 0, consumed: verb === 'confirm' ? 10 : 0 });
      }
    });

    it('a 5xx from a gateway is retried; when it persists the call throws and nothing is decided', async () => {
      const a = agent('gateway');
      let from = proxy.seen.length;
      proxy.failRequests(2, 502, '<html><body>502 Bad Gateway</body></html>');
      const retries: ClientRetryEvent[] = [];
      const d = await viaProxy({ onRetry: (e) => void retries.push(e) }).decide({ agent_id: a, action: 'orders.read' });
      expect(d.effect).toBe('allow');
      expect(retries.map((r) => [r.error.code, r.error.status, r.delayMs])).toEqual([
        [CLIENT_ERROR_CODES.unexpectedResponse, 502, 10],
        [CLIENT_ERROR_CODES.unexpectedResponse, 502, 20],
      ]);
      expect(new Set(seenSince(from).map((s) => s.idempotencyKey)).size).toBe(1);
      expect((await decisionsOf(a)).length).toBe(1);

      const b = agent('gateway-down');
      from = proxy.seen.length;
      proxy.failRequests(
        4,
        503,
        '{"error":{"code":"service.unavailable","message":"down","request_id":"req_gw"}}',
        'application/json',
      );
      const error = await rejection(viaProxy().decide({ agent_id: b, action: 'orders.read' }));
      expect(error).toMatchObject({ code: 'service.unavailable', status: 503, requestId: 'req_gw' });
      expect(seenSince(from).map((s) => s.fate)).toEqual(['failed', 'failed', 'failed', 'failed']);
      expect(await decisionsOf(b)).toEqual([]);
    });

    it("the service's own 503 (policies that do not load) is retried, and the retry decides once they load", async () => {
      const a = agent('unloadable');
      const policiesChanged = async () => {
        await rt.store
          .sql`update policy_sets set version = version + 1 where account_id = ${rt.accountId} and environment = 'live'`;
        rt.services.policySets.clear();
      };
      await rt.store.sql.unsafe(
        `insert into policies (account_id, environment, id, body, created_at, updated_at) values ($1, 'live', 'pol_corrupt', $2::jsonb, now(), now())`,
        [rt.accountId, '{"id":"pol_corrupt","name":"corrupt","effect":"maybe","actions":["orders.read"]}'],
      );
      await policiesChanged();
      const retries: ClientRetryEvent[] = [];
      const authz = client({
        apiKey: rt.liveKey,
        onRetry: async (e) => {
          retries.push(e);
          await rt.store
            .sql`delete from policies where account_id = ${rt.accountId} and environment = 'live' and id = 'pol_corrupt'`;
          await policiesChanged();
        },
      });
      const d = await authz.decide({ agent_id: a, action: 'orders.read' });
      expect(d).toMatchObject({ effect: 'allow', livemode: true });
      expect(retries.map((r) => [r.error.code, r.error.status])).toEqual([['service.unavailable', 503]]);
      expect(retries[0]!.error.requestId).toMatch(/^req_/);
      expect((await decisionsOf(a, rt.liveKey)).map((x) => x.id)).toEqual([d.id]);
    });

    it('an attempt past its time limit is retried under the same key: one decision', async () => {
      const a = agent('slow');
      const from = proxy.seen.length;
      proxy.holdResponses(1);
      const retries: ClientRetryEvent[] = [];
      const d = await viaProxy({ timeoutMs: 1000, onRetry: (e) => void retries.push(e) }).decide({
        agent_id: a,
        action: 'orders.read',
      });
      expect(retries.map((r) => [r.error.code, r.error.status])).toEqual([[CLIENT_ERROR_CODES.timeout, null]]);
      const seen = seenSince(from);
      expect(seen.map((s) => s.fate)).toEqual(['held', 'forwarded']);
      expect(seen[1]!.idempotencyKey).toBe(seen[0]!.idempotencyKey);
      expect((await decisionsOf(a)).map((x) => x.id)).toEqual([d.id]);
    });

    it('every attempt past its limit: client.timeout, never an allow', async () => {
      const a = agent('timeouts');
      proxy.holdResponses(3);
      const error = await rejection(
        viaProxy({ timeoutMs: 300, retries: 2 }).decide({ agent_id: a, action: 'orders.read' }),
      );
      expect(error).toMatchObject({ code: CLIENT_ERROR_CODES.timeout, status: null });
      expect((await decisionsOf(a)).length).toBe(1); // the first attempt decided; the retries replayed it
    });

    it("the caller's signal aborts the call without retrying", async () => {
      const a = agent('aborted');
      const from = proxy.seen.length;
      proxy.holdResponses(1);
      const controller = new AbortController();
      const retries: ClientRetryEvent[] = [];
      const pending = rejection(
        viaProxy({ onRetry: (e) => void retries.push(e) }).decide(
          { agent_id: a, action: 'orders.read' },
          { signal: controller.signal },
        ),
      );
      await vi.waitFor(() => expect(seenSince(from).length).toBe(1));
      controller.abort();
      expect(await pending).toMatchObject({ code: CLIENT_ERROR_CODES.aborted, status: null });
      expect(retries).toEqual([]);
      expect(seenSince(from).length).toBe(1);
    });
  });
});
