/**
 * A read of decisions by time (the export, the stats) said by id range too, so
 * PostgreSQL reads only the partitions of those days (migration 015): a
 * decision's id carries its evaluated_at in ms (runtime/ids.ts; the decision
 * service makes both from one clock reading), so evaluated_at in [since, until)
 * is the id range [dec_<since>, dec_<until>). Not for ranges reaching back to
 * decisions stored before ids told the time.
 */
import { idRange } from '../ids.js';
import type { SqlOrTx } from '../store/connect.js';
import { legacyIdsUntil } from '../store/log-partitions.js';

export type IdBounds = { lo: string; hi: string };

/**
 * The id bounds of decisions made in [sinceMs, untilMs), or null when the range
 * reaches back to decisions whose ids say nothing of their time.
 *
 * @example
 * const ids = await decisionIdsBetween(sql, since.getTime(), until.getTime());
 * await exportDecisionPage(sql, accountId, environment, { since, until }, null, 1000, ids);
 */
export async function decisionIdsBetween(sql: SqlOrTx, sinceMs: number, untilMs: number): Promise<IdBounds | null> {
  const until = await legacyIdsUntil(sql);
  if (until !== null && sinceMs <= until) return null;
  return idRange('dec', sinceMs, untilMs);
}
