/**
 * The decision log's daily partitions and retention (migration 015,
 * runtime/background/decision-log.ts), on both stores, on a manual service clock:
 * partitions made ahead and rows moved out of the default partition, a lookup by
 * id and a time-range read pruned to their partitions (the plans), old days
 * dropped after the clock moves, live rows (pending decision, held budget,
 * pending delivery) keeping their day, inserts after the clock jumps forward and
 * back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../runtime/clock.js';
import { maintainLog, type LogRound } from '../../runtime/background/decision-log.js';
import { idRange } from '../../runtime/ids.js';
import { DAY_MS, dayOf } from '../../runtime/store/log-partitions.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, START, type TestRuntime } from './helpers/app.js';
import { decide } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

const day = (offset: number) => dayOf(START + offset * DAY_MS);

describe.each(STORE_KINDS)('decision log partitions and retention (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind, { config: { webhookAllowPrivate: true } });
    await rt.setPolicies([
      { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
      {
        id: 'pol_usd',
        effect: 'allow',
        actions: ['payments.charge'],
        budget: { unit: 'USD', limit: 1000, period: 'monthly' },
      },
      {
        id: 'pol_wire',
        effect: 'review',
        actions: ['payments.wire'],
        approval: { required: true, timeout_seconds: 86_400 },
      },
    ]);
  });
  afterAll(() => rt.close());

  const round = (retentionDays: number | null = 3): Promise<LogRound> =>
    maintainLog(rt.store, rt.clock, { retentionDays });
  const partitionOf = async (table: string, id: string): Promise<string> => {
    const [row] = await rt.store.sql.unsafe(`select tableoid::regclass::text as p from ${table} where id = $1`, [id]);
    return (row as unknown as { p: string } | undefined)?.p ?? 'gone';
  };
  const plan = async (query: string, params: unknown[]): Promise<string> => {
    const rows = await rt.store.sql.unsafe(`explain (costs off) ${query}`, params as never[]);
    return rows.map((r) => (r as Record<string, string>)['QUERY PLAN']).join('\n');
  };
  const scannedPartitions = (text: string) =>
    [
      ...new Set(
        [...text.matchAll(/on (decisions_\w+)/g)].map((m) => m[1]!.replace(/_(pkey|account|approval)\w*$/, '')),
      ),
    ].sort();

  it('an insert before any partition lands in the default one; the first round makes today and two days ahead and moves it', async () => {
    const early = await decide(rt, { agent_id: 'p-early', action: 'orders.read' });
    expect(await partitionOf('decisions', early.id)).toBe('decisions_default');
    const first = await round();
    expect(first.created.filter((c) => c.table === 'decisions').map((c) => c.day)).toEqual([day(0), day(1), day(2)]);
    expect(first.created.map((c) => c.table).sort()).toEqual([
      ...Array(3).fill('decisions'),
      ...Array(3).fill('events'),
      ...Array(3).fill('webhook_deliveries'),
    ]);
    expect(await partitionOf('decisions', early.id)).toBe(`decisions_p${day(0).replaceAll('-', '')}`);
    expect((await rt.getOk(`/v1/decisions/${early.id}`)).id).toBe(early.id);
    // A second round has nothing to do.
    expect((await round()).created).toEqual([]);
  });

  it('a lookup by id reads one partition; a time-range read only the partitions of its days (plans)', async () => {
    rt.clock.advance(86_400);
    await round();
    const second = await decide(rt, { agent_id: 'p-plan', action: 'orders.read' });
    const byId = await plan('select * from decisions where account_id = $1 and environment = $2 and id = $3', [
      rt.accountId,
      'test',
      second.id,
    ]);
    expect(scannedPartitions(byId)).toEqual([`decisions_p${day(1).replaceAll('-', '')}`]);
    // The export's query (runtime/store/decisions.ts exportDecisionPage) for one day: one partition, not every day and not the default.
    const { lo, hi } = idRange('dec', START + DAY_MS, START + DAY_MS + 3_600_000);
    const byTime = await plan(
      'select * from decisions where account_id = $1 and environment = $2 and evaluated_at >= $3 and evaluated_at < $4 and id >= $5 and id < $6 order by evaluated_at, seq',
      [rt.accountId, 'test', iso(START + DAY_MS), iso(START + DAY_MS + 3_600_000), lo, hi],
    );
    expect(scannedPartitions(byTime)).toEqual([`decisions_p${day(1).replaceAll('-', '')}`]);
    rt.clock.advance(1);
    // And the export answers what it answered before partitions (the day's decision, not the earlier one).
    const r = await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/export?since=${iso(START + DAY_MS)}` });
    const ids = r.body
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l).id);
    expect(ids).toEqual([second.id]);
  });

  it('drops days past retention, keeps a day while a decision in it is pending, a budget is held or a delivery pending', async () => {
    // Day 0 (START) already holds p-early's decision (TTL 300 s). Day 1: a decision awaiting approval, a held budget, a webhook.
    const long = await decide(rt, { agent_id: 'p-long', action: 'payments.wire' });
    expect(long.status).toBe('awaiting_approval');
    const hook = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: 'http://127.0.0.1:9/hooks', events: ['decision.allow'] },
      }),
    );
    const charged = await decide(rt, { agent_id: 'p-hold', action: 'payments.charge', amount: 25 });
    const [delivery] = (await rt.getOk(`/v1/webhooks/${hook.id}/deliveries`)).data;
    expect(delivery.status).toBe('pending');

    // Four days later (retention 3): day 0 is past it and holds nothing live: dropped, in every table.
    rt.clock.advance(3 * 86_400);
    const later = await round();
    expect(later.dropped).toEqual(
      expect.arrayContaining([
        { table: 'decisions', day: day(0) },
        { table: 'events', day: day(0) },
        { table: 'webhook_deliveries', day: day(0) },
      ]),
    );
    // Day 1 is not past retention yet.
    expect(later.dropped.filter((d) => d.day === day(1))).toEqual([]);

    // A day later day 1 is past retention, but its decision awaiting approval (not yet settled by the
    // review sweep), the held 25 USD and the pending delivery keep it.
    rt.clock.advance(86_400);
    const kept = await round();
    expect(kept.kept).toEqual(
      expect.arrayContaining([
        { table: 'decisions', day: day(1), reason: 'pending_decision' },
        { table: 'events', day: day(1), reason: 'pending_delivery' },
        { table: 'webhook_deliveries', day: day(1), reason: 'pending_delivery' },
      ]),
    );
    // (Reads come after that round: any read of the environment settles its overdue approvals.)
    expect((await rt.getOk('/v1/decisions?agent_id=p-early')).data).toEqual([]);
    expect((await rt.getOk(`/v1/decisions/${charged.id}`)).id).toBe(charged.id);

    // A read settles the overdue approval (review.timeout: denied): the held budget still keeps the day.
    expect((await rt.getOk(`/v1/decisions/${long.id}`)).reason).toBe('review.timeout');
    expect((await round()).kept).toEqual(
      expect.arrayContaining([{ table: 'decisions', day: day(1), reason: 'held_budget' }]),
    );
    // The budget sweep expires the hold (its decision's TTL passed long ago): now only the pending delivery keeps
    // day 1, in every table: the allow event is stored by reference, its body built from its decision.
    await rt.maintenance.runOnce();
    const swept = await round();
    expect(swept.kept).toEqual(
      expect.arrayContaining([{ table: 'decisions', day: day(1), reason: 'pending_delivery' }]),
    );
    const events = (await rt.getOk('/v1/events?type=decision.allow')).data as Array<JsonObject>;
    expect(events.map((e) => e.data.decision.id)).toContain(charged.id);
    // The budget's usage is unaffected by the drop: it lives in its own tables.
    const budgets = (await rt.getOk('/v1/budgets?agent_id=p-hold')).data;
    expect(budgets).toEqual([expect.objectContaining({ unit: 'USD', held: 0, consumed: 0 })]);

    // The delivery is given up (as the dispatcher does after its last retry): its day goes at the next round.
    await rt.store.sql`update webhook_deliveries set status = 'abandoned' where status = 'pending'`;
    const last = await round();
    expect(last.dropped).toEqual(
      expect.arrayContaining([
        { table: 'events', day: day(1) },
        { table: 'webhook_deliveries', day: day(1) },
        { table: 'decisions', day: day(1) },
      ]),
    );
    expect(await partitionOf('decisions', long.id)).toBe('gone');
    expect(await rt.store.sql`select 1 from webhook_attempts_default`).toHaveLength(0);
  });

  it('inserts succeed after the clock jumps forward and back; the next round moves them into their days', async () => {
    rt.clock.advance(40 * 86_400);
    const aheadDay = dayOf(rt.clock.now());
    const ahead = await decide(rt, { agent_id: 'p-jump', action: 'orders.read' });
    expect(await partitionOf('decisions', ahead.id)).toBe('decisions_default');
    const r = await round();
    expect(r.created).toEqual(expect.arrayContaining([{ table: 'decisions', day: dayOf(rt.clock.now()) }]));
    expect(await partitionOf('decisions', ahead.id)).toBe(`decisions_p${dayOf(rt.clock.now()).replaceAll('-', '')}`);

    // Back before START, with no round at that time: the day has no partition, the default takes the decision.
    rt.clock.set(START - 20 * DAY_MS);
    const behind = await decide(rt, { agent_id: 'p-jump', action: 'orders.read' });
    expect(await partitionOf('decisions', behind.id)).toBe('decisions_default');
    const listed = (await rt.getOk('/v1/decisions?agent_id=p-jump')).data.map((d: { id: string }) => d.id);
    expect(listed).toEqual([behind.id, ahead.id]);
    expect((await rt.getOk(`/v1/decisions/${behind.id}`)).id).toBe(behind.id);

    // Forward again past both. The earlier test's endpoint got these decisions' events, whose pending
    // deliveries keep them, the decisions too (their bodies), in a partition or in the default one.
    rt.clock.set(START + 100 * DAY_MS);
    await round();
    const behindEvent = `evt_${behind.id.slice(4)}`;
    expect(await partitionOf('decisions', behind.id)).toBe('decisions_default');
    expect((await rt.getOk(`/v1/events/${behindEvent}`)).data.decision.id).toBe(behind.id);
    // Given up: the old rows go, by their partition (ahead) or trimmed from the default (behind).
    await rt.store.sql`update webhook_deliveries set status = 'abandoned' where status = 'pending'`;
    const far = await round();
    expect(far.dropped).toEqual(expect.arrayContaining([{ table: 'decisions', day: aheadDay }]));
    expect(far.trimmed).toBeGreaterThanOrEqual(1);
    expect((await rt.getOk('/v1/decisions?agent_id=p-jump')).data).toEqual([]);
    expect((await decide(rt, { agent_id: 'p-jump', action: 'orders.read' })).effect).toBe('allow');
  });

  it('AUTHZ_RETENTION_DAYS off keeps every day', async () => {
    const kept = await decide(rt, { agent_id: 'p-off', action: 'orders.read' });
    await round(null);
    rt.clock.advance(400 * 86_400);
    const r = await round(null);
    expect(r.dropped).toEqual([]);
    expect((await rt.getOk(`/v1/decisions/${kept.id}`)).id).toBe(kept.id);
  });
});

describe.each(STORE_KINDS)('a pending decision keeps its day past retention until it expires (%s)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
    await rt.setPolicies([
      {
        id: 'pol_wire',
        effect: 'review',
        actions: ['payments.wire'],
        approval: { required: true, timeout_seconds: 86_400 },
      },
    ]);
  });
  afterAll(() => rt.close());

  it('approved late, a decision is pending for its TTL after the approval: its day waits for it, then goes', async () => {
    // Day 0 at 23:30: a decision waiting for approval (a day at most), approved the next day at 23:20,
    // then pending for its TTL (an hour): until day 2 at 00:20, past the day's retention of 1 day.
    const day0 = Math.floor(START / DAY_MS) * DAY_MS;
    rt.clock.set(day0 + 23.5 * 3_600_000);
    await maintainLog(rt.store, rt.clock, { retentionDays: 1 });
    const d = json(
      await rt.call(rt.testKey, {
        method: 'POST',
        url: '/v1/decisions',
        payload: { agent_id: 'p-late', action: 'payments.wire', ttl_seconds: 3600 },
      }),
    );
    expect(d.status).toBe('awaiting_approval');
    rt.clock.set(day0 + DAY_MS + 23 * 3_600_000 + 20 * 60_000);
    const reviewer = await rt.keyWith(['reviews:read', 'reviews:write']);
    const approved = await rt.call(reviewer, {
      method: 'POST',
      url: `/v1/decisions/${d.id}/review`,
      payload: { verdict: 'approve', reviewer: 'alice' },
    });
    expect(approved.statusCode, approved.body).toBe(200);
    expect(json(approved).status).toBe('pending');

    rt.clock.set(day0 + 2 * DAY_MS + 5 * 60_000);
    const kept = await maintainLog(rt.store, rt.clock, { retentionDays: 1 });
    expect(kept.kept).toEqual(
      expect.arrayContaining([{ table: 'decisions', day: dayOf(day0), reason: 'pending_decision' }]),
    );
    expect((await rt.getOk(`/v1/decisions/${d.id}`)).status).toBe('pending');

    rt.clock.set(day0 + 2 * DAY_MS + 25 * 60_000);
    const gone = await maintainLog(rt.store, rt.clock, { retentionDays: 1 });
    expect(gone.dropped).toEqual(expect.arrayContaining([{ table: 'decisions', day: dayOf(day0) }]));
    expect((await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/${d.id}` })).statusCode).toBe(404);
  });
});
