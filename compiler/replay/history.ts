/**
 * The history a replay reads (docs/history.md#every-door): the stored decisions
 * of the export, in order, as earlier decisions of the ones after them, each
 * with its stored outcome (allow and review count, deny and reviews denied or
 * timed out are `history.denied`'s) and its confirmed amount. The candidate's
 * probes are computed from them with the reference meaning
 * (../history/reference.ts), so a replayed decision reads the history it had.
 * Memory: the decisions of the candidate's longest window, no more.
 */
import { historyValuesOf, type EarlierDecision } from '../history/reference.js';
import type { HistoryValues } from '../history/probe.js';
import type { EvaluationInput } from '../policy/types.js';

/** The earlier decisions of a replay, as the history its candidate reads (oldest first, bounded by the longest window). */
export class ReplayHistory {
  private log: EarlierDecision[] = [];
  private start = 0;

  /** `keepMs`: the candidate's longest history window. */
  constructor(private readonly keepMs: number) {}

  /**
   * The values of a decision at `atMs`, from the stored decisions added before it.
   *
   * @example
   * ```ts
   * import { ReplayHistory } from 'agent-authz/compiler';
   *
   * const history = new ReplayHistory(3_600_000);
   * history.add({ action: 'x.go', agent_id: 'bot', effect: 'allow', evaluated_at: '2026-11-28T10:00:00.000Z' });
   * const values = history.valuesAt({ agent_id: 'bot', action: 'x.go' }, Date.parse('2026-11-28T10:30:00.000Z'));
   * console.log(typeof values); // => function
   * ```
   */
  valuesAt(request: EvaluationInput, atMs: number): HistoryValues {
    return historyValuesOf(request, this.start === 0 ? this.log : this.log.slice(this.start), atMs);
  }

  /** A stored decision (a line of the export), once it has been replayed; lines without what history reads are skipped. */
  add(d: Record<string, unknown>): void {
    const atMs = typeof d.evaluated_at === 'string' ? Date.parse(d.evaluated_at) : NaN;
    if (!Number.isFinite(atMs) || typeof d.action !== 'string' || typeof d.agent_id !== 'string') return;
    const text = (v: unknown) => (typeof v === 'string' ? v : null);
    const number = (v: unknown) => (typeof v === 'number' ? v : null);
    this.log.push({
      action: d.action,
      agent_id: d.agent_id,
      session_id: text(d.session_id),
      on_behalf_of: text(d.on_behalf_of),
      resource: text(d.resource),
      amount: number(d.amount),
      confirmed_amount: number(d.confirmed_amount),
      context:
        d.context !== null && typeof d.context === 'object' && !Array.isArray(d.context)
          ? (d.context as Record<string, unknown>)
          : null,
      effect: d.effect === 'deny' ? 'deny' : 'allow',
      at_ms: atMs,
    });
    // Oldest first: what no window reaches any more is dropped (compacted now and then).
    while (this.start < this.log.length && this.log[this.start]!.at_ms < atMs - this.keepMs) this.start++;
    if (this.start > 1024 && this.start * 2 > this.log.length) {
      this.log = this.log.slice(this.start);
      this.start = 0;
    }
  }
}
