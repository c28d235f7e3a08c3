/**
 * Upgrade in place (migration 015, decision log partitions): a store made by the
 * migrations before it (001-014), with decisions (allow, deny, review with a
 * verdict, a held budget, a decision with an id from before time-sortable ids),
 * events, webhook deliveries and attempts, migrates, and every row reads the
 * same through the API afterwards, on both stores.
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { iso } from '../../runtime/clock.js';
import { createAccount } from '../../runtime/domain/accounts.js';
import { maintainLog } from '../../runtime/domain/log-retention.js';
import { openStore } from '../../runtime/store/connect.js';
import { migrate, migrationsDir } from '../../runtime/store/migrate.js';
import { createTestDatabase, STORE_KINDS, type StoreKind, type TestStore } from '../helpers/postgres.js';
import { json, startRuntime, START, type TestRuntime } from './helpers/app.js';

const before015 = mkdtempSync(join(tmpdir(), 'authz-migrations-'));
for (const name of readdirSync(migrationsDir())) if (name < '015') copyFileSync(join(migrationsDir(), name), join(before015, name));
afterAll(() => rmSync(before015, { recursive: true, force: true }));

/**
 * A store of the given kind with the migrations before 015 only, and how to
 * open it again (the upgrade is a restart of a newer build on the same data).
 */
async function storeBefore015(kind: StoreKind): Promise<{ store: TestStore; reopen(): Promise<TestStore>; drop(): Promise<void> }> {
  const target = kind === 'embedded' ? { dataDir: mkdtempSync(join(tmpdir(), 'authz-upgrade-')) } : { databaseUrl: '' };
  const db = kind === 'postgres' ? await createTestDatabase() : null;
  if (db) target.databaseUrl = db.url;
  const open = async () => {
    const store = await openStore({ ...target, max: 4 });
    return Object.assign(store, { dispose: () => store.close() });
  };
  const store = await open();
  await migrate(store.sql, { dir: before015 });
  return {
    store,
    reopen: open,
    async drop() {
      await db?.drop();
      if ('dataDir' in target && target.dataDir) rmSync(target.dataDir, { recursive: true, force: true });
    },
  };
}

describe.each(STORE_KINDS)('upgrade to the partitioned decision log (%s)', (kind) => {
  it('a store with data migrates in place: every decision, event, delivery, attempt, review and budget reads the same', async () => {
    const made0 = await storeBefore015(kind);
    let store = made0.store;
    try {
      expect((await store.sql`select count(*)::int as n from pg_inherits`)[0]!.n).toBe(0);
      await createAccount(store.sql, 'main', new Date(START));
      let rt: TestRuntime = await startRuntime(kind, { store, config: { webhookAllowPrivate: true } });
      await rt.setPolicies([
        { id: 'pol_read', effect: 'allow', actions: ['orders.read'] },
        { id: 'pol_del', effect: 'deny', actions: ['orders.delete'] },
        { id: 'pol_refund', effect: 'review', actions: ['payments.refund'] },
        { id: 'pol_usd', effect: 'allow', actions: ['payments.charge'], budget: { unit: 'USD', limit: 100, period: 'monthly' } },
      ]);
      const hook = json(await rt.call(rt.testKey, { method: 'POST', url: '/v1/webhooks', payload: { url: 'http://127.0.0.1:9/hooks', events: ['*'] } }));
      const decide = async (body: Record<string, unknown>) => json(await rt.call(rt.testKey, { method: 'POST', url: '/v1/decisions', payload: body }));
      const made: string[] = [];
      // Three days of decisions (several partitions after the upgrade).
      for (let d = 0; d < 3; d++) {
        made.push((await decide({ agent_id: 'up-a', action: 'orders.read', session_id: `s${d}` })).id);
        made.push((await decide({ agent_id: 'up-b', action: 'orders.delete' })).id);
        rt.clock.advance(86_400);
      }
      const refund = await decide({ agent_id: 'up-c', action: 'payments.refund' });
      made.push(refund.id);
      // Another key than the one that asked (self-review is refused).
      const reviewer = await rt.keyWith(['reviews:read', 'reviews:write']);
      expect((await rt.call(reviewer, { method: 'POST', url: `/v1/decisions/${refund.id}/review`, payload: { verdict: 'approve', reviewer: 'alice' } })).statusCode).toBe(200);
      const charge = await decide({ agent_id: 'up-d', action: 'payments.charge', amount: 40 });
      made.push(charge.id);
      // A decision stored before ids sorted by time (migration 008): 24 random characters.
      await rt.store.sql`
        insert into decisions (account_id, environment, id, agent_id, action, effect, reason, policy_id, matched_policy_ids, warnings, status, evaluated_at, expires_at, ttl_seconds)
        values (${rt.accountId}, 'test', 'dec_q9ZLegacyIdOf24RandomX', 'up-a', 'orders.read', 'allow', 'policy.matched', 'pol_read', '{pol_read}', '[]', 'pending',
                ${new Date(START - 3_600_000)}, ${new Date(START - 3_300_000)}, 300)`;
      made.push('dec_q9ZLegacyIdOf24RandomX');
      // One attempt per delivery, as the dispatcher records them.
      await rt.store.sql`insert into webhook_attempts (delivery_id, attempt, started_at, status_code, error, duration_ms, next_attempt_at)
                         select id, 1, created_at, 500, null, 12, created_at + interval '1 minute' from webhook_deliveries`;
      await rt.store.sql`update webhook_deliveries set attempts = 1`;

      const step = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
        const out = await f();
        if (process.env.UPGRADE_TRACE) console.log(name);
        return out;
      };
      const read = async () => ({
        decisions: await step('get', () => Promise.all(made.map((id) => rt.getOk(`/v1/decisions/${id}`)))),
        byAgent: (await step('agent', () => rt.getOk('/v1/decisions?agent_id=up-a&limit=100'))).data,
        list: (await step('list', () => rt.getOk('/v1/decisions?limit=100'))).data,
        events: (await step('events', () => rt.getOk('/v1/events?limit=100'))).data,
        deliveries: (await step('deliveries', () => rt.getOk(`/v1/webhooks/${hook.id}/deliveries?limit=100`))).data,
        reviews: (await step('reviews', () => rt.getOk('/v1/reviews?status=approved'))).data,
        budgets: (await step('budgets', () => rt.getOk('/v1/budgets?agent_id=up-d'))).data,
      });
      const before = await read();
      expect(before.decisions).toHaveLength(made.length);
      expect(before.byAgent).toHaveLength(4);
      expect(before.events.length).toBeGreaterThanOrEqual(made.length - 1);
      expect(before.deliveries.length).toBeGreaterThanOrEqual(made.length - 1);
      expect(before.deliveries[0].attempts).toHaveLength(1);
      expect(before.reviews).toHaveLength(1);
      expect(before.budgets).toEqual([expect.objectContaining({ held: 40 })]);
      const now = rt.clock.now();
      await rt.close();
      await store.close();

      store = await made0.reopen();
      expect(await migrate(store.sql)).toEqual(['015_log_partitions.sql']);
      rt = await startRuntime(kind, { store, config: { webhookAllowPrivate: true } });
      rt.clock.set(now);
      const after = await read();
      expect(after).toEqual(before);
      // The export (new with this code) answers each decision as GET did before the upgrade, the legacy one included.
      rt.clock.advance(1);
      const exported = (await rt.call(rt.testKey, { method: 'GET', url: `/v1/decisions/export?since=${iso(START - 86_400_000)}` })).body;
      const lines = exported.trimEnd().split('\n').map((l) => JSON.parse(l) as { id: string });
      expect(new Set(lines.map((l) => l.id))).toEqual(new Set(made));
      for (const line of lines) expect(line).toEqual(before.decisions.find((d) => d.id === line.id));
      // The rows sit in their days' partitions; the legacy one in the default partition.
      const placed = await rt.store.sql<Array<{ p: string; n: number }>>`
        select tableoid::regclass::text as p, count(*)::int as n from decisions group by 1 order by 1`;
      expect(placed.map((r) => r.p)).toEqual(expect.arrayContaining(['decisions_default', 'decisions_p20261121', 'decisions_p20261122', 'decisions_p20261123']));
      expect((await rt.store.sql`select tableoid::regclass::text as p from decisions where id = 'dec_q9ZLegacyIdOf24RandomX'`)[0]!.p).toBe('decisions_default');
      // New decisions, events and deliveries still go in; a round of upkeep changes nothing that is read.
      expect((await decide({ agent_id: 'up-a', action: 'orders.read' })).effect).toBe('allow');
      await maintainLog(rt.store, rt.clock, { retentionDays: 90 });
      expect((await rt.getOk(`/v1/decisions/${made[0]}`)).id).toBe(made[0]);
      expect((await rt.getOk('/v1/decisions?agent_id=up-a&limit=100')).data).toHaveLength(5);
      await rt.close();
    } finally {
      await store.close();
      await made0.drop();
    }
  });
});
