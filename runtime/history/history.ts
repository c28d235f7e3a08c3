/**
 * History in the decision path (docs/history.md): the candidate probes'
 * values read before a decision is evaluated (one statement), the gate's
 * re-check of those values and the decision's entry (sent with its limits:
 * runtime/store/functions/authz_apply_limits.sql), and what the answer says
 * (`metadata.history`).
 *
 * Optimistic and exact: the decision is evaluated with the values read; the
 * gate, holding the scope keys' locks, recomputes them and records the entry
 * only when every value still lies in the range that gives the same outcome,
 * else answers the fresh values, with which the decision is evaluated again
 * (see `ranges`).
 */
import { actionPatternMatches, type HistoryValues } from '../../compiler/index.js';
import type { Sql } from '../store/connect.js';
import {
  readHistory,
  type GatedCheck,
  type HistoryCheck,
  type HistoryGate,
  type HistoryReading,
} from '../store/history.js';
import type { Tenant } from '../tenant.js';
import { entryFor, type HistoryPlan } from './plan.js';
import type { HistoryLeases } from './leases.js';

export type { HistoryReading } from '../store/history.js';

/** How far around a count the outcome is re-evaluated for its range (from the second attempt on). */
const RANGE_STEPS = 4;

/** Values remembered per check (the gate's values after this process's last decision of that key), at most this many. */
const GUESSES = 50_000;

export class History {
  /**
   * The value each check had after this process's last decision that read it
   * (the gate's value plus that decision's own entry): the first guess for the
   * next decision of the same key, so a session deciding through one process
   * reads nothing before evaluating. Only a guess: the gate judges it under
   * the locks, and a wrong one (another process decided, the window slid)
   * costs one more gate round trip.
   */
  private readonly guesses = new Map<string, number>();

  /**
   * @param leases The history leases this process may hold (runtime/history/leases.ts); null: every
   * decision's history goes through the limits gate.
   */
  constructor(
    private readonly sql: Sql,
    readonly leases: HistoryLeases | null = null,
  ) {}

  /** The plan's probes' values at `atMs`, in its order (a missing MATCH field: 0, not read); with `guess`, the remembered guesses when every check has one (a decision, whose gate judges them; never a preview). */
  async read(tenant: Tenant, plan: HistoryPlan, atMs: number, guess: boolean): Promise<number[]> {
    const keys = plan.checks.map((c) => (c === null ? null : guessKey(tenant, c)));
    if (guess && keys.every((k) => k === null || this.guesses.has(k)))
      return keys.map((k) => (k === null ? 0 : this.guesses.get(k)!));
    const wanted = plan.checks.flatMap((c) => (c === null ? [] : [c]));
    const read =
      wanted.length === 0 ? [] : await readHistory(this.sql, tenant.accountId, tenant.environment, wanted, atMs);
    let next = 0;
    return plan.checks.map((c) => (c === null ? 0 : read[next++]!));
  }

  /** After the gate recorded a decision: its values (before its entry) plus what its own entry adds, as the next guesses. */
  learn(tenant: Tenant, plan: HistoryPlan, values: readonly number[], kind: 'counted' | 'denied'): void {
    if (this.guesses.size > GUESSES) this.guesses.clear();
    plan.checks.forEach((c, i) => {
      if (c === null) return;
      const seen =
        plan.entry !== null && c.actions.some((pattern) => actionPatternMatches(pattern, plan.entry!.action));
      const own = !seen
        ? 0
        : c.measure === 'sum'
          ? kind === 'counted'
            ? (plan.entry!.amount ?? 0)
            : 0
          : (c.measure === 'denied') === (kind === 'denied')
            ? 1
            : 0;
      this.guesses.set(guessKey(tenant, c), values[i]! + own);
    });
  }
}

const guessKey = (t: Tenant, c: HistoryCheck) => `${t.accountId}\x1f${t.environment}\x1f${JSON.stringify(c)}`;

/**
 * The evaluation's `history` provider over the plan's values, made once per
 * decision and given the values of each evaluation ({@link HistoryInput.use}):
 * the request it is part of is built once, not copied per evaluation.
 *
 * @example
 * const input = new HistoryInput(plan);
 * const request = { ...evaluationInput, history: input.provider };
 * input.use([3]); // evaluate(table, request) now reads 3 for the plan's probe
 */
export class HistoryInput {
  private values: readonly number[] = [];

  constructor(private readonly plan: HistoryPlan) {}

  /** The values the next evaluation reads, in the plan's order. */
  use(values: readonly number[]): void {
    this.values = values;
  }

  /** The provider (a plan has a few probes: a scan, no map). */
  readonly provider: HistoryValues = (probe) => {
    const { probes } = this.plan;
    for (let i = 0; i < probes.length; i++) if (probes[i]!.key === probe.key) return this.values[i]!;
    return null;
  };
}

/**
 * Per probe, the values [lo, hi] for which `outcomeAt` gives the outcome it
 * gives at `values` (hi null: unbounded). `exact`: the values themselves (the
 * first attempt, which is cheapest when nothing else decides meanwhile). A sum,
 * or two or more probes (their effects can combine), are always exact; a single
 * count is widened step by step up to RANGE_STEPS each way.
 */
export function ranges(
  plan: HistoryPlan,
  values: readonly number[],
  outcomeAt: (values: readonly number[]) => string,
  exact: boolean,
): Array<{ lo: number; hi: number | null }> {
  const exactly = values.map((v) => ({ lo: v, hi: v }));
  if (exact || plan.probes.length !== 1 || plan.probes[0]!.measure === 'sum' || plan.checks[0] === null) return exactly;
  const v = values[0]!;
  const base = outcomeAt(values);
  let lo = v;
  while (lo > 0 && v - lo < RANGE_STEPS && outcomeAt([lo - 1]) === base) lo--;
  let hi = v;
  while (hi - v < RANGE_STEPS && outcomeAt([hi + 1]) === base) hi++;
  return [{ lo, hi }];
}

/** What the limits gate carries of this decision's history: its checks with their ranges, its entry, its locks. */
export function historyGate(
  plan: HistoryPlan,
  atMs: number,
  bounds: ReadonlyArray<{ lo: number; hi: number | null }>,
  kind: 'counted' | 'denied',
): HistoryGate {
  const checks: GatedCheck[] = [];
  plan.checks.forEach((c, i) => {
    if (c !== null) checks.push({ ...c, ...bounds[i]! });
  });
  return { at_ms: atMs, checks, record: entryFor(plan, kind), locks: plan.locks };
}

/** The gate's values (of the checks it was sent) back in the plan's order (a missing MATCH field: 0). */
export function gatedValues(plan: HistoryPlan, gated: readonly number[]): number[] {
  let next = 0;
  return plan.checks.map((c) => (c === null ? 0 : Number(gated[next++])));
}

/** The inverse of {@link gatedValues}: the values of the checks sent to the gate (a missing MATCH field's left out), in order. */
export function checkedValues(plan: HistoryPlan, values: readonly number[]): number[] {
  return plan.checks.flatMap((c, i) => (c === null ? [] : [values[i]!]));
}

/** `metadata.history`: each candidate probe and its value; null when none was read. */
export function historyReadings(plan: HistoryPlan | null, values: readonly number[] | null): HistoryReading[] | null {
  if (plan === null || values === null || plan.probes.length === 0) return null;
  return plan.probes.map((p, i) => ({
    fn: p.fn,
    actions: [...p.actions],
    window: p.window,
    scope: p.scope,
    ...(p.match.length > 0 ? { match: [...p.match] } : {}),
    value: values[i]!,
  }));
}
