/**
 * The quiet default log of `authz serve` (LOG_LEVEL unset, docs/operations.md),
 * with the options serve uses (runtime/http/logger.ts at QUIET_LOG_LEVEL, the
 * request summary), captured in memory, on both stores: answered requests,
 * refusals (400, 401, 404) included, write no line; a request the service
 * fails (503: a stored policy set that does not load, written with SQL behind
 * the API's back) writes exactly one line, with its request id; the summary
 * counts them all by class. (The child-process side, no request line and the
 * summary at the stop: test/runtime/serve-first-start.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../../runtime/http/logger.js';
import { QUIET_LOG_LEVEL, RequestSummary } from '../../runtime/http/request-summary.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

describe.each(STORE_KINDS)('the quiet default log (%s)', (kind) => {
  const lines: string[] = [];
  const stream = { write: (line: string) => void lines.push(line) };
  const summary = new RequestSummary();
  let rt: TestRuntime;

  beforeAll(async () => {
    rt = await startRuntime(kind, {
      app: {
        logger: loggerOptions({ level: QUIET_LOG_LEVEL, stream, secrets: [ADMIN_TOKEN] }),
        requestSummary: summary,
      },
    });
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }], 'live');
  });
  afterAll(() => rt?.close());

  const decideLive = () =>
    rt.call(rt.liveKey, {
      method: 'POST',
      url: '/v1/decisions',
      payload: { agent_id: 'quiet-bot', action: 'orders.read' },
    });

  it('answers and refusals write no line', async () => {
    expect((await decideLive()).statusCode).toBe(200);
    expect((await rt.call(`svc_test_sk_${'Q'.repeat(40)}`, { method: 'GET', url: '/v1/decisions' })).statusCode).toBe(
      401,
    );
    expect((await rt.call(rt.testKey, { method: 'GET', url: '/v1/policies/pol_nope' })).statusCode).toBe(404);
    expect(
      (
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions',
          headers: { 'content-type': 'application/json' },
          payload: '{"agent_id":',
        })
      ).statusCode,
    ).toBe(400);
    expect(lines).toEqual([]);
  });

  it('a request the service fails writes one line, with its request id; the summary counts every class', async () => {
    // A stored policy the compiler refuses: the live set cannot load, decisions answer 503 (fail closed).
    await rt.store.sql.unsafe(
      `insert into policies (account_id, environment, id, body, created_at, updated_at) values ($1, 'live', 'pol_quiet_corrupt', $2::jsonb, now(), now())`,
      [rt.accountId, '{"id":"pol_quiet_corrupt","name":"corrupt","effect":"maybe","actions":["orders.read"]}'],
    );
    await rt.store
      .sql`update policy_sets set version = version + 1 where account_id = ${rt.accountId} and environment = 'live'`;
    rt.services.policySets.clear();
    const failed = await decideLive();
    expect(failed.statusCode).toBe(503);
    expect(json(failed).error.code).toBe('service.unavailable');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as JsonObject;
    expect(line).toMatchObject({ level: 40, reqId: failed.headers['request-id'], msg: 'service unavailable' });
    expect(line.err?.message).toMatch(/polic/);
    expect(summary.take('since the last summary', new Date(0))).toMatch(
      / requests since the last summary: 5 \(2xx 1, 4xx 3, 5xx 1\); slowest \d+ ms$/,
    );
  });
});
