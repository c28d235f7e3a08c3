/**
 * What `authz replay` reports beyond the list of changes, gathered in bounded
 * memory: counts by transition (from -> to) with a few sample decision ids, and
 * the agents and actions with the most changes.
 */
import type { Outcome, ReplayResult } from './replay.js';

/** Counts per key, at most `cap` distinct keys; later new keys count as `other`. */
export class BoundedCounter {
  private readonly counts = new Map<string, number>();
  other = 0;

  constructor(private readonly cap = 10_000) {}

  add(key: string): void {
    const n = this.counts.get(key);
    if (n !== undefined) this.counts.set(key, n + 1);
    else if (this.counts.size < this.cap) this.counts.set(key, 1);
    else this.other++;
  }

  /** The `n` largest counts, largest first (ties by key). */
  top(n: number): Array<[string, number]> {
    return [...this.counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n);
  }
}

export interface Transition {
  from: Outcome;
  to: Outcome;
  pre_table: boolean;
  count: number;
  /** The first few decision ids. */
  samples: string[];
}

export const SAMPLES_PER_TRANSITION = 5;
const MAX_TRANSITIONS = 1000;

export class ReplaySummary {
  replayed = 0;
  changed = 0;
  /** Decisions denied before the table, replayed through it alone. */
  preTable = 0;
  readonly transitions = new Map<string, Transition>();
  readonly agents = new BoundedCounter();
  readonly actions = new BoundedCounter();

  /** Counts a result that did not change, known only by whether it was pre-table. */
  addUnchanged(preTable: boolean): void {
    this.replayed++;
    if (preTable) this.preTable++;
  }

  add(r: ReplayResult): void {
    this.replayed++;
    if (r.pre_table) this.preTable++;
    if (!r.changed) return;
    this.changed++;
    this.agents.add(r.agent_id);
    this.actions.add(r.action);
    const key = `${r.from.effect}|${r.from.reason}|${r.to.effect}|${r.to.reason}|${r.pre_table}`;
    let t = this.transitions.get(key);
    if (!t) {
      if (this.transitions.size >= MAX_TRANSITIONS) return;
      this.transitions.set(key, (t = { from: r.from, to: r.to, pre_table: r.pre_table, count: 0, samples: [] }));
    }
    t.count++;
    if (t.samples.length < SAMPLES_PER_TRANSITION) t.samples.push(r.decision_id);
  }

  /** Transitions, most frequent first. */
  byCount(): Transition[] {
    return [...this.transitions.values()].sort((a, b) => b.count - a.count);
  }
}

export const outcomeText = (o: Outcome) => `${o.effect} (${o.reason})`;
