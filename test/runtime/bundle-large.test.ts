/**
 * Large bundles (docs/api.md#bundles; AUTHZ_MAX_POLICIES, 100,000 by default), on
 * both stores: a push of 100,000 policies is accepted (before: 500, one insert of
 * six parameters per event, past PostgreSQL's 65,535), replaces the set, fires
 * one policy.updated per change, and leaves nothing behind; while it runs, another
 * tenant's decisions keep being answered. A push cut short by a stopped process
 * is finished or undone by BundleService.recover.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileItems, createBundle, readPolicyValue, type Bundle, type Policy } from '../../compiler/index.js';
import { policyEvent } from '../../runtime/events/build.js';
import { beginPush, commitPush, stageEvents, stagePolicies } from '../../runtime/store/bundle-pushes.js';
import { lockPolicySet } from '../../runtime/store/policies.js';
import { STORE_KINDS } from '../helpers/postgres.js';
import { json, startRuntime, type TestRuntime } from './helpers/app.js';
import type { JsonObject } from '../helpers/json.js';
import { postDecision } from '../helpers/kit.js';

const COUNT = 100_000;

/** The `n` of a `select count(*)::int as n` query. */
const count = async (query: PromiseLike<readonly { n: number }[]>) => (await query)[0]!.n;

let built: { text: string; bundle: Bundle } | undefined;
/** 100,000 policies, one per agent prefix, compiled and written as `authz compile` does (once per file). */
function largeBundle(): { text: string; bundle: Bundle } {
  if (!built) {
    const items = [];
    for (let i = 0; i < COUNT; i++) {
      items.push(
        ...readPolicyValue(
          { id: `pol_big${i}`, name: `big-${i}`, effect: 'allow', actions: ['orders.read'], agents: [`big${i}-*`] },
          `/policies/${i}`,
        ).items,
      );
    }
    const compiled = compileItems(items, { lint: false });
    if (!compiled.table) throw new Error(compiled.diagnostics[0]?.message);
    const bundle = createBundle(compiled.table);
    built = { text: JSON.stringify(bundle), bundle };
  }
  return built;
}

describe.each(STORE_KINDS)('bundles of 100,000 policies (%s store)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt?.close());

  it('PUT /v1/bundle takes it, replaces the set, fires one event per change, and another tenant is answered meanwhile', async () => {
    const { text, bundle } = largeBundle();
    expect(text.length).toBeLessThan(64 * 1024 * 1024);
    await rt.setPolicies([{ id: 'pol_before', effect: 'deny', actions: ['orders.read'] }]);
    const other = await rt.call(rt.otherKey, {
      method: 'POST',
      url: '/v1/policies',
      payload: { name: 'other-reads', effect: 'allow', actions: ['orders.read'] },
    });
    expect(other.statusCode, other.body).toBe(201);

    // Another tenant decides, one request after another, for as long as the push runs.
    let pushing = true;
    let answeredDuring = 0;
    let longestGapMs = 0;
    const failures: string[] = [];
    const otherTenant = (async () => {
      let last = performance.now();
      while (pushing) {
        const r = await rt.call(rt.otherKey, {
          method: 'POST',
          url: '/v1/decisions',
          payload: { agent_id: 'other-agent', action: 'orders.read' },
        });
        if (r.statusCode !== 200 || json(r).effect !== 'allow')
          failures.push(`${r.statusCode} ${r.body.slice(0, 200)}`);
        const now = performance.now();
        if (pushing) {
          answeredDuring++;
          longestGapMs = Math.max(longestGapMs, now - last);
        }
        last = now;
      }
    })();

    const put = await rt.call(rt.testKey, {
      method: 'PUT',
      url: '/v1/bundle',
      headers: { 'content-type': 'application/json' },
      payload: text,
    });
    pushing = false;
    await otherTenant;
    expect(put.statusCode, put.body.slice(0, 500)).toBe(200);
    expect(json(put)).toEqual({ object: 'bundle', hash: bundle.hash, policies: COUNT });
    // Kept for the record (docs/budgets-and-limits.md cites no figure from a test): not asserted.
    console.log(
      `[${kind}] another tenant's decisions answered during the push: ${answeredDuring}; longest gap ${Math.round(longestGapMs)} ms`,
    );
    expect(failures).toEqual([]);
    expect(answeredDuring).toBeGreaterThan(0);

    expect(await rt.getOk('/v1/bundle')).toMatchObject({ hash: bundle.hash, policies: COUNT });
    const sql = rt.store.sql;
    const tenant = sql`account_id = ${rt.accountId} and environment = 'test'`;
    const fired = (change: string, idPattern: string) =>
      count(sql`select count(*)::int as n from events
                  where ${tenant} and type = 'policy.updated' and data->>'change' like ${change} and data->'policy'->>'id' like ${idPattern}`);
    expect(await fired('created', 'pol_big%')).toBe(COUNT);
    expect(await fired('deleted', 'pol_before')).toBe(1);
    expect(await fired('%', '%')).toBe(COUNT + 2); // pol_before's own creation, before the push
    // Nothing left behind: one generation of rows, no push under way.
    expect(await count(sql`select count(*)::int as n from policies where ${tenant}`)).toBe(COUNT);
    expect(await count(sql`select count(*)::int as n from bundle_pushes`)).toBe(0);
    expect(await count(sql`select count(*)::int as n from bundle_push_events`)).toBe(0);
    // Decisions follow the new set, here and after a reload from the store.
    const decide = async () => json(await postDecision(rt, { agent_id: 'big77777-bot', action: 'orders.read' }));
    expect(await decide()).toMatchObject({ effect: 'allow', policy_id: 'pol_big77777' });
    rt.services.policySets.clear();
    expect(await decide()).toMatchObject({ effect: 'allow', policy_id: 'pol_big77777' });
  }, 600_000);
});

describe.each(STORE_KINDS)('a bundle push cut short (%s store)', (kind) => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime(kind);
  });
  afterAll(() => rt?.close());

  const policy = (id: string): Policy => ({
    id,
    name: id,
    state: 'enabled',
    priority: 100,
    effect: 'allow',
    actions: ['orders.read'],
    agents: [`${id}-*`],
  });
  const ids = async () =>
    ((await rt.getOk('/v1/policies?limit=100')).data as Array<{ id: string }>).map((p) => p.id).sort();
  const tenant = () => ({ accountId: rt.accountId, environment: 'test' as const });

  it('committed before the stop: recover moves its events and deletes the replaced rows', async () => {
    await rt.setPolicies([{ id: 'pol_old', effect: 'allow', actions: ['orders.read'] }]);
    const sql = rt.store.sql;
    const next = [policy('pol_new_a'), policy('pol_new_b')];
    const now = rt.clock.now();
    // What a push had done when its process stopped: staged, then committed, nothing moved yet.
    const generation = await beginPush(sql, tenant());
    await stagePolicies(sql, tenant(), generation, next, new Date(now));
    const events = [
      ...next.map((p) => policyEvent(tenant(), p, 'created', now)),
      policyEvent(tenant(), policy('pol_old'), 'deleted', now),
    ];
    await stageEvents(sql, generation, 0, events);
    await sql.begin(async (tx) => {
      const locked = await lockPolicySet(tx, rt.accountId, 'test');
      expect(
        await commitPush(tx, tenant(), generation, locked.generation, locked.version + 1, 'sha256:x', new Date(now)),
      ).toBe(true);
    });
    expect(await ids()).toEqual(['pol_new_a', 'pol_new_b']);

    await rt.services.bundles.recover();
    const fired = ((await rt.getOk('/v1/events?type=policy.updated&limit=3')).data as Array<JsonObject>).map(
      (e) => e.id,
    );
    expect(fired.sort()).toEqual(events.map((e) => e.id).sort());
    expect(
      await count(
        sql`select count(*)::int as n from policies where account_id = ${rt.accountId} and environment = 'test'`,
      ),
    ).toBe(2);
    expect(await count(sql`select count(*)::int as n from bundle_pushes`)).toBe(0);
  });

  it('stopped while staging: recover undoes it once it is stale, and the set is unchanged', async () => {
    await rt.setPolicies([{ id: 'pol_kept', effect: 'allow', actions: ['orders.read'] }]);
    const sql = rt.store.sql;
    const generation = await beginPush(sql, tenant());
    await stagePolicies(sql, tenant(), generation, [policy('pol_half')], new Date(rt.clock.now()));
    // A push under way is left alone...
    await rt.services.bundles.recover();
    expect(await count(sql`select count(*)::int as n from policies where generation = ${generation}`)).toBe(1);
    // ...one that stopped an hour ago is undone.
    await sql`update bundle_pushes set started_at = now() - interval '2 hours' where generation = ${generation}`;
    await rt.services.bundles.recover();
    expect(await count(sql`select count(*)::int as n from policies where generation = ${generation}`)).toBe(0);
    expect(await ids()).toEqual(['pol_kept']);
    // It can no longer commit.
    const committed = await sql.begin(async (tx) => {
      const locked = await lockPolicySet(tx, rt.accountId, 'test');
      return commitPush(
        tx,
        tenant(),
        generation,
        locked.generation,
        locked.version + 1,
        'sha256:x',
        new Date(rt.clock.now()),
      );
    });
    expect(committed).toBe(false);
    expect(await ids()).toEqual(['pol_kept']);
  });
});
