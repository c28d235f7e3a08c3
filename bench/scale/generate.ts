/**
 * Fills the decision log of one environment with `rows` decisions spread over
 * `days` days ending now, in SQL (generate_series), not through HTTP: one
 * standalone table per day, loaded without indexes and then attached as that
 * day's partition (ATTACH builds its indexes in bulk). Ids have the service's
 * form (runtime/ids.ts): the time part is the decision's evaluated_at in ms,
 * written with an inline base62 expression (the plpgsql authz_id_time called
 * per row costs ~40 us).
 */
import type { Sql } from '../../runtime/store/connect.js';
import { idRange } from '../../runtime/ids.js';
import { DAY_MS, dayOf, partitionName } from '../../runtime/store/log-partitions.js';

/** The 8 base62 characters of the bigint expression `ms` (SQL), as authz_id_time writes them. */
function base62Sql(ms: string): string {
  const alphabet = `'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'`;
  const digits: string[] = [];
  for (let i = 7; i >= 0; i--) digits.push(`substr(${alphabet}, ((${ms}) / ${62n ** BigInt(i)} % 62)::int + 1, 1)`);
  return digits.join(' || ');
}

export interface GenerateOptions {
  accountId: string;
  rows: number;
  days: number;
  agents: number;
  /** End of the spread (ms); the rows span [endMs - days, endMs). */
  endMs: number;
  /** False: a store from before migration 015 (no partitions): the rows go straight into decisions. */
  partitioned?: boolean;
  log?: (line: string) => void;
}

/** Loads the rows day by day; returns the days loaded (`YYYY-MM-DD`, oldest first). */
export async function generateDecisions(sql: Sql, o: GenerateOptions): Promise<string[]> {
  const perDay = Math.ceil(o.rows / o.days);
  const startMs = Math.floor((o.endMs - o.days * DAY_MS) / DAY_MS) * DAY_MS;
  const loaded: string[] = [];
  await sql`set maintenance_work_mem = '256MB'`;
  for (let d = 0; d < o.days; d++) {
    const dayStart = startMs + d * DAY_MS;
    const day = dayOf(dayStart);
    const name = partitionName('decisions', day);
    const n = Math.min(perDay, o.rows - d * perDay);
    if (n <= 0) break;
    const started = performance.now();
    const ms = `(${dayStart}::bigint + (g::bigint * ${DAY_MS - 1}) / ${n})`;
    const partitioned = o.partitioned ?? true;
    await sql.begin(async (tx) => {
      if (partitioned)
        await tx.unsafe(`create table ${name} (like decisions including defaults including constraints)`);
      await tx.unsafe(
        `
        insert into ${partitioned ? name : 'decisions'} (account_id, environment, id, agent_id, action, resource, effect, reason, policy_id,
          matched_policy_ids, warnings, status, evaluated_at, expires_at, ttl_seconds, resolved_at)
        select $1, 'test', 'dec_' || ${base62Sql(ms)} || lpad(to_hex(g), 16, '0'),
          'agent-' || (g % ${o.agents}), 'orders.read', 'order:' || (g % 1000),
          case when g % 10 = 0 then 'deny' else 'allow' end,
          case when g % 10 = 0 then 'policy.no_match' else 'policy.matched' end,
          case when g % 10 = 0 then null else 'pol_bench_allow' end,
          case when g % 10 = 0 then '{}'::text[] else '{pol_bench_allow}'::text[] end, '[]'::jsonb,
          case when g % 10 = 0 then 'denied' else 'confirmed' end,
          to_timestamp(${ms} / 1000.0), to_timestamp(${ms} / 1000.0) + interval '5 minutes', 300, to_timestamp(${ms} / 1000.0)
        from generate_series(0, ${n - 1}) g`,
        [o.accountId],
      );
      if (!partitioned) return;
      const { lo, hi } = idRange('dec', dayStart, dayStart + DAY_MS);
      await tx.unsafe(`alter table decisions attach partition ${name} for values from ('${lo}') to ('${hi}')`);
    });
    loaded.push(day);
    o.log?.(
      `  ${day}: ${n.toLocaleString('en-US')} decisions in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  await sql`analyze decisions`;
  return loaded;
}
