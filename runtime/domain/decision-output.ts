/**
 * What the MCP gateway read in a result (docs/api.md#post-v1decisionsidoutput-extension):
 * POST /v1/decisions/:id/output records, once, the labels the result of the
 * request a decision allowed carries and its detectors' findings (kind, rule,
 * count, action; never the matched text), and adds the labels to the
 * decision's session (source `gateway`) in the same transaction, so the
 * agent's next request is decided with them. A second record is 409
 * decision.output_recorded.
 */
import type { Clock } from '../clock.js';
import type { DecisionOutputRequest } from '../../clients/typescript/wire.js';
import { DecisionNotFoundError, DecisionOutputRecordedError } from '../errors/api-error.js';
import type { Sql, Tx } from '../store/connect.js';
import { findDecision, recordDecisionOutput, type DecisionRow, type OutputFindingRow } from '../store/decisions.js';
import type { Principal } from '../tenant.js';

/** The body of POST /v1/decisions/:id/output (generated from schemas/api/decision-output.schema.json). */
export type DecisionOutputBody = DecisionOutputRequest;

/**
 * Adds a decision's output labels to its session, inside the caller's
 * transaction (throws, e.g. 409 session.too_many_labels, to undo the record).
 */
export type GatewayLabels = (
  tx: Tx,
  principal: Principal,
  decision: DecisionRow,
  labels: readonly string[],
) => Promise<void>;

export interface DecisionOutputDeps {
  sql: Sql;
  clock: Clock;
  /** Where the labels join the decision's session; absent: the output is recorded on the decision only. */
  sessionLabels?: GatewayLabels;
}

export class DecisionOutputService {
  constructor(private readonly deps: DecisionOutputDeps) {}

  /**
   * Records the output of decision `id` of the principal's account and
   * environment: 404 decision.not_found, 409 decision.output_recorded once one
   * is. The labels join the decision's session (when it has one) atomically
   * with the record. Findings of the same kind, rule and action are summed.
   *
   * @example
   * const row = await outputs.record(principal, 'dec_...', { labels: ['untrusted'], findings: [{ kind: 'pii', rule: 'email', count: 2, action: 'redact' }] });
   * // row.output => { labels: ['untrusted'], findings: [...], recorded_at: '2026-11-28T12:00:00.000Z' }
   */
  async record(principal: Principal, id: string, body: DecisionOutputBody): Promise<DecisionRow> {
    const output = {
      labels: [...new Set(body.labels)],
      findings: mergedFindings(body.findings),
      recorded_at: new Date(this.deps.clock.now()).toISOString(),
    };
    return this.deps.sql.begin(async (tx) => {
      const row = await recordDecisionOutput(tx, principal, id, output);
      if (row === undefined) {
        const current = await findDecision(tx, principal.accountId, principal.environment, id);
        if (current === undefined) throw new DecisionNotFoundError(`no decision ${id}`);
        throw new DecisionOutputRecordedError(
          `the output of decision ${id} was recorded at ${current.output?.recorded_at ?? 'an earlier call'}; it is recorded once`,
        );
      }
      // The labels join the decision's session (source gateway) in this transaction: 409 session.too_many_labels undoes the record.
      if (output.labels.length > 0 && row.session_id !== null)
        await this.deps.sessionLabels?.(tx, principal, row, output.labels);
      return row;
    });
  }
}

/**
 * Findings with the same kind, rule and action summed into one, in first-seen order.
 *
 * @example
 * ```ts
 * const f = { kind: 'pii', rule: 'email', action: 'label' as const };
 * console.log(mergedFindings([{ ...f, count: 1 }, { ...f, count: 2 }])); // => [ { kind: 'pii', rule: 'email', action: 'label', count: 3 } ]
 * ```
 */
export function mergedFindings(findings: readonly OutputFindingRow[]): OutputFindingRow[] {
  const byKey = new Map<string, OutputFindingRow>();
  for (const f of findings) {
    const key = `${f.kind}\u0000${f.rule}\u0000${f.action}`;
    const seen = byKey.get(key);
    if (seen) seen.count += f.count;
    else byKey.set(key, { ...f });
  }
  return [...byKey.values()];
}
