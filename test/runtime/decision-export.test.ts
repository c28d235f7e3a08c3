/**
 * GET /v1/decisions/export (NDJSON, oldest first, streamed) and context
 * redaction (AUTHZ_REDACT_CONTEXT), on both stores: the range's bounds, the
 * order, the bodies (those of GET /v1/decisions/:id), tenant isolation, bad
 * input; 200,000 decisions streamed while the server's heap stays flat.
 */
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRedactionPaths, redactContext } from '../../runtime/shared/redact.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, START, startRuntime, type TestRuntime } from './helpers/app.js';
import { agent, decide } from '../helpers/kit.js';

const iso = (ms: number) => new Date(ms).toISOString();

describe('context redaction paths', () => {
  it('parses a list, with or without the context. prefix, and refuses empty segments', () => {
    expect(parseRedactionPaths(' context.card_number, customer.ssn ,')).toEqual([['card_number'], ['customer', 'ssn']]);
    expect(parseRedactionPaths('')).toEqual([]);
    expect(() => parseRedactionPaths('customer..ssn')).toThrow(/context path/);
  });

  it('removes exactly those paths and copies only what it changes', () => {
    const shared = { keep: [1, 2] };
    const context = { card_number: '4242', customer: { ssn: '1', name: 'A' }, other: shared, list: [{ ssn: 'x' }] };
    const out = redactContext(context, [['card_number'], ['customer', 'ssn'], ['list', 'ssn'], ['missing', 'x']]);
    expect(out).toEqual({ customer: { name: 'A' }, other: { keep: [1, 2] }, list: [{ ssn: 'x' }] });
    expect(out!.other).toBe(shared);
    expect(context.card_number).toBe('4242');
    expect(redactContext(null, [['a']])).toBeNull();
  });
});

for (const kind of STORE_KINDS) {
  describe(`GET /v1/decisions/export (${kind})`, () => {
    let rt: TestRuntime;
    let base: string;

    beforeAll(async () => {
      rt = await startRuntime(kind, {
        config: { redactContext: parseRedactionPaths('context.card_number,customer.ssn') },
      });
      await rt.setPolicies([
        { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
        // The condition reads the card number: redaction happens after evaluation.
        { id: 'pol_card', effect: 'allow', actions: ['payments.charge'], condition: "context.card_number == '4242'" },
      ]);
      await rt.app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(rt.app.server.address() as AddressInfo).port}`;
    });
    afterAll(() => rt.close());

    const exportLines = async (query: string, key = rt.testKey) => {
      const r = await rt.call(key, { method: 'GET', url: `/v1/decisions/export?${query}` });
      expect(r.statusCode, r.body).toBe(200);
      expect(r.headers['content-type']).toMatch(/^application\/x-ndjson/);
      return r.body === ''
        ? []
        : r.body
            .trimEnd()
            .split('\n')
            .map((l) => JSON.parse(l));
    };

    it('streams the range oldest first, since inclusive and until exclusive, as GET answers each decision', async () => {
      const a = agent('export');
      const t0 = rt.clock.now();
      const first = await decide(rt, { agent_id: a, action: 'orders.read', context: { n: 1 }, session_id: 's1' });
      rt.clock.advance(1); // seconds
      const second = await decide(rt, { agent_id: a, action: 'orders.archive' });
      rt.clock.advance(1);
      const third = await decide(rt, { agent_id: a, action: 'orders.read' });
      const other = await decide(rt, { agent_id: a, action: 'orders.read' }, rt.otherKey);
      // `until` defaults to the service's now, exclusive: a moment later the third is in.
      expect((await exportLines(`since=${iso(t0)}`)).filter((d) => d.agent_id === a).map((d) => d.id)).toEqual([
        first.id,
        second.id,
      ]);
      rt.clock.advance(1);
      const all = await exportLines(`since=${iso(t0)}`);
      const mine = all.filter((d) => d.agent_id === a);
      expect(mine.map((d) => d.id)).toEqual([first.id, second.id, third.id]);
      expect(all.map((d) => d.id)).not.toContain(other.id);
      for (const d of mine) expect(d).toEqual(await rt.getOk(`/v1/decisions/${d.id}`));
      expect(mine[0]).toMatchObject({ context: { n: 1 }, session_id: 's1', permit_token: null });
      // Bounds: since inclusive, until exclusive; until defaults to the service's now.
      expect((await exportLines(`since=${iso(t0 + 1000)}&until=${iso(t0 + 2000)}`)).map((d) => d.id)).toEqual([
        second.id,
      ]);
      expect((await exportLines(`since=${iso(t0 + 1000)}`)).filter((d) => d.agent_id === a).map((d) => d.id)).toEqual([
        second.id,
        third.id,
      ]);
      expect(await exportLines(`since=${iso(t0 + 5000)}&until=${iso(t0 + 6000)}`)).toEqual([]);
    });

    it('refuses a bad range with validation.invalid_field, and needs decisions:read', async () => {
      for (const q of [
        'since=yesterday',
        `since=${iso(START)}&until=soon`,
        `since=${iso(START + 10_000)}&until=${iso(START)}`,
        'until=2026-01-01T00:00:00Z',
        `since=${iso(START)}&x=1`,
      ]) {
        const r = await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/export?${q}` });
        expect(r.statusCode, q).toBe(400);
        expect(['validation.invalid_field', 'validation.missing_field']).toContain(json(r).error.code);
      }
      const r = await rt.call(await rt.keyWith(['decisions:write']), {
        method: 'GET',
        url: `/v1/decisions/export?since=${iso(START)}`,
      });
      expect(r.statusCode).toBe(403);
    });

    it('dates must exist and lie in the years 1970 to 9999: else 400 validation.invalid_field naming the parameter', async () => {
      const refused: Array<[string, string]> = [
        ['since=0000-01-01T00:00:00.000Z', 'since'],
        ['since=1969-12-31T23:59:59.999Z', 'since'],
        ['since=1970-01-01T00:30:00+01:00', 'since'], // 1969 in UTC
        ['since=2026-02-30', 'since'],
        ['since=2026-02-29T00:00:00Z', 'since'], // 2026 is no leap year
        ['since=2026-04-31T10:00:00Z', 'since'],
        ['since=2026-13-01T00:00:00Z', 'since'],
        ['since=2026-00-10T00:00:00Z', 'since'],
        ['since=2026-01-01T24:00:00Z', 'since'],
        ['since=2026-01-01T10:60:00Z', 'since'],
        ['since=2026-01-01T10:00:60Z', 'since'],
        ['since=2026-01-01T10:00:00+24:00', 'since'],
        [`since=${iso(START)}&until=2026-02-30T00:00:00Z`, 'until'],
        [`since=${iso(START)}&until=9999-12-31T23:00:00-01:00`, 'until'], // year 10000 in UTC
      ];
      for (const [q, name] of refused) {
        const r = await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/export?${q}` });
        expect(r.statusCode, `${q}: ${r.body}`).toBe(400);
        expect(json(r).error).toMatchObject({ code: 'validation.invalid_field', details: [{ path: `query:${name}` }] });
      }
      // The bounds themselves, and a leap day that exists.
      for (const q of [
        'since=1970-01-01T00:00:00.000Z',
        'since=1970-01-01&until=9999-12-31T23:59:59.999Z',
        'since=2028-02-29T00:00:00Z&until=2028-03-01',
        'since=1970-01-01T01:00:00%2B01:00',
      ]) {
        const r = await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/export?${q}` });
        expect(r.statusCode, `${q}: ${r.body}`).toBe(200);
      }
      const all = await exportLines('since=1970-01-01T00:00:00.000Z&until=9999-12-31T23:59:59.999Z');
      expect(all.length).toBeGreaterThan(0);
      expect(all).toEqual(await exportLines(`since=1970-01-01T00:00:00.000Z&until=${iso(rt.clock.now() + 1)}`));
    });

    it('stores the context without the redacted paths, after the condition read them', async () => {
      const a = agent('redact');
      const d = await decide(rt, {
        agent_id: a,
        action: 'payments.charge',
        context: { card_number: '4242', customer: { ssn: '123', name: 'Ada' }, channel: 'chat' },
      });
      expect(d).toMatchObject({
        effect: 'allow',
        policy_id: 'pol_card',
        context: { customer: { name: 'Ada' }, channel: 'chat' },
      });
      expect(JSON.stringify(await rt.getOk(`/v1/decisions/${d.id}`))).not.toContain('4242');
      const [row] = await rt.store.sql<Array<{ context: unknown }>>`select context from decisions where id = ${d.id}`;
      expect(row!.context).toEqual({ customer: { name: 'Ada' }, channel: 'chat' });
      const events = (await rt.getOk('/v1/events?type=decision.allow&limit=100')).data as Array<{
        data: { decision: { id: string } };
      }>;
      const event = events.find((e) => e.data.decision.id === d.id);
      expect(event).toBeDefined();
      expect(JSON.stringify(event)).not.toContain('4242');
      expect(JSON.stringify(event)).not.toContain('"ssn"');
      expect(JSON.stringify(await exportLines(`since=${iso(rt.clock.now())}`))).not.toContain('4242');
    });

    it('streams 200,000 decisions with the server heap flat', async () => {
      const n = 200_000;
      const from = rt.clock.now() + 60_000;
      // Stored directly (the decision path is not what this measures); 300 bytes of context each. Ids
      // of the service's form: their time part is evaluated_at (migration 015 reads a range by id too).
      await rt.store.sql`
        insert into decisions (account_id, environment, id, agent_id, action, resource, amount, context, effect, reason,
          policy_id, matched_policy_ids, warnings, status, evaluated_at, expires_at, ttl_seconds)
        select ${rt.accountId}, 'test', 'dec_' || authz_id_time(${from}::bigint + g) || lpad(g::text, 16, '0'), 'bulk-agent', 'orders.read', 'order:' || g, null,
          jsonb_build_object('note', repeat('x', 300)), 'allow', 'policy.matched', 'pol_read', '{pol_read}', '[]'::jsonb, 'pending',
          to_timestamp(${from / 1000}::float8) + g * interval '1 millisecond',
          to_timestamp(${from / 1000}::float8) + g * interval '1 millisecond' + interval '300 seconds', 300
        from generate_series(1, ${n}::int) g`;
      rt.clock.advance(60 + n / 1000 + 1); // seconds
      // Live heap only: a full GC before each sample (vitest runs workers with --expose-gc).
      const gc = (globalThis as { gc?: () => void }).gc;
      expect(gc, 'this test needs node --expose-gc (vitest.config.ts execArgv)').toBeTypeOf('function');
      const live = () => {
        gc!();
        return process.memoryUsage().heapUsed;
      };
      const baseline = live();
      let peak = baseline;
      const sampler = setInterval(() => (peak = Math.max(peak, live())), 250);
      let lines = 0;
      let bytes = 0;
      let last = '';
      let previousId = '';
      let ordered = true;
      try {
        await new Promise<void>((resolve, reject) => {
          get(
            `${base}/v1/decisions/export?since=${iso(from)}`,
            { headers: { authorization: `Bearer ${rt.testKey}` } },
            (res) => {
              expect(res.statusCode).toBe(200);
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => {
                bytes += chunk.length;
                const parts = (last + chunk).split('\n');
                last = parts.pop()!;
                for (const line of parts) {
                  const id = (JSON.parse(line) as { id: string }).id;
                  if (id <= previousId) ordered = false;
                  previousId = id;
                  lines++;
                }
              });
              res.on('end', resolve);
              res.on('error', reject);
            },
          ).on('error', reject);
        });
      } finally {
        clearInterval(sampler);
      }
      expect(last).toBe('');
      expect(lines).toBe(n);
      expect(ordered).toBe(true);
      // The answer is over 100 MB; the server (same process) never held more than a few pages of it.
      expect(bytes).toBeGreaterThan(100 * 1024 * 1024);
      expect(
        peak - baseline,
        `heap grew by ${Math.round((peak - baseline) / 1e6)} MB while streaming ${Math.round(bytes / 1e6)} MB`,
      ).toBeLessThan(64 * 1024 * 1024);
    }, 180_000);
  });
}
