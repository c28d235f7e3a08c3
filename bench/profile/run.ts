/**
 * `npm run bench:profile`: where the decision path spends its CPU. Starts a
 * throwaway PostgreSQL cluster and one bench target (bench/http/server.ts, or
 * with `--serve` \`authz serve\` as \`npm start\` runs it: bench/http/serve-target.ts) under
 * `node --cpu-prof`, drives `POST /v1/decisions` with autocannon, stops the target
 * (the profile is written at exit) and prints the self time by function and by
 * package, plus the throughput it saw. The .cpuprofile stays for Chrome DevTools.
 *
 *   node dist/bench/profile/run.js [--scenario allow|deny|calls|usd] [--serve] [--webhook] [--duration 10] [--connections 50] [--target-args "..."]
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { packageRoot } from '../../compiler/index.js';
import { startCluster } from '../../scripts/pg-cluster.js';
import { startReceiver } from '../http/receiver.js';
import { startTarget, stopTarget } from '../http/target.js';
import { startServe } from '../http/serve-target.js';
import { summariseProfile, type CpuProfile } from './summarise.js';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    'target-args': { type: 'string' },
    top: { type: 'string' },
    /** A receiver on 127.0.0.1 and an endpoint subscribed to every event: the dispatcher runs in the profiled process. */
    webhook: { type: 'boolean' },
    /** Profiles `authz serve` (its defaults, 200 policies) instead of the pared-down bench server. */
    serve: { type: 'boolean' },
  },
});

const BODIES: Record<string, object> = {
  allow: { agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' },
  deny: { agent_id: 'bench-1', action: 'orders.delete', resource: 'order:1' },
  calls: { agent_id: 'bench-1', action: 'orders.list', resource: 'order:1' },
  usd: { agent_id: 'bench-1', action: 'orders.pay', resource: 'order:1', amount: 1 },
};

async function main(): Promise<void> {
  const scenario = values.scenario ?? 'allow';
  const body = BODIES[scenario];
  if (!body) throw new Error(`--scenario must be one of ${Object.keys(BODIES).join(', ')}`);
  const duration = Number(values.duration ?? 10);
  const connections = Number(values.connections ?? 50);
  const dir = mkdtempSync(join(tmpdir(), 'authz-profile-'));
  const cluster = await startCluster({ durable: true, log: () => {} });
  try {
    const extra = values['target-args'] ? values['target-args'].split(' ').filter(Boolean) : [];
    const receiver = values.webhook ? await startReceiver() : null;
    if (receiver) extra.push('--webhook', receiver.url);
    const profiling = ['--cpu-prof', '--cpu-prof-dir', dir];
    if (values.serve && (receiver || extra.length))
      throw new Error('--serve takes neither --webhook nor --target-args');
    const target = values.serve
      ? await startServe({ databaseUrl: cluster.url, nodeArgs: profiling })
      : await startTarget(['--database-url', cluster.url, ...extra], profiling);
    const opts = {
      url: `http://127.0.0.1:${target.port}/v1/decisions`,
      method: 'POST' as const,
      connections,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${target.key}` },
      body: JSON.stringify(body),
    };
    await autocannon({ ...opts, duration: 2 });
    const r = await autocannon({ ...opts, duration });
    await stopTarget(target);
    await receiver?.close();
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile written in ${dir}`);
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const out = summariseProfile(profile, Number(values.top ?? 25));
    const report = [
      '# Where the decision path spends its CPU',
      '',
      `${values.serve ? '`authz serve` as `npm start` runs it (its defaults, 200 policies, the request log to a file)' : 'One bench target'} on PostgreSQL under \`node --cpu-prof\`, scenario "${scenario}"${receiver ? ' with a webhook endpoint subscribed to every event' : ''} (${JSON.stringify(body)}), autocannon ${connections} connections for ${duration} s after a 2 s warm-up: ${Math.round(r.requests.average)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx + r.errors}. Self time from the V8 profile (start-up and warm-up included). The profiler samples wall time: time the kernel spends in a socket write, waking PostgreSQL on the other end, shows as \`writeBuffer\`/\`writev\`.`,
      '',
      out,
      '',
    ].join('\n');
    process.stdout.write(`${report}\nprofile: ${join(dir, file)}\n`);
    writeFileSync(join(packageRoot(), 'bench', 'profile', 'REPORT.md'), report);
  } finally {
    await cluster.stop();
  }
}

await main();
