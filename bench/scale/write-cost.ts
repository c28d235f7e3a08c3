/**
 * `node dist/bench/scale/write-cost.js`: what one decision writes on
 * PostgreSQL (docs/scale-out.md). Runs allow decisions (with a permit, no
 * limits; then with a calls budget and a rate limit) through HTTP for
 * `--duration` seconds each against a fresh database, and divides by the
 * decisions stored: rows inserted per table (pg_stat_user_tables, partitions
 * summed into their table), bytes on disk per table with its indexes
 * (pg_total_relation_size) and WAL bytes (pg_stat_wal).
 *
 *   node dist/bench/scale/write-cost.js [--duration 10] [--connections 50]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { systemClock } from '../../runtime/clock.js';
import { maintainLog } from '../../runtime/domain/log-retention.js';
import { openStore, type Sql } from '../../runtime/store/connect.js';
import { migrate } from '../../runtime/store/migrate.js';
import { startCluster } from '../../scripts/pg-cluster.js';
import { startTarget, stopTarget } from '../http/target.js';

const { values } = parseArgs({ options: { duration: { type: 'string' }, connections: { type: 'string' } } });
const duration = Number(values.duration ?? 10);
const connections = Number(values.connections ?? 50);

interface Snapshot {
  inserts: Record<string, number>;
  updates: Record<string, number>;
  bytes: Record<string, number>;
  wal: number;
}

/** Counters per table, partitions summed into their parent (decisions_p20261121 -> decisions). */
async function snapshot(sql: Sql): Promise<Snapshot> {
  const rows = await sql<Array<{ t: string; ins: number; upd: number; bytes: number }>>`
    select regexp_replace(relname, '_(p[0-9]{8}|default)$', '') as t, sum(n_tup_ins)::float8 as ins, sum(n_tup_upd)::float8 as upd,
           sum(pg_total_relation_size(relid))::float8 as bytes
    from pg_stat_user_tables group by 1`;
  const [wal] = await sql<Array<{ b: number }>>`select wal_bytes::float8 as b from pg_stat_wal`;
  const s: Snapshot = { inserts: {}, updates: {}, bytes: {}, wal: wal!.b };
  for (const r of rows) {
    s.inserts[r.t] = r.ins;
    s.updates[r.t] = r.upd;
    s.bytes[r.t] = r.bytes;
  }
  return s;
}

async function main(): Promise<void> {
  const cluster = await startCluster({ durable: true, log: (l) => process.stderr.write(`${l}\n`) });
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  await admin.unsafe('create database cost');
  await admin.end();
  const url = cluster.url.replace(/\/postgres$/, '/cost');
  const store = await openStore({ databaseUrl: url, max: 2 });
  await migrate(store.sql);
  await maintainLog(store, systemClock, { retentionDays: null });
  const target = await startTarget(['--database-url', url]);
  try {
    const scenarios: Array<[string, object]> = [
      ['allow, permit, no limits', { agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' }],
      ['allow, calls budget + rate limit', { agent_id: 'bench-1', action: 'orders.list', resource: 'order:1' }],
    ];
    const lines: string[] = [];
    for (const [name, body] of scenarios) {
      // Stats are sent by backends at transaction end and read through a snapshot: pause, then clear it.
      await new Promise((r) => setTimeout(r, 1500));
      await store.sql`select pg_stat_clear_snapshot()`;
      const before = await snapshot(store.sql);
      const [{ n: n0 }] = await store.sql<Array<{ n: number }>>`select count(*)::float8 as n from decisions`;
      const r = await autocannon({
        url: `http://127.0.0.1:${target.port}/v1/decisions`,
        method: 'POST',
        connections,
        duration,
        headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await new Promise((res) => setTimeout(res, 1500));
      await store.sql`select pg_stat_clear_snapshot()`;
      const after = await snapshot(store.sql);
      const [{ n: n1 }] = await store.sql<Array<{ n: number }>>`select count(*)::float8 as n from decisions`;
      const n = n1 - n0;
      // Tables written by the decisions (not a stray row of the setup or of a background sweep).
      const tables = Object.keys(after.inserts).filter((t) => (after.inserts[t] ?? 0) - (before.inserts[t] ?? 0) + (after.updates[t] ?? 0) - (before.updates[t] ?? 0) >= n / 100);
      lines.push(`### ${name}: ${n.toLocaleString('en-US')} decisions (${Math.round(r.requests.average)}/s, load ${loadavg()[0]!.toFixed(1)})`, '', '| table | rows inserted / decision | rows updated / decision | bytes on disk (with indexes) / decision |', '|---|---:|---:|---:|');
      for (const t of tables.sort()) {
        const per = (x: number) => (x / n).toFixed(2);
        lines.push(`| ${t} | ${per((after.inserts[t] ?? 0) - (before.inserts[t] ?? 0))} | ${per((after.updates[t] ?? 0) - (before.updates[t] ?? 0))} | ${Math.round(((after.bytes[t] ?? 0) - (before.bytes[t] ?? 0)) / n)} |`);
      }
      lines.push('', `WAL: ${Math.round((after.wal - before.wal) / n).toLocaleString('en-US')} bytes / decision.`, '');
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await stopTarget(target);
    await store.close();
    await cluster.stop();
  }
}

await main();
