/**
 * The idle sweep of sessions (domain/session-labels.ts): every `intervalMs`,
 * sessions without a decision or a label for AUTHZ_SESSION_IDLE_HOURS (service
 * clock) are deleted, labels and all. Readers already treat such a session as
 * ended; the sweep reclaims its rows. Any process may run it: a session being
 * written is skipped (locked) and deleted in a later round.
 */
import type { Clock } from '../clock.js';
import type { Store } from '../store/connect.js';
import { deleteEndedSessions } from '../store/sessions.js';
import { startTask, type Upkeep } from './task.js';

export type SessionMaintenance = Upkeep<number>;

/** Sessions deleted per statement of a round. */
const SWEEP_BATCH = 500;

/**
 * Starts the sweep; `runOnce()` deletes every ended session now and answers how many.
 *
 * @example
 * const sessions = await startSessionMaintenance(store, clock, 24);
 * await sessions.runOnce(); // => 0
 * await sessions.stop();
 */
export async function startSessionMaintenance(
  store: Store,
  clock: Clock,
  idleHours: number,
  intervalMs = 60_000,
  onError: (e: unknown) => void = () => {},
): Promise<SessionMaintenance> {
  const runOnce = async () => {
    let n = 0;
    for (;;) {
      const deleted = await deleteEndedSessions(store.sql, clock.now(), idleHours * 3600, SWEEP_BATCH);
      n += deleted;
      if (deleted < SWEEP_BATCH) return n;
    }
  };
  const task = await startTask(store, { rounds: { run: runOnce, intervalMs }, onError });
  return { runOnce, stop: task.stop };
}
