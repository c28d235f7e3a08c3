/**
 * The insert cost bench/decision-log-indexes.ts measures: batches of 50
 * decisions of the load's mix (bench/decision-log-indexes-load.ts), made now,
 * through authz_write_decisions (decisions only: no agents, no events), each
 * under EXPLAIN ANALYZE (PostgreSQL's time, not the round trip).
 */
import type postgres from 'postgres';
import { newId } from '../runtime/ids.js';

export type Db = postgres.Sql | postgres.TransactionSql;

/** Agents of the load (agent-0 ... agent-4999). */
export const AGENTS = 5_000;
/** Batches inserted before the measured ones (index pages back in shared buffers after a query read the whole log). */
const WARM_BATCHES = 50;

type ExplainRow = { 'QUERY PLAN': Array<Record<string, unknown>> };

/** One decision of the load's mix, made now (as the service writes it: DecisionRow as JSON). */
function decisionRow(i: number, nowMs: number): Record<string, unknown> {
  const r = (k: number) => Math.floor(Math.random() * k);
  const e = r(1000);
  const effect = e < 100 ? 'deny' : e < 130 ? 'review' : 'allow';
  const reason =
    effect === 'deny' ? ['policy.not_found', 'policy.matched', 'budget.exceeded'][r(3)]! : 'policy.matched';
  const at = new Date(nowMs).toISOString();
  return {
    account_id: 'acc_bench_a',
    environment: 'live',
    id: newId('dec', nowMs),
    agent_id: `agent-${r(AGENTS)}`,
    action: `tool.${r(60)}`,
    resource: `res:${r(10_000)}`,
    amount: null,
    context: { channel: 'mcp', ip: `10.0.${r(256)}.${r(256)}` },
    effect,
    reason,
    policy_id: 'pol_0001',
    matched_policy_ids: ['pol_0001'],
    warnings: [],
    status: effect === 'deny' ? 'denied' : effect === 'review' ? 'awaiting_approval' : 'pending',
    evaluated_at: at,
    expires_at: new Date(nowMs + 300_000).toISOString(),
    ttl_seconds: 300,
    session_id: r(100) < 60 ? `sess-new-${i % 500}` : null,
    on_behalf_of: r(100) < 30 ? `user-${r(20_000)}` : null,
    args_digest: null,
    key_id: 'key_bench_0',
    shadow: r(100) === 0 ? { effect: 'deny', reason: 'policy.matched', policy_id: 'pol_shadow' } : null,
    review_status: effect === 'review' ? 'open' : null,
    approval_expires_at: effect === 'review' ? new Date(nowMs + 3_600_000).toISOString() : null,
    session_labels: null,
    history: null,
  };
}

/** `batches` batches of 50 through authz_write_decisions (after WARM_BATCHES): median us per decision, WAL bytes per decision. */
export async function insertCost(sql: Db, batches: number): Promise<{ usPerRow: number; walPerRow: number }> {
  const times: number[] = [];
  let wal0 = 0n;
  for (let b = -WARM_BATCHES; b < batches; b++) {
    if (b === 0) wal0 = await walBytes(sql);
    const now = Date.now();
    const rows = Array.from({ length: 50 }, (_, i) => decisionRow(b * 50 + i, now));
    const [row] = await sql.unsafe<ExplainRow[]>(
      `explain (analyze, format json) select authz_write_decisions($1::text::jsonb, '[]'::jsonb, '[]'::jsonb, '[]'::jsonb)`,
      [JSON.stringify(rows)],
    );
    const out = row!['QUERY PLAN'][0]!;
    if (b >= 0) times.push(out['Execution Time'] as number);
  }
  const wal = await walBytes(sql);
  times.sort((a, b) => a - b);
  return {
    usPerRow: (times[Math.floor(times.length / 2)]! * 1000) / 50,
    walPerRow: Number(wal - wal0) / (batches * 50),
  };
}

async function walBytes(sql: Db): Promise<bigint> {
  const [{ lsn }] = await sql<
    Array<{ lsn: string }>
  >`select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as lsn`;
  return BigInt(lsn.split('.')[0]!);
}
