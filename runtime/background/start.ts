/**
 * A server process's background work, started in one place: by `authz serve`
 * (every role but the dispatcher) and by the tests' runtime helper
 * (test/runtime/helpers/app.ts), so tests run what serve runs.
 *
 * - policy refresh (policy-refresh.ts): policy sets and agent statuses changed
 *   by other processes (LISTEN, and a version check every `policyRefreshMs`);
 * - key replication (key-replication.ts): API key revocations and signing-key
 *   rotations by other processes (LISTEN only);
 * - budget upkeep (budgets.ts): expired holds released, the exhausted-budgets
 *   index reloaded every `budgetSweepMs` (and told by LISTEN);
 * - review sweep (reviews.ts): approvals whose time is up denied every
 *   `reviewSweepMs`; waiters woken by LISTEN;
 * - decision log upkeep (decision-log.ts): partitions made ahead and retention,
 *   at start and every `logUpkeepMs`;
 * - session sweep (sessions.ts): sessions idle for AUTHZ_SESSION_IDLE_HOURS
 *   deleted, labels and all, every `sessionSweepMs`.
 *
 * The webhook dispatcher is not here: it runs by role (`services.dispatcher`).
 */
import type { Services } from '../services.js';
import { startLimitMaintenance, type LimitMaintenance } from './budgets.js';
import { startLogMaintenance, type LogMaintenance } from './decision-log.js';
import { startKeyReplication } from './key-replication.js';
import { startReplication, type Replication } from './policy-refresh.js';
import { startReviewMaintenance, type ReviewMaintenance } from './reviews.js';
import { startSessionMaintenance, type SessionMaintenance } from './sessions.js';

export interface BackgroundOptions {
  /** Policy-set version check, ms (default 1,000). */
  policyRefreshMs?: number;
  /** Budget sweep and exhausted-budgets reload, ms (default `AUTHZ_BUDGET_SWEEP_SECONDS`). */
  budgetSweepMs?: number;
  /** Approval timeout sweep, ms (default 5,000). */
  reviewSweepMs?: number;
  /** Decision log partitions and retention, ms (default 30,000). */
  logUpkeepMs?: number;
  /** Idle sessions deleted, ms (default 60,000). */
  sessionSweepMs?: number;
  /** The decision log's first round at start (default true; tests make their own rounds). */
  logRoundAtStart?: boolean;
  /** A failed round or notification, named by its task ('budget maintenance', ...). */
  onError?: (task: string, e: unknown) => void;
}

/** The started tasks; `stop()` ends them all, waiting for rounds under way. */
export interface Background {
  policies: Replication;
  keys: Replication;
  budgets: LimitMaintenance;
  reviews: ReviewMaintenance;
  log: LogMaintenance;
  sessions: SessionMaintenance;
  stop(): Promise<void>;
}

/**
 * Starts every background task of this process.
 *
 * @example
 * const background = await startBackground(services, { onError: (task, err) => log.error({ err }, task) });
 * // ... on shutdown:
 * await background.stop();
 */
export async function startBackground(services: Services, options: BackgroundOptions = {}): Promise<Background> {
  const { store, clock, config } = services;
  const onError = (task: string) => (e: unknown) => options.onError?.(task, e);
  const policies = await startReplication(
    store,
    services.policySets,
    services.agentDirectory,
    options.policyRefreshMs ?? 1000,
    onError('replication'),
  );
  const keys = await startKeyReplication(
    store,
    { apiKeys: services.apiKeys, ring: services.ring },
    onError('key replication'),
  );
  const budgets = await startLimitMaintenance(
    store,
    services.limits,
    clock,
    options.budgetSweepMs ?? config.budgetSweepSeconds * 1000,
    onError('budget maintenance'),
  );
  const reviews = await startReviewMaintenance(
    store,
    services.approvals,
    services.reviewWaiters,
    options.reviewSweepMs ?? 5000,
    onError('review maintenance'),
  );
  // Partitions made ahead and retention (one process at a time does each step).
  const log = await startLogMaintenance(
    store,
    clock,
    { retentionDays: config.retentionDays },
    options.logUpkeepMs ?? 30_000,
    onError('decision log upkeep'),
    options.logRoundAtStart ?? true,
  );
  const sessions = await startSessionMaintenance(
    store,
    clock,
    config.sessionIdleHours,
    options.sessionSweepMs ?? 60_000,
    onError('session sweep'),
  );
  const tasks = [policies, keys, budgets, reviews, log, sessions];
  return {
    policies,
    keys,
    budgets,
    reviews,
    log,
    sessions,
    async stop() {
      for (const task of tasks) await task.stop();
    },
  };
}
