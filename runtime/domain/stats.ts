/**
 * The dashboard's overview: decisions per minute by effect over the last
 * minutes (grouped in SQL, store/stats.ts), the agents and actions denied most
 * in that window, and the budgets nearest their limits.
 */
import type { Clock } from '../clock.js';
import type { Sql } from '../store/connect.js';
import type { DecisionEffect } from '../store/decisions.js';
import { decisionsPerMinute, topDenied } from '../store/stats.js';
import { decisionIdsBetween } from './decision-id-range.js';
import type { Principal } from '../tenant.js';
import type { BudgetAccount, BudgetService } from './budgets.js';

export type EffectCounts = Record<DecisionEffect, number>;

export interface DecisionStats {
  minutes: number;
  /** Start of the first minute (UTC, whole minute) and the service clock's now. */
  sinceMs: number;
  untilMs: number;
  /** One entry per minute, oldest first, zeros included. */
  perMinute: Array<{ minuteMs: number } & EffectCounts>;
  totals: EffectCounts;
  topDeniedAgents: Array<{ agent_id: string; count: number }>;
  topDeniedActions: Array<{ action: string; count: number }>;
}

const MINUTE = 60_000;
const zero = (): EffectCounts => ({ allow: 0, deny: 0, review: 0 });

export class StatsService {
  constructor(private readonly deps: { sql: Sql; clock: Clock; budgets: BudgetService }) {}

  /**
   * The last `minutes` minutes, the current one included.
   *
   * @example
   * const stats = await statsService.decisions(principal, 60);
   * stats.perMinute.length; // => 60
   */
  async decisions(principal: Principal, minutes: number, top = 5): Promise<DecisionStats> {
    const { sql, clock } = this.deps;
    const untilMs = clock.now();
    const sinceMs = Math.floor(untilMs / MINUTE) * MINUTE - (minutes - 1) * MINUTE;
    // Decisions stamped exactly at `now` count too.
    const end = untilMs + 1;
    const ids = await decisionIdsBetween(sql, sinceMs, end);
    const [counts, agents, actions] = await Promise.all([
      decisionsPerMinute(sql, principal, sinceMs, end, ids),
      topDenied(sql, principal, 'agent_id', sinceMs, end, top, ids),
      topDenied(sql, principal, 'action', sinceMs, end, top, ids),
    ]);
    const perMinute = Array.from({ length: minutes }, (_, i) => ({ minuteMs: sinceMs + i * MINUTE, ...zero() }));
    const totals = zero();
    for (const c of counts) {
      const slot = perMinute[Math.round((c.minute_ms - sinceMs) / MINUTE)];
      if (slot) slot[c.effect] += c.count;
      totals[c.effect] += c.count;
    }
    return {
      minutes,
      sinceMs,
      untilMs,
      perMinute,
      totals,
      topDeniedAgents: agents.map((a) => ({ agent_id: a.key, count: a.count })),
      topDeniedActions: actions.map((a) => ({ action: a.key, count: a.count })),
    };
  }

  /** The budgets of this period nearest their limits ((consumed + held) / limit), nearest first. */
  async budgetsNearestLimit(
    principal: Principal,
    limit: number,
  ): Promise<Array<BudgetAccount & { used_fraction: number }>> {
    const all = await this.deps.budgets.list(principal, { limit: 100_000, startingAfter: null });
    return all.data
      .map((b) => ({ ...b, used_fraction: (b.consumed + b.held) / b.limit }))
      .sort(
        (a, b) =>
          b.used_fraction - a.used_fraction ||
          (a.policy_id < b.policy_id
            ? -1
            : a.policy_id > b.policy_id
              ? 1
              : (a.agent_id ?? '') + (a.session_id ?? a.on_behalf_of ?? '') <
                  (b.agent_id ?? '') + (b.session_id ?? b.on_behalf_of ?? '')
                ? -1
                : 1),
      )
      .slice(0, limit);
  }
}
