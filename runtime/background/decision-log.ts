/**
 * The decision log's upkeep, per server process, on the service clock
 * (docs/operations.md#decision-log-retention; docs/operations.md "Decision log
 * retention"):
 *
 * - partitions ahead: today's and the next `aheadDays` days' partitions of
 *   decisions, events and webhook deliveries (with attempts) exist, made at
 *   start and every round. A day without one is not an error: its rows go to
 *   the default partition, and are moved into the day's partition when it is
 *   made (the clock jumped forward, a process was down).
 * - history (docs/history.md#what-is-kept-and-for-how-long): entries past the longest window of
 *   their environment's probes deleted, `trimBatch` rows per statement;
 * - retention (`retentionDays`, null: keep forever): a day's partition is
 *   dropped whole once the day ended `retentionDays` ago, unless it holds a row
 *   still live (store/log-partitions.ts partitionLiveness): then the drop waits
 *   for a later round (rows are not moved). The default partitions, which hold
 *   few rows, are trimmed row by row by the same rule.
 *
 * Every step takes the log's advisory lock (one process at a time; another
 * process's round skips what it finds locked) and waits at most
 * `lockTimeoutMs` for a table lock, so decisions never queue behind it longer.
 */
import type { Clock } from '../clock.js';
import type { Store } from '../store/connect.js';
import {
  createLogPartition,
  DAY_MS,
  dayOf,
  dropLogPartition,
  listLogPartitions,
  LOG_TABLES,
  trimDefaultPartition,
  type Liveness,
  type LogTable,
} from '../store/log-partitions.js';
import { pruneHistory } from '../store/history.js';
import { pruneLeases } from '../store/history-leases.js';

/** A history lease not renewed for this long is deleted (its holders renew them every 30 s while they use them). */
const LEASE_STALE_SECONDS = 600;
import { nextTurn } from '../shared/sliced.js';
import { startTask, type Upkeep } from './task.js';

export interface LogRetentionOptions {
  /** Days kept (whole UTC days, counted from the end of a day); null keeps everything. */
  retentionDays: number | null;
  /** Days after today whose partitions are made ahead (default 2). */
  aheadDays?: number;
  /** Longest wait for a table lock, ms (default 20). */
  lockTimeoutMs?: number;
  /** Rows deleted per statement from a default partition (default 5,000). */
  trimBatch?: number;
}

export interface LogRound {
  created: Array<{ table: LogTable; day: string }>;
  dropped: Array<{ table: LogTable; day: string }>;
  /** Partitions past retention kept this round, and why. */
  kept: Array<{ table: LogTable; day: string; reason: Liveness['reason'] | 'busy' }>;
  /** Rows deleted from the default partitions. */
  trimmed: number;
  /** History entries deleted: past the longest window of their environment's probes (docs/history.md#what-is-kept-and-for-how-long). */
  historyPruned: number;
}

export type LogMaintenance = Upkeep<LogRound>;

/**
 * One round of upkeep at the clock's time: partitions made ahead, old ones dropped.
 *
 * @example
 * const round = await maintainLog(store, clock, { retentionDays: 90 });
 * round.dropped; // [{ table: 'decisions', day: '2026-08-01' }, ...]
 */
export async function maintainLog(
  store: Store,
  clock: Clock,
  options: LogRetentionOptions,
  waits = new Map<string, number>(),
): Promise<LogRound> {
  const aheadDays = options.aheadDays ?? 2;
  const lockTimeoutMs = options.lockTimeoutMs ?? 20;
  const nowMs = clock.now();
  const cutoffMs = options.retentionDays === null ? null : nowMs - options.retentionDays * DAY_MS;
  const round: LogRound = { created: [], dropped: [], kept: [], trimmed: 0, historyPruned: 0 };

  const existing = new Set((await listLogPartitions(store.sql)).map((p) => `${p.table}:${p.day}`));
  const today = Math.floor(nowMs / DAY_MS) * DAY_MS;
  for (let i = 0; i <= aheadDays; i++) {
    const start = today + i * DAY_MS;
    if (cutoffMs !== null && start + DAY_MS <= cutoffMs) continue;
    for (const table of LOG_TABLES) {
      const day = dayOf(start);
      if (existing.has(`${table}:${day}`)) continue;
      if (await createLogPartition(store.sql, table, day, lockTimeoutMs)) round.created.push({ table, day });
    }
  }
  const batch = options.trimBatch ?? 5_000;
  // History entries no window needs any more (their keep_until is never past the retention either).
  for (let n = batch; n === batch;) {
    n = await pruneHistory(store.sql, nowMs, batch);
    round.historyPruned += n;
    if (store.kind === 'embedded') await nextTurn();
  }
  // History leases nobody holds, or whose process stopped renewing them (runtime/history/leases.ts).
  await pruneLeases(store.sql, LEASE_STALE_SECONDS, batch);
  if (cutoffMs === null) return round;

  for (const { table, day } of await listLogPartitions(store.sql)) {
    if (Date.parse(`${day}T00:00:00.000Z`) + DAY_MS > cutoffMs) continue;
    const key = `${table}:${day}`;
    if ((waits.get(key) ?? -Infinity) > nowMs) {
      round.kept.push({ table, day, reason: 'pending_decision' });
      continue;
    }
    const outcome = await dropLogPartition(store.sql, table, day, nowMs, lockTimeoutMs);
    if (outcome.dropped) {
      waits.delete(key);
      round.dropped.push({ table, day });
    } else {
      if (outcome.live?.untilMs != null) waits.set(key, outcome.live.untilMs);
      round.kept.push({ table, day, reason: outcome.busy ? 'busy' : outcome.live!.reason });
    }
    if (store.kind === 'embedded') await nextTurn();
  }

  for (const table of LOG_TABLES) {
    for (let n = batch; n === batch;) {
      n = await trimDefaultPartition(store.sql, table, cutoffMs, nowMs, batch);
      round.trimmed += n;
      if (store.kind === 'embedded') await nextTurn();
    }
  }
  return round;
}

/**
 * Runs {@link maintainLog} now (unless `roundAtStart` is false: tests make their
 * own rounds) and then every `intervalMs`.
 *
 * @example
 * const log = await startLogMaintenance(store, services.clock, { retentionDays: config.retentionDays });
 * // ... on shutdown:
 * await log.stop();
 */
export async function startLogMaintenance(
  store: Store,
  clock: Clock,
  options: LogRetentionOptions,
  intervalMs = 30_000,
  onError: (e: unknown) => void = () => {},
  roundAtStart = true,
): Promise<LogMaintenance> {
  // Partitions whose pending decisions keep them until a known time: not read again before it.
  const waits = new Map<string, number>();
  const runOnce = () => maintainLog(store, clock, options, waits);
  if (roundAtStart) await runOnce().catch(onError);
  const task = await startTask(store, { rounds: { run: runOnce, intervalMs }, onError });
  return { runOnce, stop: task.stop };
}
