/**
 * The decision log that bench/decision-log-indexes.ts reads: `rows` decisions
 * spread evenly over `days` days ending at `endMs`, loaded in SQL
 * (INSERT ... SELECT generate_series, one chunk per day: no per-row round
 * trip) into a standalone table per day, then attached as that day's partition
 * (ATTACH builds its indexes in bulk), as bench/scale/generate.ts does. Unlike
 * that one, a mix shaped like a service's: 2 accounts x 2 environments
 * (55/25/15/5%), `agents` agents, `sessions` sessions (60% of the decisions,
 * each session's rows close in time), users on 30%, 10% deny (six reasons), 3%
 * review (open and awaiting approval in the last two hours, approved or denied
 * before), a shadow outcome on 1%. Each column draws from its own hash of the
 * row number (hashint8extended), so the draws are independent and the load is
 * the same on every run. Ids have the service's form (runtime/ids.ts): the time
 * part is evaluated_at in ms, then 16 hex characters.
 */
import type postgres from 'postgres';
import { idRange } from '../runtime/ids.js';
import { DAY_MS, dayOf, partitionName } from '../runtime/store/log-partitions.js';

/** The tenants and the share (%) of the decisions each makes, the largest first. */
export const TENANTS = [
  { accountId: 'acc_bench_a', environment: 'live', share: 55 },
  { accountId: 'acc_bench_a', environment: 'test', share: 25 },
  { accountId: 'acc_bench_b', environment: 'live', share: 15 },
  { accountId: 'acc_bench_b', environment: 'test', share: 5 },
] as const;

/** Deny reasons and their cumulative share (%) of the denies. */
const DENY_REASONS: Array<[string, number]> = [
  ['policy.not_found', 35],
  ['policy.matched', 60],
  ['resource.not_allowed', 75],
  ['budget.exceeded', 87],
  ['rate_limit.exceeded', 94],
  ['policy.disabled', 98],
  ['agent.revoked', 100],
];

export interface LoadOptions {
  rows: number;
  days: number;
  agents: number;
  sessions: number;
  /** The newest decision's time (ms). */
  endMs: number;
  log: (line: string) => void;
}

/** The 8 base62 characters of the bigint expression `ms` (SQL), as authz_id_time writes them. */
function base62Sql(ms: string): string {
  const alphabet = `'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'`;
  const digits: string[] = [];
  for (let i = 7; i >= 0; i--) digits.push(`substr(${alphabet}, ((${ms}) / ${62n ** BigInt(i)} % 62)::int + 1, 1)`);
  return digits.join(' || ');
}

/** Draw `k` of row g: a number in [0, mod). */
const h = (k: number, mod: number) => `(abs(hashint8extended(g, ${k})) % ${mod})`;

/** The SELECT list of row `g` made at ms expression `ms`, its effect, reason and review status in `e` (columns in INSERT order below). */
function rowSql(o: LoadOptions, ms: string): string {
  const at = `to_timestamp((${ms}) / 1000.0)`;
  const tenant = (col: 'accountId' | 'environment') => {
    let acc = 0;
    const arms = TENANTS.map((t) => `when ${h(1, 100)} < ${(acc += t.share)} then '${t[col]}'`);
    return `case ${arms.join(' ')} end`;
  };
  return `${tenant('accountId')}, ${tenant('environment')},
    'dec_' || ${base62Sql(ms)} || substr(md5(g::text), 1, 16),
    'agent-' || ${h(2, o.agents)}, 'tool.' || ${h(10, 60)}, 'res:' || ${h(11, 10_000)},
    case when ${h(12, 20)} = 0 then ${h(13, 10_000)} / 100.0 end,
    jsonb_build_object('channel', 'mcp', 'ip', '10.0.' || ${h(14, 256)} || '.' || ${h(15, 256)}),
    e.effect, e.reason,
    case when e.reason = 'policy.not_found' then null else 'pol_' || lpad(${h(16, 200)}::text, 4, '0') end,
    case when e.reason = 'policy.not_found' then '{}'::text[] else array['pol_' || lpad(${h(16, 200)}::text, 4, '0')] end,
    '[]'::jsonb,
    case when e.effect = 'deny' then 'denied'
         when e.effect = 'review' and e.review_status = 'open' then 'awaiting_approval'
         when e.effect = 'review' and e.review_status = 'denied' then 'denied'
         when ${h(17, 10)} < 7 then 'confirmed' else 'pending' end,
    ${at}, ${at} + interval '5 minutes', 300,
    case when e.effect <> 'deny' and e.review_status is distinct from 'open' and e.review_status is distinct from 'denied'
         and ${h(17, 10)} < 7 then ${at} + interval '1 second' end,
    case when ${h(6, 100)} < 60 then 'sess-' || (floor(g * ${o.sessions}::float8 / ${o.rows})::bigint + ${h(7, 4)}) end,
    case when ${h(8, 100)} < 30 then 'user-' || ${h(9, 20_000)} end,
    case when ${h(18, 2)} = 0 then md5('args' || g) end,
    'key_bench_' || ${h(19, 3)},
    case when ${h(20, 100)} = 0 then '{"effect":"deny","reason":"policy.matched","policy_id":"pol_shadow"}'::jsonb end,
    e.review_status,
    case when e.effect = 'review' then ${at} + interval '1 hour' end,
    case when e.review_status in ('approved', 'denied') then ${at} + interval '10 minutes' end,
    case when e.review_status in ('approved', 'denied') then 'reviewer@bench' end`;
}

/** The FROM list: the row numbers, and each row's effect, reason and review status (read by rowSql as e.*). */
function fromSql(o: LoadOptions, ms: string, nowMs: number, g0: number, g1: number): string {
  // Reviews of the last two hours are still open (awaiting approval, some overdue); older ones were answered.
  const recent = `(${ms}) > ${nowMs - 2 * 3_600_000}`;
  const denyReason = `case ${DENY_REASONS.map(([r, c]) => `when ${h(4, 100)} < ${c} then '${r}'`).join(' ')} end`;
  return `generate_series(${g0}::bigint, ${g1 - 1}) g,
    lateral (select case when ${h(3, 1000)} < 100 then 'deny' when ${h(3, 1000)} < 130 then 'review' else 'allow' end as effect) x,
    lateral (select x.effect,
      case when x.effect = 'deny' then ${denyReason} else 'policy.matched' end as reason,
      case when x.effect <> 'review' then null when ${recent} then 'open' when ${h(5, 10)} < 7 then 'approved' else 'denied' end
        as review_status) e`;
}

const COLUMNS = `account_id, environment, id, agent_id, action, resource, amount, context, effect, reason,
  policy_id, matched_policy_ids, warnings, status, evaluated_at, expires_at, ttl_seconds, resolved_at,
  session_id, on_behalf_of, args_digest, key_id, shadow, review_status, approval_expires_at, reviewed_at, reviewer`;

/** Loads the rows day by day, then ANALYZE; returns the days loaded (`YYYY-MM-DD`, oldest first). */
export async function loadDecisions(sql: postgres.Sql, o: LoadOptions): Promise<string[]> {
  const startMs = o.endMs - o.days * DAY_MS;
  const step = (o.endMs - startMs) / o.rows;
  await sql`set maintenance_work_mem = '512MB'`;
  const loaded: string[] = [];
  // Row g is made at startMs + g * step (ms, rounded down); day d holds the g whose time falls in it.
  for (let dayStart = Math.floor(startMs / DAY_MS) * DAY_MS; dayStart < o.endMs; dayStart += DAY_MS) {
    const g0 = Math.max(0, Math.ceil((dayStart - startMs) / step));
    const g1 = Math.min(o.rows, Math.ceil((dayStart + DAY_MS - startMs) / step));
    if (g1 <= g0) continue;
    const day = dayOf(dayStart);
    const name = partitionName('decisions', day);
    const started = performance.now();
    const ms = `(${startMs}::bigint + floor(g::float8 * ${step})::bigint)`;
    await sql.begin(async (tx) => {
      await tx.unsafe(`create table ${name} (like decisions including defaults including constraints)`);
      await tx.unsafe(
        `insert into ${name} (${COLUMNS}) select ${rowSql(o, ms)} from ${fromSql(o, ms, o.endMs, g0, g1)}`,
      );
      const { lo, hi } = idRange('dec', dayStart, dayStart + DAY_MS);
      await tx.unsafe(`alter table decisions attach partition ${name} for values from ('${lo}') to ('${hi}')`);
    });
    loaded.push(day);
    o.log(
      `  ${day}: ${(g1 - g0).toLocaleString('en-US')} decisions in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  const started = performance.now();
  await sql`vacuum (analyze) decisions`;
  o.log(`  vacuum (analyze): ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return loaded;
}
