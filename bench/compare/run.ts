/**
 * Before and after, in one run (`npm run bench:compare -- --variant before=<git ref> --variant now=.`):
 * the same decision load against builds of different commits, alternating
 * rounds so that the machine's load falls on each alike. Each variant is a
 * git ref (built into a temporary worktree beside this checkout, its
 * node_modules linked to ours when its package-lock.json is ours, else
 * installed from the npm cache with `npm ci --offline`) or `.` (this checkout's build), optionally with
 * environment variables for its server (`now-otel=.:AUTHZ_OTEL=1`). Each
 * variant's bench server (bench/http/server.ts of that build) gets its own
 * database on one throwaway PostgreSQL cluster.
 *
 * `--target serve`: each build's `authz serve` (its bin/authz.js, as `npm start`
 * runs it, with its defaults and `--policies` policies; bench/http/serve-target.ts)
 * instead of its pared-down bench server. It is set up through the public API,
 * so it works for commits from before that target existed.
 *
 *   node dist/bench/compare/run.js --variant before=c7c3cf6 --variant now=. [--scenario allow|deny|calls|usd] [--target app|serve] [--rounds 3] [--duration 5]
 *
 * Prints a table: req/s per round, median, ratio to the first variant, server
 * and PostgreSQL CPU per request. Writes nothing into the repository unless
 * `--out FILE` is given.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { packageRoot } from '../../compiler/index.js';
import { startCluster } from '../../scripts/pg-cluster.js';
import { clusterPids, cpuOf } from '../http/cpu.js';
import { startTarget, stopTarget, type Target } from '../http/target.js';
import { startServe } from '../http/serve-target.js';

const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true },
    scenario: { type: 'string' },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    out: { type: 'string' },
    /** app (default): the build's `dist/bench/http/server.js`; serve: its `authz serve`. */
    target: { type: 'string' },
    /** Policies in the serve target's environment (default 200). */
    policies: { type: 'string' },
  },
});

const BODIES: Record<string, object> = {
  allow: { agent_id: 'bench-1', action: 'orders.read', resource: 'order:1' },
  deny: { agent_id: 'bench-1', action: 'orders.delete', resource: 'order:1' },
  /** The calls budget and a rate limit (bench/http/policies.ts), never reached. */
  calls: { agent_id: 'bench-1', action: 'orders.list', resource: 'order:1' },
  /** A USD budget (the amount held) and a rate limit, never reached. */
  usd: { agent_id: 'bench-1', action: 'orders.pay', resource: 'order:1', amount: 1 },
};

interface Variant {
  name: string;
  ref: string;
  env: Record<string, string>;
  /** The build's `dist/bench/http/server.js`. */
  server: string;
  /** The serve target's key, after its first start (set up then). */
  key?: string;
  runs: Array<{ rps: number; p99: number; serverUs: number; pgUs: number }>;
}

function parseVariant(spec: string): Omit<Variant, 'server' | 'runs'> {
  const m = /^([\w.-]+)=([^:]+)(?::(.*))?$/.exec(spec);
  if (!m) throw new Error(`--variant name=ref[:KEY=VALUE,...], not ${spec}`);
  const env: Record<string, string> = {};
  for (const kv of (m[3] ?? '').split(',').filter(Boolean)) {
    const i = kv.indexOf('=');
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return { name: m[1]!, ref: m[2]!, env };
}

/** A build of `ref`: this checkout's for `.`, else a temporary worktree built with tsc. */
function build(ref: string, cleanups: Array<() => void>): string {
  const root = packageRoot();
  if (ref === '.') return join(root, 'dist', 'bench', 'http', 'server.js');
  const dir = mkdtempSync(join(tmpdir(), 'authz-compare-'));
  execFileSync('git', ['worktree', 'add', '--detach', dir, ref], { cwd: root, stdio: 'ignore' });
  cleanups.push(() => {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: root, stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  });
  // Same lock: our node_modules serve. Another lock: that commit's own packages, from the npm cache (no network).
  if (readFileSync(join(dir, 'package-lock.json'), 'utf8') === readFileSync(join(root, 'package-lock.json'), 'utf8')) {
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  } else {
    process.stderr.write(`${ref} has another package-lock.json: npm ci --offline\n`);
    execFileSync('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  }
  process.stderr.write(`building ${ref} in ${dir}\n`);
  execFileSync(process.execPath, [join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: dir,
    stdio: 'inherit',
  });
  const server = join(dir, 'dist', 'bench', 'http', 'server.js');
  if (!existsSync(server)) throw new Error(`${ref} has no bench/http/server.ts`);
  return server;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

async function main(): Promise<void> {
  const specs = (values.variant ?? []).map(parseVariant);
  if (specs.length < 2) throw new Error('give at least two --variant name=ref');
  const scenario = values.scenario ?? 'allow';
  const body = BODIES[scenario];
  if (!body) throw new Error(`--scenario: one of ${Object.keys(BODIES).join(', ')}`);
  const rounds = Number(values.rounds ?? 3);
  const duration = Number(values.duration ?? 5);
  const connections = Number(values.connections ?? 50);
  const kind = values.target ?? 'app';
  if (kind !== 'app' && kind !== 'serve') throw new Error('--target: app or serve');
  const cleanups: Array<() => void> = [];
  const loadAtStart = loadavg();
  const cluster = await startCluster({ durable: true, log: () => {} });
  try {
    const variants: Variant[] = specs.map((s) => ({ ...s, server: build(s.ref, cleanups), runs: [] }));
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    for (const v of variants) await admin.unsafe(`create database "v_${v.name}"`);
    await admin.end();
    const dbUrl = (v: Variant) => cluster.url.replace(/\/postgres$/, `/v_${v.name}`);
    for (let round = 0; round < rounds; round++) {
      for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
        let t: Target;
        if (kind === 'serve') {
          // The build's root: dist/bench/http/server.js is three levels below it.
          const root = join(v.server, '..', '..', '..', '..');
          t = await startServe({
            databaseUrl: dbUrl(v),
            root,
            env: v.env,
            policies: Number(values.policies ?? 200),
            ...(v.key ? { key: v.key } : {}),
          });
          v.key = t.key;
        } else {
          t = await startTarget(['--database-url', dbUrl(v)], [], { script: v.server, env: v.env });
        }
        const opts = {
          url: `http://127.0.0.1:${t.port}/v1/decisions`,
          method: 'POST' as const,
          connections,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
          body: JSON.stringify(body),
        };
        await autocannon({ ...opts, duration: 2 });
        const pgPids = clusterPids(cluster.dataDir);
        const [s0, p0] = [cpuOf([t.child.pid!]), cpuOf(pgPids)];
        const r = await autocannon({ ...opts, duration });
        const n = Math.max(1, r['2xx'] + r.non2xx);
        v.runs.push({
          rps: r.requests.average,
          p99: r.latency.p99,
          serverUs: ((cpuOf([t.child.pid!]) - s0) * 1000) / n,
          pgUs: ((cpuOf(pgPids) - p0) * 1000) / n,
        });
        process.stderr.write(
          `round ${round + 1} ${v.name}: ${r.requests.average.toFixed(0)} req/s, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}\n`,
        );
        await stopTarget(t);
      }
    }
    const base = median(variants[0]!.runs.map((r) => r.rps));
    const lines = [
      `${kind === 'serve' ? `\`authz serve\` of each build (its defaults, ${values.policies ?? 200} policies). ` : ''}Decision load "${scenario}" (${JSON.stringify(body)}), PostgreSQL (throwaway cluster, default durability), autocannon ${connections} connections, ${duration} s after a 2 s warm-up, ${rounds} alternating rounds; CPU per request from /proc.`,
      '',
      `Load average (1 / 5 / 15 min) at the start ${loadAtStart.map((x) => x.toFixed(1)).join(' / ')}, at the end ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' / ')}: above the core count, absolute figures are noise; compare the rows of one run.`,
      '',
      '| variant | ref | req/s per round | median req/s | vs first | p99 ms (median) | server CPU µs/req | PostgreSQL CPU µs/req |',
      '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |',
      ...variants.map((v) => {
        const rps = median(v.runs.map((r) => r.rps));
        const env = Object.entries(v.env)
          .map(([k, x]) => `${k}=${x}`)
          .join(' ');
        return `| ${v.name} | ${v.ref}${env ? ` (${env})` : ''} | ${v.runs.map((r) => r.rps.toFixed(0)).join(', ')} | ${rps.toFixed(0)} | ${(rps / base).toFixed(2)}x | ${median(v.runs.map((r) => r.p99))} | ${median(v.runs.map((r) => r.serverUs)).toFixed(0)} | ${median(v.runs.map((r) => r.pgUs)).toFixed(0)} |`;
      }),
      '',
    ];
    const report = lines.join('\n');
    process.stdout.write(report);
    if (values.out) writeFileSync(values.out, report);
  } finally {
    await cluster.stop();
    for (const c of cleanups) c();
  }
}

await main();
