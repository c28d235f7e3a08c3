/**
 * What one decision writes to PostgreSQL (`npm run bench:write-cost`): rows
 * inserted and updated per table, heap + index bytes added per table, and WAL
 * bytes, per decision, for a few decision kinds. A throwaway cluster, one
 * bench server process (bench/http/server.ts), `--decisions` requests of each
 * kind through HTTP (autocannon, 20 connections), measured from the
 * statistics views between the runs (partitions summed into their table).
 *
 *   node dist/bench/write-cost/run.js [--decisions 20000] [--out FILE]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { startCluster } from '../../scripts/pg-cluster.js';
import { startTarget, stopTarget } from '../http/target.js';

const { values } = parseArgs({ options: { decisions: { type: 'string' }, out: { type: 'string' } } });
const N = Number(values.decisions ?? 20_000);

/**
 * The leased history kind's policy (added through the API): one history.count in a 1 h session window, decided
 * from the session's history lease, its entry written as columns of its decision's row (migration 029).
 */
const LEASED_POLICY = {
  id: 'pol_wc_history_leased',
  name: 'wc-history-leased',
  effect: 'allow',
  state: 'enabled',
  priority: 100,
  agents: ['bench-*'],
  actions: ['hist.leased'],
  condition: "history.count('hist.leased', '1h') < 1000000000",
};
/** The history and label kind's: the same on its own action, adding one label (so decided through the limits gate). */
const HISTORY_POLICY = {
  ...LEASED_POLICY,
  id: 'pol_wc_history',
  name: 'wc-history',
  actions: ['hist.counted'],
  condition: "history.count('hist.counted', '1h') < 1000000000",
  labels: ['bench.read'],
};
/** Sessions the history kinds' decisions rotate over (each opened once, its label added once). */
const SESSIONS = 1000;

const KINDS: Array<[string, object]> = [
  ['allow (permit, no limits)', { agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' }],
  ['deny', { agent_id: 'bench-1', action: 'orders.delete', resource: 'order:1' }],
  ['allow, calls budget + rate limit', { agent_id: 'bench-1', action: 'orders.list', resource: 'order:1' }],
  [
    'allow, USD budget held + rate limit',
    { agent_id: 'bench-1', action: 'orders.pay', resource: 'order:1', amount: 1 },
  ],
  [
    `allow, history.count 1h session + one label (${SESSIONS} sessions)`,
    { agent_id: 'bench-1', action: 'hist.counted', resource: 'order:1', session_id: 'wc-' },
  ],
  [
    `allow, history.count 1h session, from its lease (${SESSIONS} sessions)`,
    { agent_id: 'bench-1', action: 'hist.leased', resource: 'order:1', session_id: 'wl-' },
  ],
];

interface TableStat {
  ins: number;
  upd: number;
  bytes: number;
}

type Snapshot = { tables: Map<string, TableStat>; wal: bigint };

async function snapshot(sql: postgres.Sql): Promise<Snapshot> {
  const rows = await sql<Array<{ name: string; ins: string; upd: string; bytes: string }>>`
    select coalesce(pg_partition_root(s.relid), s.relid)::regclass::text as name,
      sum(s.n_tup_ins)::text as ins, sum(s.n_tup_upd)::text as upd, sum(pg_total_relation_size(s.relid))::text as bytes
    from pg_stat_user_tables s group by 1`;
  const [{ lsn }] = await sql<Array<{ lsn: string }>>`select (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as lsn`;
  return {
    tables: new Map(rows.map((r) => [r.name, { ins: Number(r.ins), upd: Number(r.upd), bytes: Number(r.bytes) }])),
    wal: BigInt(lsn.split('.')[0]!),
  };
}

async function main(): Promise<void> {
  const cluster = await startCluster({ durable: true, log: () => {} });
  try {
    const target = await startTarget(['--database-url', cluster.url]);
    const sql = postgres(cluster.url, { max: 1, onnotice: () => {} });
    for (const policy of [HISTORY_POLICY, LEASED_POLICY]) {
      const added = await fetch(`http://127.0.0.1:${target.port}/v1/policies`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${target.key}` },
        body: JSON.stringify(policy),
      });
      if (added.status !== 201) throw new Error(`history policy: ${added.status} ${await added.text()}`);
    }
    let sent = 0;
    const lines = [
      `Per decision, ${N.toLocaleString('en-US')} decisions of each kind through HTTP on one server process (PostgreSQL, throwaway cluster; the bench policies of bench/http). Rows: n_tup_ins / n_tup_upd of pg_stat_user_tables; bytes: pg_total_relation_size (heap, TOAST and indexes; partitions summed into their table); WAL: pg_current_wal_lsn() difference.`,
      '',
      '| decision | WAL bytes | table: rows inserted (updated), bytes added |',
      '| --- | ---: | --- |',
    ];
    for (const [name, body] of KINDS) {
      const before = await snapshot(sql);
      const r = await autocannon({
        url: `http://127.0.0.1:${target.port}/v1/decisions`,
        method: 'POST',
        connections: 20,
        amount: N,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${target.key}` },
        body: JSON.stringify(body),
        // The history kinds: each request in one of SESSIONS sessions (the body's session_id their prefix).
        ...('session_id' in body
          ? {
              requests: [
                {
                  setupRequest: (req) => ({
                    ...req,
                    body: JSON.stringify({ ...body, session_id: `${body.session_id as string}${sent++ % SESSIONS}` }),
                  }),
                },
              ],
            }
          : {}),
      });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      // Backends report their counts to the statistics views within seconds: wait until the decisions' count is in.
      let after = await snapshot(sql);
      const [{ n }] = await sql<Array<{ n: number }>>`select count(*)::int as n from decisions`;
      for (let i = 0; i < 150 && (after.tables.get('decisions')?.ins ?? 0) < n; i++) {
        await new Promise((res) => setTimeout(res, 100));
        after = await snapshot(sql);
      }
      const per = (x: number) => x / N;
      const cells: string[] = [];
      for (const [table, a] of after.tables) {
        const b = before.tables.get(table) ?? { ins: 0, upd: 0, bytes: 0 };
        const [ins, upd, bytes] = [per(a.ins - b.ins), per(a.upd - b.upd), per(a.bytes - b.bytes)];
        if (ins < 0.005 && upd < 0.005) continue;
        cells.push(`${table}: ${ins.toFixed(2)}${upd >= 0.005 ? ` (${upd.toFixed(2)})` : ''}, ${bytes.toFixed(0)} B`);
      }
      lines.push(`| ${name} | ${(Number(after.wal - before.wal) / N).toFixed(0)} | ${cells.sort().join('; ')} |`);
      process.stderr.write(`${lines[lines.length - 1]}\n`);
    }
    await sql.end();
    await stopTarget(target);
    const report = `${lines.join('\n')}\n`;
    process.stdout.write(report);
    if (values.out) writeFileSync(values.out, report);
  } finally {
    await cluster.stop();
  }
}

await main();
