/**
 * Background upkeep of budgets, per server process: the sweep that releases
 * fiat holds whose decision expired (they are also released lazily whenever
 * their budget is checked), and keeping the exhausted-agents index complete:
 * loaded from the store at start, told of other processes' exhausted budgets
 * through NOTIFY (PostgreSQL), and reloaded every `intervalMs` (a missed
 * notification, a reconnect).
 */
import type { Environment } from '../tenant.js';
import type { Clock } from '../clock.js';
import { CHANNELS } from '../store/channels.js';
import type { Store } from '../store/connect.js';
import { exhaustedUsage, releaseExpiredHolds, type BudgetUsage } from '../store/limits.js';
import type { Limits } from '../spend-limits/limits.js';
import { startTask, type Upkeep } from './task.js';

export type LimitMaintenance = Upkeep;

export async function startLimitMaintenance(
  store: Store,
  limits: Limits,
  clock: Clock,
  intervalMs = 5_000,
  onError: (e: unknown) => void = () => {},
): Promise<LimitMaintenance> {
  const runOnce = async () => {
    const now = clock.now();
    await releaseExpiredHolds(store.sql, now);
    limits.exhaustedAgents.merge(await exhaustedUsage(store.sql, now));
  };
  await runOnce();
  const task = await startTask(store, {
    listens: [
      {
        channel: CHANNELS.budgets,
        onPayload: (payload) => {
          try {
            const u = JSON.parse(payload) as BudgetUsage & { account_id: string; environment: Environment };
            limits.exhaustedAgents.note(u.account_id, u.environment, u);
          } catch (e) {
            onError(e);
          }
        },
      },
    ],
    rounds: { run: runOnce, intervalMs },
    onError,
  });
  return { runOnce, stop: task.stop };
}
