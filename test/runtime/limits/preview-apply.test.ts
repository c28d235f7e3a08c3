/**
 * A preview answers what the decision gets, as a property on both stores: the
 * budget rules are stated once in the store (runtime/store/functions/:
 * authz_budget_exceeds.sql, the check; authz_budget_take.sql and
 * authz_budget_held.sql, calls consumed and other units held;
 * authz_hold_expired.sql, when a hold stops counting) and both
 * authz_preview_limits and authz_apply_limits use them.
 *
 * For random budgets (calls, tokens and USD; agent, session and user scopes;
 * a limit that changes between requests, as a policy edit does; thresholds) and
 * random sequences of requests (costs in quarters, decision lifetimes, a rate
 * limiter, the clock moving, confirms in full or in part, rejects, the expiry
 * sweep), each request is previewed and then applied alone on the same state:
 * the outcome and every usage row it names must be equal. GET
 * /v1/budgets/remaining's reading (usageOfKeys) agrees with both: the row a
 * refusal names, and on a pass every row before the decision plus its cost
 * (consumed for calls, held else: compiler isHeldUnit, the TypeScript statement
 * of the same rule). FC_SEED=<seed> replays a run; the seed is in the failure
 * message.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isHeldUnit } from '../../../compiler/index.js';
import {
  applyLimitBatch,
  previewLimits,
  releaseExpiredHolds,
  resolveHolds,
  usageOfKeys,
  type BudgetCheck,
  type BudgetScope,
  type BudgetUsage,
  type LimitOutcome,
  type LimitRequest,
} from '../../../runtime/store/limits.js';
import { openTestStore, STORE_KINDS, type TestStore } from '../../helpers/postgres.js';

/** One policy's budget; a request picks one of its two limits (the policy as it stood then). */
interface Term {
  unit: 'calls' | 'tokens' | 'USD';
  scope: BudgetScope;
  limits: [number, number];
  threshold: number | null;
}

interface Step {
  /** Seconds the clock moves before the step. */
  advance: number;
  action: 'decide' | 'confirm' | 'reject' | 'sweep';
  agent: number;
  session: number;
  user: number;
  /** Which of the run's terms apply to the request (the first is used when none does). */
  uses: boolean[];
  /** Per term, which of its limits. */
  limitIx: number[];
  /** Per term, the cost of a held unit. */
  costs: number[];
  /** The decision's lifetime (its holds expire with it). */
  ttlS: number;
  rate: boolean;
  /** Confirm in part (half the held amount, per unit) rather than in full. */
  part: boolean;
  /** Which open decision a confirm or reject names. */
  pick: number;
}

/** Multiples of 0.25: sums stay exact in binary floating point, so the test's arithmetic is exact too. */
const quarters = (max: number) => fc.integer({ min: 0, max: max * 4 }).map((n) => n / 4);

const term = fc.record<Term>({
  unit: fc.constantFrom('calls', 'tokens', 'USD'),
  scope: fc.constantFrom('agent', 'session', 'user'),
  limits: fc.tuple(quarters(12), quarters(12)),
  threshold: fc.option(fc.constantFrom(0.5, 0.8), { nil: null }),
});

const MAX_TERMS = 4;
const step = fc.record<Step>({
  advance: fc.constantFrom(0, 0, 1, 5, 30, 120),
  action: fc.constantFrom('decide', 'decide', 'decide', 'decide', 'decide', 'confirm', 'reject', 'sweep'),
  agent: fc.nat(2),
  session: fc.nat(1),
  user: fc.nat(1),
  uses: fc.array(fc.boolean(), { minLength: MAX_TERMS, maxLength: MAX_TERMS }),
  limitIx: fc.array(fc.nat(1), { minLength: MAX_TERMS, maxLength: MAX_TERMS }),
  costs: fc.array(
    quarters(6).filter((c) => c > 0),
    { minLength: MAX_TERMS, maxLength: MAX_TERMS },
  ),
  ttlS: fc.constantFrom(2, 30, 600),
  rate: fc.boolean(),
  part: fc.boolean(),
  pick: fc.nat(),
});

const START = Date.parse('2026-11-21T10:00:00.000Z');
const PERIOD = { period: 'day', period_start: '2026-11-21T00:00:00.000Z', period_end: '2026-11-22T00:00:00.000Z' };

/** The row key of a budget by its scope (runtime/spend-limits/budget-keys.ts). */
function key(scope: BudgetScope, agentId: string, sessionId: string, user: string) {
  if (scope === 'agent') return { agent_id: agentId, session_id: '', on_behalf_of: '' };
  if (scope === 'session') return { agent_id: agentId, session_id: sessionId, on_behalf_of: '' };
  return { agent_id: '', session_id: '', on_behalf_of: user };
}

const sameRow = (
  a: { policy_id: string; agent_id: string | null; session_id: string | null; on_behalf_of: string | null },
  b: BudgetCheck,
) =>
  a.policy_id === b.policy_id &&
  (a.agent_id ?? '') === b.agent_id &&
  (a.session_id ?? '') === b.session_id &&
  (a.on_behalf_of ?? '') === b.on_behalf_of;

/** The answer without the history values (apply lists them, empty here; preview reads no history). */
function withoutHistory(outcome: LimitOutcome): LimitOutcome {
  if (outcome.outcome === 'ok' || outcome.outcome === 'budget_exceeded') {
    const { history: _history, ...rest } = outcome;
    return rest;
  }
  return outcome;
}

describe.each(STORE_KINDS)('preview and apply agree on random budgets and requests (%s)', (kind) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore(kind);
  });
  afterAll(() => store?.dispose());

  it('every request previewed and then applied gets the same outcome and rows; the remaining reading agrees (property; FC_SEED=<seed> replays a run)', async () => {
    const sql = store.sql;
    const seen = { ok: 0, budget_exceeded: 0, rate_limited: 0, expiredHolds: 0, confirms: 0, rejects: 0 };
    let run = 0;

    const property = fc.asyncProperty(
      fc.array(term, { minLength: 1, maxLength: MAX_TERMS }),
      fc.array(step, { minLength: 6, maxLength: 24 }),
      async (terms, steps) => {
        // A fresh account per run (shrinking included): nothing of an earlier run counts.
        const account = `acct_preview_${kind}_${++run}`;
        let now = START;
        /** Decisions whose holds may still be confirmed or rejected: id, expiry, the smallest hold per unit. */
        const open: Array<{ id: string; expiresMs: number; units: Record<string, number> }> = [];
        let seq = 0;
        for (const s of steps) {
          now += s.advance * 1000;
          if (s.action === 'sweep') {
            await releaseExpiredHolds(sql, now, { accountId: account, environment: 'test' });
            continue;
          }
          if (s.action === 'confirm' || s.action === 'reject') {
            const live = open.filter((d) => d.expiresMs > now);
            if (live.length === 0) continue;
            const d = live[s.pick % live.length]!;
            open.splice(open.indexOf(d), 1);
            const amounts = s.part
              ? Object.fromEntries(Object.entries(d.units).map(([unit, held]) => [unit, Math.floor(held * 2) / 4]))
              : null;
            await resolveHolds(
              sql,
              account,
              'test',
              d.id,
              s.action === 'confirm',
              null,
              now,
              s.action === 'confirm' ? amounts : null,
            );
            seen[s.action === 'confirm' ? 'confirms' : 'rejects']++;
            continue;
          }

          const agentId = `bot-${s.agent}`;
          const budgets: BudgetCheck[] = terms
            .map((t, j) => ({ t, j }))
            .filter(({ j }) => s.uses[j] || (j === 0 && !s.uses.slice(0, terms.length).some(Boolean)))
            .map(({ t, j }) => ({
              policy_id: `pol_${j}`,
              unit: t.unit,
              ...PERIOD,
              limit: t.limits[s.limitIx[j]!]!,
              threshold: t.threshold,
              scope: t.scope,
              ...key(t.scope, agentId, `run-${s.session}`, `user-${s.user}`),
              cost: t.unit === 'calls' ? 1 : s.costs[j]!,
            }));
          const request: LimitRequest = {
            account_id: account,
            environment: 'test',
            agent_id: agentId,
            decision_id: `dec_${++seq}`,
            expires_at: new Date(now + s.ttlS * 1000).toISOString(),
            // One limiter of 2 per minute for the whole run.
            rates: s.rate ? [{ key: 'pol_rate', interval_ms: 30_000, window_ms: 60_000 }] : [],
            budgets,
          };
          const [expired] = await sql<Array<{ n: number }>>`
          select count(*)::int as n from budget_holds h where h.account_id = ${account} and h.status = 'held'
            and h.expires_at <= to_timestamp(${now}::float8 / 1000)`;
          if (expired!.n > 0) seen.expiredHolds++;

          const preview = await previewLimits(sql, request, now, null);
          const before = await usageOfKeys(sql, account, 'test', now, budgets);
          const [applied] = await applyLimitBatch(sql, [request], now, null);
          const context = `request ${JSON.stringify(request)} at ${new Date(now).toISOString()}`;
          expect(withoutHistory(applied!), context).toEqual(preview);
          seen[preview.outcome as 'ok' | 'budget_exceeded' | 'rate_limited']++;

          // The remaining reading (GET /v1/budgets/remaining) is of the same rows, expired holds left out alike.
          const rowOf = (b: BudgetCheck) => before.find((r) => sameRow(r, b));
          if (preview.outcome === 'budget_exceeded') {
            const b = budgets.find((x) => sameRow(preview.budget, x))!;
            const row = rowOf(b);
            expect({ consumed: row?.consumed ?? 0, held: row?.held ?? 0 }, context).toEqual({
              consumed: preview.budget.consumed,
              held: preview.budget.held,
            });
            expect(row === undefined ? b.limit : row.remaining, context).toBeLessThan(b.cost);
          }
          if (preview.outcome === 'ok') {
            expect(preview.budgets.length).toBe(budgets.length);
            budgets.forEach((b, k) => {
              const row = rowOf(b);
              const left: Pick<BudgetUsage, 'consumed' | 'held'> = preview.budgets[k]!;
              const consumed = row?.consumed ?? 0;
              const held = row?.held ?? 0;
              expect({ consumed: left.consumed, held: left.held }, context).toEqual(
                isHeldUnit(b.unit) ? { consumed, held: held + b.cost } : { consumed: consumed + b.cost, held },
              );
              if (row) expect(row.remaining, context).toBeGreaterThanOrEqual(b.cost);
            });
            const units: Record<string, number> = {};
            for (const b of budgets)
              if (isHeldUnit(b.unit)) units[b.unit] = Math.min(units[b.unit] ?? Infinity, b.cost);
            if (Object.keys(units).length > 0)
              open.push({ id: request.decision_id!, expiresMs: now + s.ttlS * 1000, units });
          }
        }
      },
    );
    const seed = process.env.FC_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FC_SEED);
    const result = await fc.check(property, { numRuns: 40, seed });
    expect(result.failed, `replay with FC_SEED=${seed}\n${fc.defaultReportMessage(result) ?? ''}`).toBe(false);
    // The runs reached every outcome and every way a hold ends (else they proved little).
    for (const [what, n] of Object.entries(seen)) expect(n, `${what} over the runs (seed ${seed})`).toBeGreaterThan(0);
  }, 240_000);
});
