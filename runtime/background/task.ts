/**
 * The one shape of a background task (the modules beside this one): its
 * LISTENs, set up on PostgreSQL only (the embedded store has none and serves
 * one process), and a round every `intervalMs`, one at a time (a tick while a
 * round runs is skipped), a failed round going to `onError`; `stop()` ends the
 * rounds, waiting for the one under way, then
 * the LISTENs. The timer does not keep the process alive. A round at start,
 * when a task makes one, is the task's own: it decides whether its failure
 * fails the start.
 */
import { listen, type Channel } from '../store/channels.js';
import type { Store } from '../store/connect.js';

/** A started background task: `stop()` ends it, waiting for its round under way. */
export interface Stoppable {
  stop(): Promise<void>;
}

/** A background task with a round: one round now (tests; the timer does the same), and stopping it. */
export interface Upkeep<Round = void> extends Stoppable {
  runOnce(): Promise<Round>;
}

/** A LISTEN of a task: what a payload does, and what each (re)established LISTEN does (after a reconnect, notifications were missed). */
export interface Listening {
  channel: Channel;
  onPayload: (payload: string) => void;
  onListen?: () => void;
}

export interface TaskSpec {
  /** Set up in this order, if the store supports LISTEN; a failure fails the start. */
  listens?: Listening[];
  /** The work started every `intervalMs` (none: the task only listens). */
  rounds?: { run: () => Promise<unknown>; intervalMs: number };
  /** A failed round (and whatever the task's own handlers report). */
  onError: (e: unknown) => void;
}

/**
 * Starts a task's LISTENs, then its rounds.
 *
 * @example
 * const budgets = await startTask(store, {
 *   listens: [{ channel: CHANNELS.budgets, onPayload: (usage) => noteExhausted(JSON.parse(usage)) }],
 *   rounds: { run: () => releaseExpiredHolds(store.sql, clock.now()), intervalMs: 5_000 },
 *   onError: (err) => log.error({ err }, 'budget maintenance'),
 * });
 * // ... on shutdown:
 * await budgets.stop();
 */
export async function startTask(store: Store, spec: TaskSpec): Promise<Stoppable> {
  const listeners: Array<{ unlisten(): Promise<void> }> = [];
  if (store.supportsListen) {
    for (const l of spec.listens ?? []) listeners.push(await listen(store.sql, l.channel, l.onPayload, l.onListen));
  }
  const rounds = spec.rounds ? runPeriodically(spec.rounds.run, spec.rounds.intervalMs, spec.onError) : null;
  return {
    async stop() {
      await rounds?.stop();
      for (const l of listeners) await l.unlisten().catch(() => {});
    },
  };
}

/** `round` every `intervalMs`, one at a time (a tick during a round is skipped); `stop()` clears the timer and waits for the round under way. */
function runPeriodically(round: () => Promise<unknown>, intervalMs: number, onError: (e: unknown) => void): Stoppable {
  let running = true;
  let busy = false;
  let inFlight: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    if (!running || busy) return;
    busy = true;
    inFlight = round()
      .catch(onError)
      .finally(() => (busy = false));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      running = false;
      clearInterval(timer);
      await inFlight;
    },
  };
}
