/**
 * Reviews across two runtimes on one PostgreSQL database (each with its own
 * pool, services and `LISTEN authz_reviews`, as `authz serve` runs them): a
 * request held with GET /v1/decisions/:id?wait= on one runtime answers when a
 * reviewer approves or denies through the other, and when the other's sweep
 * times the approval out; two reviewers racing on the two runtimes: one wins,
 * the other is 409 decision.already_reviewed, and the calls budget counts the
 * approval once. The wake-up latency (the verdict's answer to the waiter's) is
 * printed, not asserted.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../runtime/app.js';
import { ManualClock } from '../../runtime/clock.js';
import { configFromEnv } from '../../runtime/config.js';
import { createAccount, createApiKey } from '../../runtime/domain/accounts.js';
import { startReviewMaintenance, type ReviewMaintenance } from '../../runtime/background/reviews.js';
import { installPolicies } from '../../runtime/seed.js';
import { openServices, type Services } from '../../runtime/services.js';
import { openStore, type Store } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import type { Policy } from '../../compiler/index.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { START } from './helpers/app.js';
import { type EventItem, type ListedItem, callerOf, decide as kitDecide } from '../helpers/kit.js';
import type { JsonObject } from '../helpers/json.js';

interface Node {
  store: Store;
  services: Services;
  app: FastifyInstance;
  clock: ManualClock;
  reviews: ReviewMaintenance;
  call(key: string, options: InjectOptions): Promise<{ statusCode: number; body: JsonObject }>;
}

describe('reviews across two runtimes on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const nodes: Node[] = [];
  let agentKey = '';
  let reviewerKey = '';
  let a: Node;
  let b: Node;
  /** ms from the verdict's request (and from its answer) to the other runtime's answer to the waiting request. */
  const latencies: Array<{ fromVerdictSent: number; fromVerdictAnswered: number }> = [];

  async function startNode(): Promise<Node> {
    const store = await openStore({ databaseUrl: db.url, max: 4 });
    const clock = new ManualClock(START);
    const services = await openServices({ config: configFromEnv({ AUTHZ_KEY_RATE_LIMIT: '1000000' }), store, clock });
    const app = await buildApp(services);
    // The sweep's timer is left long: the test runs it by hand.
    const reviews = await startReviewMaintenance(store, services.approvals, services.reviewWaiters, 600_000);
    const node: Node = {
      store,
      services,
      app,
      clock,
      reviews,
      async call(key, options) {
        const r = await app.inject({
          ...options,
          headers: { authorization: `Bearer ${key}`, ...(options.headers ?? {}) },
        });
        return { statusCode: r.statusCode, body: r.json() as JsonObject };
      },
    };
    nodes.push(node);
    return node;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    const setup = await openStore({ databaseUrl: db.url, max: 1 });
    let accountId = '';
    try {
      await migrate(setup.sql);
      const account = await createAccount(setup.sql, 'main', new Date(START));
      accountId = account.id;
      agentKey = (await createApiKey(setup.sql, accountId, 'test', ['*'], new Date(START))).key;
      reviewerKey = (
        await createApiKey(
          setup.sql,
          accountId,
          'test',
          ['reviews:read', 'reviews:write', 'decisions:read'],
          new Date(START),
        )
      ).key;
    } finally {
      await setup.close();
    }
    a = await startNode();
    b = await startNode();
    const policies = [
      {
        id: 'pol_approve',
        name: 'approve-first',
        state: 'enabled',
        priority: 100,
        effect: 'review',
        actions: ['payments.refund'],
        approval: { required: true, timeout_seconds: 600 },
      },
      {
        id: 'pol_calls',
        name: 'calls-approved',
        state: 'enabled',
        priority: 100,
        effect: 'review',
        actions: ['tools.run'],
        budget: { unit: 'calls', limit: 10, period: 'daily' },
        approval: { required: true, timeout_seconds: 600 },
      },
    ] as Policy[];
    await installPolicies(a.services, accountId, 'test', policies);
  });

  afterAll(async () => {
    for (const n of nodes) {
      await n.reviews.stop();
      await n.app.close();
      await n.services.writer.idle();
      await n.store.close();
    }
    await db?.drop();
    if (latencies.length > 0) {
      const line = (name: string, values: number[]) => {
        const sorted = [...values].sort((x, y) => x - y);
        return `${name}: min ${sorted[0]!.toFixed(1)} ms, p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`;
      };
      console.log(
        `[reviews across processes] ${latencies.length} verdicts; waiter answered, ${line(
          'after the verdict was sent',
          latencies.map((l) => l.fromVerdictSent),
        )}; ` +
          `${line(
            'after the verdict was answered',
            latencies.map((l) => l.fromVerdictAnswered),
          )} (negative: before)`,
      );
    }
  });

  const decide = async (node: Node, action = 'payments.refund') => {
    const d = await kitDecide(callerOf(node.app, agentKey), { agent_id: 'cross-bot', action });
    expect(d.status).toBe('awaiting_approval');
    return d;
  };

  /** Holds GET ?wait=30 on `node` and waits until its waiter is registered; `held` is the answer to come. */
  async function hold(node: Node, id: string) {
    const held = node
      .call(agentKey, { method: 'GET', url: `/v1/decisions/${id}?wait=30` })
      .then((r) => ({ ...r, at: performance.now() }));
    await expect.poll(() => node.services.reviewWaiters.size, { timeout: 5_000 }).toBe(1);
    // Wrapped: an async function returning the promise itself would wait for it.
    return { held };
  }

  it('a verdict through A wakes a request waiting on B (approve, then deny)', async () => {
    for (const verdict of ['approve', 'deny', 'approve', 'deny', 'approve'] as const) {
      const d = await decide(a);
      const { held } = await hold(b, d.id);
      const sentAt = performance.now();
      const r = await a.call(reviewerKey, {
        method: 'POST',
        url: `/v1/decisions/${d.id}/review`,
        payload: { verdict, reviewer: 'alice' },
      });
      const reviewedAt = performance.now();
      expect(r.statusCode).toBe(200);
      const answer = await held;
      latencies.push({ fromVerdictSent: answer.at - sentAt, fromVerdictAnswered: answer.at - reviewedAt });
      expect(answer.statusCode).toBe(200);
      expect(answer.body).toMatchObject(
        verdict === 'approve'
          ? { status: 'pending', review: { status: 'approved' } }
          : { status: 'denied', reason: 'review.denied' },
      );
      expect(b.services.reviewWaiters.size).toBe(0);
    }
    // And the other way round: waiting on A, the verdict through B.
    const d = await decide(b);
    const { held } = await hold(a, d.id);
    const sentAt = performance.now();
    expect(
      (
        await b.call(reviewerKey, {
          method: 'POST',
          url: `/v1/decisions/${d.id}/review`,
          payload: { verdict: 'approve', reviewer: 'bob' },
        })
      ).statusCode,
    ).toBe(200);
    const reviewedAt = performance.now();
    const answer = await held;
    latencies.push({ fromVerdictSent: answer.at - sentAt, fromVerdictAnswered: answer.at - reviewedAt });
    expect(answer.body).toMatchObject({ status: 'pending' });
  });

  it("A's sweep timing an approval out wakes the request waiting on B", async () => {
    const d = await decide(a);
    const { held } = await hold(b, d.id);
    a.clock.advance(600);
    b.clock.advance(600);
    expect(await a.reviews.runOnce()).toBeGreaterThanOrEqual(1);
    const answer = await held;
    expect(answer.body).toMatchObject({ status: 'denied', reason: 'review.timeout' });
  });

  it('two reviewers racing on A and B: one wins, the other is already_reviewed, the call counted once', async () => {
    for (let i = 0; i < 5; i++) {
      const d = await decide(i % 2 === 0 ? a : b, 'tools.run');
      const [x, y] = await Promise.all(
        [a, b].map((node, k) =>
          node.call(reviewerKey, {
            method: 'POST',
            url: `/v1/decisions/${d.id}/review`,
            payload: { verdict: 'approve', reviewer: `r${k}` },
          }),
        ),
      );
      expect([x!.statusCode, y!.statusCode].sort()).toEqual([200, 409]);
      expect([x, y].find((r) => r!.statusCode === 409)!.body.error.code).toBe('decision.already_reviewed');
    }
    const budgets = (await a.call(agentKey, { method: 'GET', url: '/v1/budgets?agent_id=cross-bot' })).body.data;
    expect(budgets.find((u: ListedItem) => u.policy_id === 'pol_calls')).toMatchObject({ consumed: 5, held: 0 });
    const events = (await b.call(agentKey, { method: 'GET', url: '/v1/events?type=decision.reviewed&limit=100' })).body
      .data;
    const calls = events.filter((e: EventItem) => e.data.decision.action === 'tools.run');
    expect(calls).toHaveLength(5);
  });
});
