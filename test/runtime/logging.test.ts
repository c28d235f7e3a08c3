/**
 * Structured logs with the options `authz serve` uses (runtime/http/logger.ts),
 * captured in memory at trace level: every line of a request carries its
 * request id, and no secret reaches a line: API keys (in the Authorization
 * header, in a URL, in the admin API's answer), webhook secrets, permit
 * tokens, the admin token and the master key.
 */
import Fastify, { type LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACTED, loggerOptions } from '../../runtime/http/logger.js';
import { lazyChildLogger } from '../../runtime/http/lazy-logger.js';
import { ADMIN_TOKEN, json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';

const MASTER_KEY = 'master-key-for-logging-tests-0123';
const METRICS_TOKEN = 'metrics-token-for-logging-0123456';

describe('request logs', () => {
  const lines: string[] = [];
  const stream = { write: (line: string) => void lines.push(line) };
  let rt: TestRuntime;
  const secrets: string[] = [];
  const requestIds: string[] = [];

  beforeAll(async () => {
    rt = await startRuntime('embedded', {
      config: { masterKey: MASTER_KEY, metricsToken: METRICS_TOKEN },
      app: { logger: loggerOptions({ level: 'trace', stream, secrets: [ADMIN_TOKEN, MASTER_KEY, METRICS_TOKEN] }) },
    });
    await rt.setPolicies([{ effect: 'allow', actions: ['orders.read'] }]);
    secrets.push(rt.testKey, ADMIN_TOKEN, MASTER_KEY, METRICS_TOKEN);
    const track = (r: LightMyRequestResponse) => {
      requestIds.push(r.headers['request-id'] as string);
      return r;
    };

    // A decision (its answer carries a permit token).
    const decided = track(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'log-agent', action: 'orders.read' },
      }),
    );
    expect(decided.statusCode).toBe(200);
    secrets.push(json(decided).permit_token);
    // A webhook endpoint (its answer carries the secret).
    const hook = track(
      await rt.call(rt.testKey, { method: 'POST', url: '/v1/webhooks', payload: { url: 'http://127.0.0.1:9/hooks' } }),
    );
    expect(hook.statusCode).toBe(201);
    secrets.push(json(hook).secret);
    // An API key made through the operator API (its answer carries the key).
    const created = track(
      await rt.app.inject({
        method: 'POST',
        url: `/admin/accounts/${rt.accountId}/api-keys`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { environment: 'live', scopes: ['*'] },
      }),
    );
    expect(created.statusCode).toBe(201);
    secrets.push(json(created).key);
    // Errors: a key pasted into a query string (400), an unknown key (401), a wrong operator token (401), bad JSON (400).
    const unknownKey = `svc_test_sk_${'Z'.repeat(40)}`;
    secrets.push(unknownKey);
    expect(
      track(await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions?api_key=${rt.testKey}` })).statusCode,
    ).toBe(400);
    expect(track(await rt.call(unknownKey, { method: 'GET', url: '/v1/decisions' })).statusCode).toBe(401);
    expect(
      track(
        await rt.app.inject({
          method: 'POST',
          url: '/admin/accounts',
          headers: { authorization: `Bearer ${MASTER_KEY}` },
          payload: { name: 'x' },
        }),
      ).statusCode,
    ).toBe(401);
    expect(
      track(
        await rt.call(rt.testKey, {
          method: 'POST',
          url: '/v1/decisions',
          headers: { 'content-type': 'application/json' },
          payload: `{"agent_id": "${secrets[5]}"`,
        }),
      ).statusCode,
    ).toBe(400);
    expect(
      track(
        await rt.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } }),
      ).statusCode,
    ).toBe(200);
  });
  afterAll(() => rt.close());

  it('captured the requests', () => {
    expect(secrets.every((s) => typeof s === 'string' && s.length >= 16)).toBe(true);
    expect(requestIds).toHaveLength(8);
    expect(lines.length).toBeGreaterThanOrEqual(requestIds.length * 2);
  });

  it('puts the request id on every line of every request', () => {
    const parsed = lines.map((l) => JSON.parse(l) as JsonObject);
    for (const line of parsed) expect(line.reqId, JSON.stringify(line)).toMatch(/^req_/);
    for (const id of requestIds) {
      const mine = parsed.filter((l) => l.reqId === id);
      expect(mine.some((l) => l.msg === 'incoming request')).toBe(true);
      expect(mine.some((l) => l.msg === 'request completed')).toBe(true);
    }
  });

  it('writes no secret into any line', () => {
    for (const secret of secrets) {
      const leaking = lines.filter((l) => l.includes(secret));
      expect(leaking, `a line contains ${secret.slice(0, 14)}...`).toEqual([]);
    }
    // The key pasted into the URL is there, masked.
    expect(lines.some((l) => l.includes(`/v1/decisions?api_key=svc_test_sk_${REDACTED}`))).toBe(true);
  });
});

describe('logger options', () => {
  it('redacts secret fields and masks secret values in messages and errors', async () => {
    const lines: string[] = [];
    const app = Fastify({
      logger: loggerOptions({ level: 'info', stream: { write: (l) => void lines.push(l) }, secrets: [MASTER_KEY] }),
    });
    const apiKey = `svc_live_sk_${'a1'.repeat(20)}`;
    const whsec = `whsec_${'b'.repeat(43)}`;
    app.log.info(
      {
        request: { headers: { authorization: `Bearer ${apiKey}` } },
        headers: { authorization: 'Bearer x' },
        secret: whsec,
        config: { masterKey: MASTER_KEY, adminToken: 'admin-token-0123456789' },
        endpoint: { secret: whsec },
      },
      'probe',
    );
    app.log.warn(`a message quoting ${apiKey} and ${whsec} and ${MASTER_KEY}`);
    app.log.error({ err: new Error(`failed with ${apiKey}`) }, 'boom');
    await app.close();
    const all = lines.join('');
    for (const s of [apiKey, whsec, MASTER_KEY, 'admin-token-0123456789']) expect(all).not.toContain(s);
    const [probe, message, boom] = lines.map((l) => JSON.parse(l) as JsonObject);
    expect(probe!.request.headers.authorization).toBe(REDACTED);
    expect(probe!.headers.authorization).toBe(REDACTED);
    expect(probe!.secret).toBe(REDACTED);
    expect(probe!.config).toEqual({ masterKey: REDACTED, adminToken: REDACTED });
    expect(probe!.endpoint.secret).toBe(REDACTED);
    expect(message!.msg).toBe(`a message quoting svc_live_sk_${REDACTED} and whsec_${REDACTED} and ${REDACTED}`);
    expect(boom!.err.message).toBe(`failed with svc_live_sk_${REDACTED}`);
  });

  it('masks a whole base64 webhook secret (with + / =), as new endpoints have', async () => {
    const lines: string[] = [];
    const app = Fastify({ logger: loggerOptions({ level: 'info', stream: { write: (l) => void lines.push(l) } }) });
    const whsec = 'whsec_ab+c/de+fg/hi+jk/lm+no/pq+rs/tu+vw/xy+z0/12345=';
    app.log.warn(`quoting ${whsec} here`);
    await app.close();
    expect(lines.join('')).not.toContain('+c/de');
    expect((JSON.parse(lines[0]!) as { msg: string }).msg).toBe(`quoting whsec_${REDACTED} here`);
  });
});

describe('request loggers made on their first line (runtime/http/lazy-logger.ts)', () => {
  it('writes only the enabled levels, each line with its request id and redaction; a child of it keeps both', async () => {
    const lines: string[] = [];
    const app = Fastify({
      logger: loggerOptions({ level: 'warn', stream: { write: (l) => void lines.push(l) } }),
      childLoggerFactory: lazyChildLogger,
    });
    const apiKey = `svc_live_sk_${'c3'.repeat(20)}`;
    app.get('/probe', async (request) => {
      request.log.info('not written at warn');
      request.log.debug({ secret: 'x' }, 'nor this');
      const before = lines.length;
      request.log.warn({ secret: apiKey }, `quoting ${apiKey}`);
      request.log.child({ step: 'inner' }).error('inner line');
      const log = request.log as typeof request.log & { isLevelEnabled(level: string): boolean };
      return {
        enabled: log.isLevelEnabled('warn') && !log.isLevelEnabled('info'),
        level: request.log.level,
        written: lines.length - before,
      };
    });
    const r = await app.inject({ method: 'GET', url: '/probe' });
    await app.close();
    expect(r.json()).toEqual({ enabled: true, level: 'warn', written: 2 });
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    // The request's own lines: none at info (Fastify's "incoming request"/"request completed" are info too).
    expect(parsed.map((l) => l.msg)).toEqual([`quoting svc_live_sk_${REDACTED}`, 'inner line']);
    expect(parsed.every((l) => typeof l.reqId === 'string' && l.reqId === parsed[0]!.reqId)).toBe(true);
    expect(parsed[0]!.secret).toBe(REDACTED);
    expect(parsed[1]!.step).toBe('inner');
    expect(lines.join('')).not.toContain(apiKey);
  });

  it('at info, a request logs its two lines with its request id as Fastify does', async () => {
    const lines: string[] = [];
    const app = Fastify({
      logger: loggerOptions({ level: 'info', stream: { write: (l) => void lines.push(l) } }),
      childLoggerFactory: lazyChildLogger,
    });
    app.get('/probe', async () => ({ ok: true }));
    const r = await app.inject({ method: 'GET', url: '/probe' });
    await app.close();
    expect(r.statusCode).toBe(200);
    const parsed = lines.map((l) => JSON.parse(l) as { msg: string; reqId?: string });
    expect(parsed.map((l) => l.msg)).toEqual(['incoming request', 'request completed']);
    expect(parsed[0]!.reqId).toBeDefined();
    expect(parsed[1]!.reqId).toBe(parsed[0]!.reqId);
  });
});
