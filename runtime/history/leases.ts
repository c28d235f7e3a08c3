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
import type { Sql } from '../store/connect.js';
import { releaseLeases, renewLeases, takeLease, type HeldLease } from '../store/history-leases.js';
import type { HistoryRecord } from '../store/history.js';
import type { Environment, Tenant } from '../tenant.js';
import { EntryLog } from './entry-log.js';
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
  /** Its lease at the epoch it was taken with, as a write names it (shared by every write decided from it). */
  fence: HeldLease;
  /** How far back (s) before it was taken its memory has every entry: the longest window of the plans it was taken for. */
  reach: number;
  entries: EntryLog;
  /** Its entries recorded in memory whose writes are not stored yet (decision ids). */
  pending: Set<string>;
  /** performance.now() of its last use. */
  usedAt: number;
  /** When its entries last changed (HistoryLeases' counter): see {@link HistoryLeases.stamp}. */
  changed: number;
}

/** A leased decision's entry, naming its decision (written as columns of that decision's row: store/decisions.ts). */
export type LeasedEntryRow = HistoryRecord & { account_id: string; environment: Environment; decision_id: string };

/** What a decision decided from leases carries to its write. */
export interface LeasedWrite {
  /** Its entry (null: no function sees it). */
  entry: LeasedEntryRow | null;
  /** Every lease it was decided from, at its epoch. */
  fences: HeldLease[];
  /**
   * Whether its write locks its keys (it leaves an entry, or names one in
   * `after`); else the epochs are only checked: it changes no key
   * (functions/authz_write_leased.sql).
   */
  locks: boolean;
  /** The entries it was decided from whose writes were not stored yet: its write fails unless they are stored by then. */
  after: Array<{ account_id: string; environment: Environment; decision_id: string }>;
  /** Whether the memory it was decided from is still this process's (else it is not sent). */
  valid(): boolean;
  /** Its write failed: the memory of its keys is dropped. */
  failed(): void;
  /** Its write is stored: its entry is no longer pending. */
  stored(): void;
}

const NO_ENTRIES: LeasedWrite['after'] = [];

/** A write decided from held leases (one object, its methods on the prototype: one per leased decision). */
class HeldWrite implements LeasedWrite {
  readonly fences: HeldLease[];

  constructor(
    private readonly leases: HistoryLeases,
    private readonly helds: readonly Held[],
    private readonly decisionId: string,
    readonly entry: LeasedEntryRow | null,
    readonly after: LeasedWrite['after'],
  ) {
    this.fences = helds.map((h) => h.fence);
  }

  get locks(): boolean {
    return this.entry !== null || this.after.length > 0;
  }

  valid(): boolean {
    return this.helds.every((h) => this.leases.holds(h));
  }

  failed(): void {
    this.leases.drop(this.helds.map((h) => h.lockKey));
  }

  stored(): void {
    for (const h of this.helds) h.pending.delete(this.decisionId);
  }
}

export class HistoryLeases {
  /** This process's name in history_leases.holder. */
  readonly holder = `proc_${randomUUID()}`;
  private readonly held = new Map<string, Held>();
  private readonly taking = new Map<string, Promise<Held | null>>();
  /** Key -> performance.now() before which it is not taken again. */
  private readonly cooling = new Map<string, number>();
  private lastUpkeep = performance.now();
  /** Counts changes to the memory (Held.changed). */
  private changes = 0;
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
    // Every key held, its memory reaching back far enough (the common case): no promise.
    if (plan.locks.every((k) => this.covers(k, plan.reach))) return true;
    return this.takeAll(plan, nowMs);
  }

  /**
   * Whether this process holds the key with memory of every entry from `reach` seconds before it took it: a key
   * taken for shorter windows is taken again (its store read went back only as far as they did).
   */
  private covers(key: string, reach: number): boolean {
    const h = this.held.get(key);
    return h !== undefined && h.reach >= reach;
  }

  private async takeAll(plan: HistoryPlan, nowMs: number): Promise<boolean> {
    for (const key of plan.locks) {
      if (this.covers(key, plan.reach)) continue;
      const until = this.cooling.get(key);
      if (until !== undefined) {
        if (performance.now() < until) return false;
        this.cooling.delete(key);
      }
      if (this.held.size + this.taking.size >= this.options.maxKeys && !this.taking.has(key)) return false;
      let taking = this.taking.get(key);
      if (!taking) {
        // Taken again for a longer reach: never shorter than what it had.
        const reach = Math.max(plan.reach, this.held.get(key)?.reach ?? 0);
        taking = this.take(key, nowMs, reach).finally(() => this.taking.delete(key));
        this.taking.set(key, taking);
      }
      if ((await taking) === null) return false;
    }
    return plan.locks.every((k) => this.covers(k, plan.reach));
  }

  private async take(lockKey: string, nowMs: number, reach: number): Promise<Held | null> {
    const lease = await takeLease(this.sql, this.holder, lockTarget(lockKey), nowMs, this.options.maxEntries, reach);
    if (lease === null) {
      this.cool(lockKey);
      return null;
    }
    const held: Held = {
      lockKey,
      fence: { lock_key: lockKey, epoch: lease.epoch },
      reach,
      entries: EntryLog.of(lease.entries),
      pending: new Set(),
      usedAt: performance.now(),
      changed: ++this.changes,
    };
    this.held.set(lockKey, held);
    return held;
  }

  /**
   * A number that changes whenever the memory the plan's values are read from
   * changes (an entry recorded or dropped, a key taken again); null unless every
   * key is held. Equal stamps: {@link values} at the same time gives the same values.
   */
  stamp(plan: HistoryPlan): number | null {
    let stamp = 0;
    for (const k of plan.locks) {
      const h = this.held.get(k);
      if (h === undefined) return null;
      if (h.changed > stamp) stamp = h.changed;
    }
    return stamp;
  }

  /** The plan's values at `atMs` from memory, in its order (a missing MATCH field: 0); null unless every key is held. Synchronous. */
  values(plan: HistoryPlan, atMs: number): number[] | null {
    if (!plan.locks.every((k) => this.held.has(k))) return null;
    return plan.checks.map((c, i) => (c === null ? 0 : this.held.get(plan.checkKeys[i]!)!.entries.value(c, atMs)));
  }

  /**
   * Records the decision's entry in the memory of the keys that see it and
   * returns what its write carries. Call in the same synchronous step as
   * {@link values} (every key held).
   */
  record(plan: HistoryPlan, tenant: Tenant, decisionId: string, kind: 'counted' | 'denied'): LeasedWrite {
    const now = performance.now();
    const helds: Held[] = [];
    let after: Set<string> | null = null;
    for (const k of plan.locks) {
      const h = this.held.get(k)!;
      h.usedAt = now;
      helds.push(h);
      if (h.pending.size > 0) for (const id of h.pending) (after ??= new Set()).add(id);
    }
    const record = entryFor(plan, kind);
    let entry: LeasedEntryRow | null = null;
    if (record !== null) {
      // The record is this decision's own (entryFor makes a new one): completed in place.
      entry = record as LeasedEntryRow;
      entry.account_id = tenant.accountId;
      entry.environment = tenant.environment;
      entry.decision_id = decisionId;
      const remembered = {
        action: record.action,
        kind,
        amount: record.amount === null ? null : JSON.stringify(record.amount),
        confirmed_amount: null,
        match_values: record.match_values,
        evaluated_at_ms: record.evaluated_at_ms,
        keep_until_ms: record.keep_until_ms,
      };
      const changed = ++this.changes;
      for (const key of plan.entryKeys) {
        const seeing = this.held.get(key)!;
        seeing.entries.push(remembered);
        seeing.pending.add(decisionId);
        seeing.changed = changed;
      }
    }
    return new HeldWrite(
      this,
      helds,
      decisionId,
      entry,
      after === null
        ? NO_ENTRIES
        : [...after].map((id) => ({ account_id: tenant.accountId, environment: tenant.environment, decision_id: id })),
    );
  }

  /** Whether `h` is still the memory this process holds of its key (for its writes: {@link HeldWrite}). */
  holds(h: Held): boolean {
    return this.held.get(h.lockKey) === h;
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
      if (h.entries.dropExpired(nowMs)) h.changed = ++this.changes;
      if (now - h.usedAt > this.options.idleMs || h.entries.length > this.options.maxEntries) idle.push(h);
      else kept.push(h);
    }
    for (const h of idle) this.held.delete(h.lockKey);
    await releaseLeases(
      this.sql,
      this.holder,
      idle.map((h) => h.fence),
    );
    const renewed = await renewLeases(
      this.sql,
      this.holder,
      kept.map((h) => h.fence),
    );
    for (const h of kept) if (!renewed.has(h.lockKey) && this.held.get(h.lockKey) === h) this.held.delete(h.lockKey);
  }
}
