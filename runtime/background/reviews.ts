/**
 * Reviews across processes and over time, per server process:
 *
 * - one `LISTEN authz_reviews` (PostgreSQL): a review changed by any process
 *   wakes this process's waiters of that decision (domain/review-waiters.ts);
 *   after a reconnect, when notifications may have been missed, every waiter
 *   wakes and reads once. The embedded store has no LISTEN and serves one
 *   process, which wakes its own waiters when it changes a review.
 * - the sweep: every `intervalMs`, approvals whose time is up (service clock)
 *   are denied (`review.timeout`) and their `decision.reviewed` fired, also when
 *   nobody reads them (a read settles them lazily before that).
 */
import { CHANNELS, parseReviewPayload } from '../store/channels.js';
import type { Store } from '../store/connect.js';
import type { ApprovalTimeouts } from '../domain/decision-ports.js';
import { waiterKey, type ReviewWaiters } from '../domain/review-waiters.js';
import { startTask, type Upkeep } from './task.js';

export type ReviewMaintenance = Upkeep<number>;

/**
 * Starts the LISTEN and the sweep; `stop()` ends both.
 *
 * @example
 * const reviews = await startReviewMaintenance(store, services.approvals, services.reviewWaiters);
 * // ... on shutdown:
 * await reviews.stop();
 */
export async function startReviewMaintenance(
  store: Store,
  approvals: ApprovalTimeouts,
  waiters: ReviewWaiters,
  intervalMs = 5_000,
  onError: (e: unknown) => void = () => {},
): Promise<ReviewMaintenance> {
  let listening = false;
  const runOnce = () => approvals.timeOutOverdue();
  const task = await startTask(store, {
    listens: [
      {
        channel: CHANNELS.reviews,
        onPayload: (payload) => {
          const change = parseReviewPayload(payload);
          if (change) waiters.wake(waiterKey(change));
        },
        onListen: () => {
          // A reconnect: what was sent meanwhile is lost; every waiter reads again.
          if (listening) waiters.wakeAll();
          listening = true;
        },
      },
    ],
    rounds: { run: runOnce, intervalMs },
    onError,
  });
  return { runOnce, stop: task.stop };
}
