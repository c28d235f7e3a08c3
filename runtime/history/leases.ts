/**
 * History leases (docs/history.md#leases, migration 026): this process holds
 * the lease of a scope key, keeps that key's entries in memory, and decides
 * the history of the decisions that read or leave entries only under keys it
 * holds from that memory, writing each entry with its decision
 * (functions/authz_write_leased.sql) instead of through the limits gate.
 *
 * Exact across processes: the memory is the store's history of the key from
 * the moment the lease is taken (read under the key's lock), this process is
 * the only one writing the key's entries while its epoch stands, and every
 * other change to the key (another process's gate, a confirm, a review's
 * denial, another process taking the lease) moves the epoch, so the writes
 * decided from the old memory fail and are decided again through the gate.
 * Within the process, reading the memory, evaluating and recording the entry
 * happen in one synchronous step (no other decision runs in between). A
 * decision is never stored without the entries it was decided from: its write
 * names the entries of its keys whose writes were still pending (`after`) and
 * fails unless they are stored by then (the keys are locked exclusively, so a
 * write waits for an earlier one of the same keys to commit); a failed write
 * drops the memory of its keys, and the writes queued behind it that were
 * decided from that memory are not sent (`valid`).
 */
import { randomUUID } from 'node:crypto';
import { actionPatternMatches, jsonEqual } from '../../compiler/index.js';
import type { Sql } from '../store/connect.js';
import { releaseLeases, renewLeases, takeLease, type HeldLease, type LeasedEntry } from '../store/history-leases.js';
import type { HistoryCheck, HistoryRecord } from '../store/history.js';
import type { Environment, Tenant } from '../tenant.js';
import { sumDecimals } from './decimal.js';
import { entryFor, lockTarget, type HistoryPlan } from './plan.js';

export interface LeaseOptions {
  /** Entries one key may have and still be held (a busier key goes through the gate). */
  maxEntries: number;
  /** Keys held at once. */
  maxKeys: number;
  /** After a lease of a key ended, ms before this process takes it again (the gate decides it meanwhile). */
  cooldownMs: number;
  /** A held key not used for this long is let go (ms). */
  idleMs: number;
  /** How often held leases are renewed, idle ones let go and old entries dropped (ms). */
  upkeepMs: number;
}

export const LEASE_DEFAULTS: LeaseOptions = {
  maxEntries: 1000,
  maxKeys: 20_000,
  cooldownMs: 10_000,
  idleMs: 300_000,
  upkeepMs: 30_000,
};

/** A key this process holds: its epoch and entries (those whose scopes include the key's). */
interface Held {
  lockKey: string;
  epoch: string;
  entries: LeasedEntry[];
  /** Its entries recorded in memory whose writes are not stored yet (decision ids). */
  pending: Set<string>;
  /** performance.now() of its last use. */
  usedAt: number;
}

/** A history entry as authz_write_leased inserts it: the limits gate's record, with its decision. */
export type LeasedEntryRow = HistoryRecord & { account_id: string; environment: Environment; decision_id: string };

/** What a decision decided from leases carries to its write. */
export interface LeasedWrite {
  /** Its entry (null: no function sees it). */
  entry: LeasedEntryRow | null;
  /** Every lease it was decided from, at its epoch. */
  fences: HeldLease[];
  /** The entries it was decided from whose writes were not stored yet: its write fails unless they are stored by then. */
  after: Array<{ account_id: string; environment: Environment; decision_id: string }>;
  /** Whether the memory it was decided from is still this process's (else it is not sent). */
  valid(): boolean;
  /** Its write failed: the memory of its keys is dropped. */
  failed(): void;
  /** Its write is stored: its entry is no longer pending. */
  stored(): void;
}

/**
 * A check's value over a key's entries at `atMs`, as authz_history_value computes it from the store.
 *
 * @example
 * leasedValue(entries, { scope: 'session', key: 'run-1', actions: ['payments.refund'], window_s: 3600, measure: 'count', match: {} }, Date.now());
 */
export function leasedValue(entries: readonly LeasedEntry[], c: HistoryCheck, atMs: number): number {
  const since = atMs - c.window_s * 1000;
  const wanted = c.measure === 'denied' ? 'denied' : 'counted';
  const match = Object.entries(c.match);
  // Named actions (no `*`, the common case): string equality, no pattern parsing per entry.
  const named = c.actions.every((p) => !p.includes('*'));
  let count = 0;
  const amounts: string[] = [];
  for (const e of entries) {
    if (e.kind !== wanted || e.evaluated_at_ms < since || e.keep_until_ms < atMs) continue;
    if (!(named ? c.actions.includes(e.action) : c.actions.some((p) => actionPatternMatches(p, e.action)))) continue;
    if (!match.every(([f, v]) => Object.hasOwn(e.match_values, f) && jsonEqual(e.match_values[f], v))) continue;
    if (c.measure === 'sum') {
      const amount = e.confirmed_amount ?? e.amount;
      if (amount !== null) amounts.push(amount);
    } else count++;
  }
  return c.measure === 'sum' ? sumDecimals(amounts) : count;
}

export class HistoryLeases {
  /** This process's name in history_leases.holder. */
  readonly holder = `proc_${randomUUID()}`;
  private readonly held = new Map<string, Held>();
  private readonly taking = new Map<string, Promise<Held | null>>();
  /** Key -> performance.now() before which it is not taken again. */
  private readonly cooling = new Map<string, number>();
  private lastUpkeep = performance.now();
  private upkeeping = false;

  constructor(
    private readonly sql: Sql,
    private readonly options: LeaseOptions = LEASE_DEFAULTS,
  ) {}

  /** How many keys this process holds. */
  get size(): number {
    return this.held.size;
  }

  /**
   * Whether this process holds (after taking, when it can) the lease of every
   * scope key of the plan; false sends the decision through the gate.
   */
  hold(plan: HistoryPlan, nowMs: number): boolean | Promise<boolean> {
    this.maybeUpkeep(nowMs);
    if (plan.locks.length === 0) return false;
    // Every key held (the common case): no promise.
    if (plan.locks.every((k) => this.held.has(k))) return true;
    return this.takeAll(plan, nowMs);
  }

  private async takeAll(plan: HistoryPlan, nowMs: number): Promise<boolean> {
    for (const key of plan.locks) {
      if (this.held.has(key)) continue;
      const until = this.cooling.get(key);
      if (until !== undefined) {
        if (performance.now() < until) return false;
        this.cooling.delete(key);
      }
      if (this.held.size + this.taking.size >= this.options.maxKeys && !this.taking.has(key)) return false;
      let taking = this.taking.get(key);
      if (!taking) {
        taking = this.take(key, nowMs).finally(() => this.taking.delete(key));
        this.taking.set(key, taking);
      }
      if ((await taking) === null) return false;
    }
    return plan.locks.every((k) => this.held.has(k));
  }

  private async take(lockKey: string, nowMs: number): Promise<Held | null> {
    const lease = await takeLease(this.sql, this.holder, lockTarget(lockKey), nowMs, this.options.maxEntries);
    if (lease === null) {
      this.cool(lockKey);
      return null;
    }
    const held: Held = {
      lockKey,
      epoch: lease.epoch,
      entries: lease.entries,
      pending: new Set(),
      usedAt: performance.now(),
    };
    this.held.set(lockKey, held);
    return held;
  }

  /** The plan's values at `atMs` from memory, in its order (a missing MATCH field: 0); null unless every key is held. Synchronous. */
  values(plan: HistoryPlan, atMs: number): number[] | null {
    if (!plan.locks.every((k) => this.held.has(k))) return null;
    return plan.checks.map((c, i) =>
      c === null ? 0 : leasedValue(this.held.get(plan.checkKeys[i]!)!.entries, c, atMs),
    );
  }

  /**
   * Records the decision's entry in the memory of the keys that see it and
   * returns what its write carries. Call in the same synchronous step as
   * {@link values} (every key held).
   */
  record(plan: HistoryPlan, tenant: Tenant, decisionId: string, kind: 'counted' | 'denied'): LeasedWrite {
    const now = performance.now();
    const helds = plan.locks.map((k) => this.held.get(k)!);
    const after = new Set<string>();
    for (const h of helds) {
      h.usedAt = now;
      for (const id of h.pending) after.add(id);
    }
    const record = entryFor(plan, kind);
    const entry: LeasedEntryRow | null = record && {
      ...record,
      account_id: tenant.accountId,
      environment: tenant.environment,
      decision_id: decisionId,
    };
    if (record !== null) {
      const remembered: LeasedEntry = {
        decision_id: decisionId,
        action: record.action,
        kind,
        amount: record.amount === null ? null : JSON.stringify(record.amount),
        confirmed_amount: null,
        match_values: record.match_values,
        evaluated_at_ms: record.evaluated_at_ms,
        keep_until_ms: record.keep_until_ms,
      };
      for (const key of plan.entryKeys) {
        const seeing = this.held.get(key)!;
        seeing.entries.push(remembered);
        seeing.pending.add(decisionId);
      }
    }
    return {
      entry,
      fences: helds.map((h) => ({ lock_key: h.lockKey, epoch: h.epoch })),
      after: [...after].map((id) => ({
        account_id: tenant.accountId,
        environment: tenant.environment,
        decision_id: id,
      })),
      valid: () => helds.every((h) => this.held.get(h.lockKey) === h),
      failed: () => this.drop(helds.map((h) => h.lockKey)),
      stored: () => {
        for (const h of helds) h.pending.delete(decisionId);
      },
    };
  }

  /** The gate is about to decide these keys (it ends their leases in the store): their memory is dropped. */
  yieldTo(plan: HistoryPlan): void {
    this.drop(plan.locks.filter((k) => this.held.has(k)));
  }

  /** Forgets these keys, which are not taken again for a while. */
  drop(keys: readonly string[]): void {
    for (const k of keys) {
      this.held.delete(k);
      this.cool(k);
    }
  }

  private cool(key: string): void {
    this.cooling.set(key, performance.now() + this.options.cooldownMs);
  }

  private maybeUpkeep(nowMs: number): void {
    if (this.upkeeping || performance.now() - this.lastUpkeep < this.options.upkeepMs) return;
    this.upkeeping = true;
    this.upkeep(nowMs)
      .catch(() => {
        // The store unavailable: the next upkeep tries again; the writes' epochs keep the memory honest meanwhile.
      })
      .finally(() => {
        this.upkeeping = false;
        this.lastUpkeep = performance.now();
      });
  }

  /**
   * Renews the held leases (those another process or the gate ended are
   * dropped), lets go of idle ones and of keys grown past `maxEntries`, drops
   * entries past their keep_until, and forgets old cooldowns.
   */
  async upkeep(nowMs: number): Promise<void> {
    const now = performance.now();
    for (const [k, until] of this.cooling) if (until <= now) this.cooling.delete(k);
    const idle: Held[] = [];
    const kept: Held[] = [];
    for (const h of this.held.values()) {
      h.entries = h.entries.filter((e) => e.keep_until_ms >= nowMs);
      if (now - h.usedAt > this.options.idleMs || h.entries.length > this.options.maxEntries) idle.push(h);
      else kept.push(h);
    }
    for (const h of idle) this.held.delete(h.lockKey);
    await releaseLeases(
      this.sql,
      this.holder,
      idle.map((h) => ({ lock_key: h.lockKey, epoch: h.epoch })),
    );
    const renewed = await renewLeases(
      this.sql,
      this.holder,
      kept.map((h) => ({ lock_key: h.lockKey, epoch: h.epoch })),
    );
    for (const h of kept) if (!renewed.has(h.lockKey) && this.held.get(h.lockKey) === h) this.held.delete(h.lockKey);
  }
}
