/**
 * The limits call by batch size, this tree's authz_apply_limits against another
 * commit's (`--before <git ref>`, default HEAD~1), in one run on one throwaway
 * PostgreSQL cluster (default durability): a database per variant, migrated by
 * this build, the other commit's function file then applied over it. Each call
 * is one batch of N requests (as the group commit sends them) on the same agent:
 * a `calls` budget and a rate limit, or a USD budget (a hold per request) and a
 * rate limit, never reached; committed like the decision path's. Variants
 * alternate call by call, so the machine's load falls on both alike.
 *
 *   node dist/bench/budgets/batch.js [--before <ref>] [--sizes 1,10,50,200] [--calls 60]
 *
 * Prints a table (ms per call and µs per request, median of the calls); writes
 * nothing into the repository.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { packageRoot } from '../../compiler/index.js';
import { createAccount } from '../../runtime/domain/accounts.js';
import { migrate } from '../../runtime/store/migrate.js';
import { startCluster } from '../../scripts/pg-cluster.js';

const { values } = parseArgs({
  options: { before: { type: 'string' }, sizes: { type: 'string' }, calls: { type: 'string' } },
});
const before = values.before ?? 'HEAD~1';
const sizes = (values.sizes ?? '1,10,50,200').split(',').map(Number);
const calls = Number(values.calls ?? 60);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** One batch of `n` requests of the bench agent, each with a rate limit and one budget of `unit`. */
function batch(account: string, n: number, unit: 'calls' | 'USD', seq: { next: number }, nowMs: number): object[] {
  const start = new Date(Date.UTC(new Date(nowMs).getUTCFullYear(), new Date(nowMs).getUTCMonth(), 1));
  const end = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
  return Array.from({ length: n }, () => ({
    account_id: account,
    environment: 'test',
    agent_id: 'bench-1',
    decision_id: `dec_batch_${seq.next++}`,
    expires_at: new Date(nowMs + 300_000).toISOString(),
    rates: [{ key: `policy:pol_${unit}:bench-1`, interval_ms: 1e-6, window_ms: 1000 }],
    budgets: [
      {
        policy_id: `pol_${unit}`,
        unit,
        period: 'monthly',
        period_start: start.toISOString(),
        period_end: end.toISOString(),
        limit: 1e12,
        threshold: null,
        scope: 'agent',
        agent_id: 'bench-1',
        session_id: '',
        on_behalf_of: '',
        cost: 1,
      },
    ],
  }));
}

async function main(): Promise<void> {
  const load0 = loadavg();
  const oldBody = execFileSync('git', ['show', `${before}:runtime/store/functions/authz_apply_limits.sql`], {
    cwd: packageRoot(),
    encoding: 'utf8',
  });
  const cluster = await startCluster({ durable: true, log: () => {} });
  try {
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    const variants: Array<{ name: string; sql: postgres.Sql; account: string; ms: Map<string, number[]> }> = [];
    for (const name of ['before', 'now']) {
      await admin.unsafe(`create database v_${name}`);
      const sql = postgres(cluster.url.replace(/\/postgres$/, `/v_${name}`), { max: 1, onnotice: () => {} });
      await migrate(sql);
      if (name === 'before') await sql.unsafe(oldBody);
      const account = (await createAccount(sql, 'bench', new Date())).id;
      variants.push({ name, sql, account, ms: new Map() });
    }
    await admin.end();
    const seq = { next: 0 };
    for (const unit of ['calls', 'USD'] as const) {
      for (const n of sizes) {
        for (let c = 0; c < calls; c++) {
          for (const v of c % 2 ? [...variants].reverse() : variants) {
            const now = Date.now();
            const body = batch(v.account, n, unit, seq, now);
            const t0 = performance.now();
            const rows = await v.sql.begin(
              async (tx) => tx`select * from authz_apply_limits(${tx.json(body as never)}, ${now})`,
            );
            const ms = performance.now() - t0;
            if (rows.length !== n || rows.some((r) => (r.result as { outcome: string }).outcome !== 'ok'))
              throw new Error(`${v.name}: not every request ok`);
            // The first calls warm the plans: not counted.
            if (c >= 4) {
              const key = `${unit}:${n}`;
              v.ms.set(key, [...(v.ms.get(key) ?? []), ms]);
            }
          }
        }
      }
    }
    const lines = [
      `authz_apply_limits by batch size: before = ${before}'s function, now = this tree's; ${calls - 4} calls each after 4 warm-up calls, alternating; one transaction per call (as the decision path). Load average at the start ${load0.map((x) => x.toFixed(1)).join(' / ')}, at the end ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' / ')}.`,
      '',
      '| budget | requests per batch | before ms per call | now ms per call | before µs per request | now µs per request | now / before |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ];
    for (const unit of ['calls', 'USD']) {
      for (const n of sizes) {
        const [b, w] = variants.map((v) => median(v.ms.get(`${unit}:${n}`)!));
        lines.push(
          `| ${unit} | ${n} | ${b!.toFixed(2)} | ${w!.toFixed(2)} | ${((b! * 1000) / n).toFixed(0)} | ${((w! * 1000) / n).toFixed(0)} | ${(w! / b!).toFixed(2)} |`,
        );
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    for (const v of variants) await v.sql.end();
  } finally {
    await cluster.stop();
  }
}

await main();
