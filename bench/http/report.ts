/**
 * The HTTP benchmark's report (bench/http/run.ts runs the targets and hands
 * over what it measured): the issues' targets judged (bench/targets.ts, topic
 * `http`), and bench/http/REPORT.md written (and printed): every target and
 * scenario, `authz serve` beside the pared-down app, where decisions waited,
 * budgets and rate limits constrained / unconstrained, the accounting checks
 * and notes. Medians of the rounds. The target and scenario names the tables
 * show are defined here.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { compilerVersion, packageRoot } from '../../compiler/index.js';
import { writeTargets, type TargetResult } from '../targets.js';
import { CERBOS_VERSION } from './cerbos.js';
import { BENCH_KEY_RATE_LIMIT } from './policies.js';
import { waitsTable, type Waits } from './waits.js';

/** The `authz serve` target's name in the tables. */
export const SERVE = 'authz serve (PostgreSQL)';
/** The peer's names in the tables: the Cerbos PDP with its decision audit log on and off. */
export const CERBOS_AUDIT = `Cerbos PDP ${CERBOS_VERSION} (audit log on)`;
export const CERBOS_NO_AUDIT = `Cerbos PDP ${CERBOS_VERSION} (audit log off)`;
/** Scenario names; the policies behind them are in server.ts. */
export const ALLOW = 'allow, unconstrained';
export const EMBEDDED = 'embedded (PGlite on disk)';
export const DENY = 'deny';
export const CALLS = 'allow, calls budget + rate limit';
export const FIAT = 'allow, USD budget (amount held) + rate limit';
export const NO_PERMIT = 'allow, unconstrained, no permit token';
export const NO_KEY_LIMIT = 'allow, unconstrained, platform key limit off';
export const WEBHOOK = 'allow, webhook endpoint subscribed to every event';
export const TWO_PROCESSES = 'allow, two server processes on one database (load split evenly)';

/** The scenarios run on each store, in this order, every round. */
export const STORE_SCENARIOS = [ALLOW, CALLS, FIAT, DENY];

/** How the runs were made, as the report states it. */
export interface ReportSettings {
  /** autocannon connections per load, and its measured seconds after a `warmup`-second warm-up. */
  connections: number;
  duration: number;
  warmup: number;
  /** Times each store's scenarios ran, interleaved. */
  rounds: number;
  /** Policies in the `authz serve` target's environment. */
  servePolicies: number;
  /** os.loadavg() when the run started. */
  loadAtStart: number[];
}

export interface Run {
  rps: number;
  p50: number;
  p99: number;
  /** 2xx answers, warm-up included (the accounting check). */
  ok: number;
  /** Non-2xx answers and connection errors, warm-up included. */
  bad: number;
  codes: Record<string, number>;
  /** CPU per answered request in the measured run (after the warm-up): the target process, and PostgreSQL. */
  serverUs: number;
  pgUs: number | null;
  /** Share of the machine's CPU (all cores) busy in the measured run, and of one core the target's main thread used. */
  machineBusy: number;
  mainThread: number;
  /** Where decisions waited (targets serving /metrics). */
  waits: Waits | null;
}

export interface Result {
  target: string;
  scenario: string;
  runs: Run[];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const rps = (r: Result) => median(r.runs.map((x) => x.rps));
export const p50 = (r: Result) => median(r.runs.map((x) => x.p50));
export const p99 = (r: Result) => median(r.runs.map((x) => x.p99));
export const serverUs = (r: Result) => median(r.runs.map((x) => x.serverUs)).toFixed(0);
export const pgUs = (r: Result) => (r.runs[0]?.pgUs == null ? '-' : median(r.runs.map((x) => x.pgUs!)).toFixed(0));
export const bad = (r: Result) => r.runs.reduce((n, x) => n + x.bad, 0);

/**
 * Issue 25's targets: on PostgreSQL, allow with a permit >= 30% of bare Fastify, deny >= 45%, p99 <= 20 ms at 50
 * connections; budget and rate-limit paths >= 70% of unconstrained allow; the embedded store >= 80% of PostgreSQL.
 */
function httpTargets(results: Result[], connections: number): TargetResult[] {
  const find = (target: string, scenario: string) =>
    results.find((r) => r.target === target && r.scenario === scenario);
  const bare = find('bare Fastify', 'parse + return JSON');
  const out: TargetResult[] = [];
  // Judged on `authz serve` as users run it when it ran, else on the pared-down app.
  const judged = find(SERVE, ALLOW) ? SERVE : 'PostgreSQL';
  for (const [scenario, share] of [
    [ALLOW, 0.3],
    [DENY, 0.45],
  ] as const) {
    const r = find(judged, scenario);
    if (!r) continue;
    if (bare) {
      const ratio = rps(r) / rps(bare);
      out.push({
        target: `HTTP: ${scenario}, ${judged} >= ${share * 100}% of bare Fastify`,
        measured: `${(ratio * 100).toFixed(0)}% (${rps(r).toFixed(0)} vs ${rps(bare).toFixed(0)} req/s)`,
        met: ratio >= share,
      });
    }
    out.push({
      target: `HTTP: ${scenario}, ${judged}, p99 <= 20 ms at ${connections} connections`,
      measured: `${p99(r)} ms`,
      met: p99(r) <= 20,
    });
  }
  // Issue 51: ahead of the peer users would pick, with its audit log and without.
  for (const peer of [CERBOS_AUDIT, CERBOS_NO_AUDIT])
    for (const s of [ALLOW, DENY]) {
      const [ours, theirs] = [find(judged, s), find(peer, s)];
      if (ours && theirs)
        out.push({
          target: `HTTP: ${s}, ${judged} >= 1.5x ${peer}`,
          measured: `${(rps(ours) / rps(theirs)).toFixed(2)}x (${rps(ours).toFixed(0)} vs ${rps(theirs).toFixed(0)} req/s)`,
          met: rps(ours) / rps(theirs) >= 1.5,
        });
    }
  const base = find(judged, ALLOW);
  for (const s of [CALLS, FIAT]) {
    const r = find(judged, s);
    if (base && r)
      out.push({
        target: `HTTP: ${s}, ${judged} >= 70% of unconstrained allow`,
        measured: `${((rps(r) / rps(base)) * 100).toFixed(0)}%`,
        met: rps(r) / rps(base) >= 0.7,
      });
  }
  for (const s of [ALLOW, DENY]) {
    const [e, p] = [find(EMBEDDED, s), find('PostgreSQL', s)];
    if (e && p)
      out.push({
        target: `HTTP: ${s}, embedded store >= 80% of PostgreSQL`,
        measured: `${((rps(e) / rps(p)) * 100).toFixed(0)}% (${rps(e).toFixed(0)} vs ${rps(p).toFixed(0)} req/s)`,
        met: rps(e) / rps(p) >= 0.8,
      });
  }
  return out;
}

/**
 * Judges the targets (written for topic `http`), then prints the report and writes it to bench/http/REPORT.md.
 *
 * @example
 *   writeReport(results, { connections: 50, duration: 10, warmup: 2, rounds: 1, servePolicies: 200, loadAtStart: loadavg() }, checks, notes);
 */
export function writeReport(results: Result[], settings: ReportSettings, checks: string[], notes: string[]): void {
  const { connections, duration, warmup: WARMUP, rounds, servePolicies, loadAtStart } = settings;
  const bareRps = results.find((r) => r.target === 'bare Fastify');
  const codes = (r: Result) => {
    const all: Record<string, number> = {};
    for (const x of r.runs) for (const [c, n] of Object.entries(x.codes)) all[c] = (all[c] ?? 0) + n;
    const list = Object.entries(all)
      .map(([c, n]) => `${c}: ${n}`)
      .join(', ');
    return list ? `${bad(r)} (${list})` : `${bad(r)}`;
  };
  const ratioRows: string[] = [];
  for (const target of [...new Set(results.map((r) => r.target))]) {
    const base = results.find((r) => r.target === target && r.scenario === ALLOW);
    if (!base) continue;
    for (const s of [ALLOW, CALLS, FIAT]) {
      const r = results.find((x) => x.target === target && x.scenario === s);
      if (!r) continue;
      const perRound = rounds > 1 ? ` | ${r.runs.map((x) => x.rps.toFixed(0)).join(', ')}` : '';
      ratioRows.push(
        `| ${target} | ${s} | ${rps(r).toFixed(0)} | ${p50(r)} | ${p99(r)} | ${s === ALLOW ? '100%' : `${((rps(r) / rps(base)) * 100).toFixed(0)}%`}${perRound} | ${codes(r)} |`,
      );
    }
  }
  const pgRatio = (s: string) => {
    const base = results.find((r) => r.target === 'PostgreSQL' && r.scenario === ALLOW);
    const r = results.find((x) => x.target === 'PostgreSQL' && x.scenario === s);
    return base && r ? rps(r) / rps(base) : NaN;
  };
  const target70 = [CALLS, FIAT]
    .filter((s) => !Number.isNaN(pgRatio(s)))
    .map((s) => `${s}: ${(pgRatio(s) * 100).toFixed(0)}% (${pgRatio(s) >= 0.7 ? 'met' : 'NOT met'})`);

  // What `authz serve` adds over the pared-down app, scenario by scenario.
  const serveRows: string[] = [];
  for (const s of STORE_SCENARIOS) {
    const [app, srv] = [
      results.find((r) => r.target === 'PostgreSQL' && r.scenario === s),
      results.find((r) => r.target === SERVE && r.scenario === s),
    ];
    if (!app || !srv) continue;
    serveRows.push(
      `| ${s} | ${rps(app).toFixed(0)} | ${rps(srv).toFixed(0)} | ${((rps(srv) / rps(app)) * 100).toFixed(0)}% | ${p99(app)} / ${p99(srv)} | ${serverUs(app)} / ${serverUs(srv)} | ${pgUs(app)} / ${pgUs(srv)} |`,
    );
  }

  const judged = httpTargets(results, connections);
  writeTargets('http', judged);
  const lines = [
    '# HTTP benchmark: POST /v1/decisions',
    '',
    `${compilerVersion()}, Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}; autocannon ${connections} connections, ${duration} s after a ${WARMUP} s warm-up, target and load generator in separate processes on this machine.` +
      (rounds > 1
        ? ` Each store's scenarios ran ${rounds} times, interleaved; figures are medians of the rounds.`
        : ''),
    `Load average (1 / 5 / 15 min) at the start ${loadAtStart.map((x) => x.toFixed(1)).join(' / ')}, at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(
        ' / ',
      )} (above ${cpus().length}, the core count, other work shared the machine: read ratios within this run, not absolute rates).`,
    'PostgreSQL: a throwaway local cluster with default durability (fsync, synchronous_commit on). Allow decisions carry an Ed25519 permit token (libsodium) unless the row says otherwise; every decision is stored with its event before it is answered.',
    `Budgets and rate limits are in the path. The platform rate limit per API key is on in every scenario (AUTHZ_KEY_RATE_LIMIT = ${BENCH_KEY_RATE_LIMIT.toLocaleString('en-US')} req/s, so it never answers 429): each process leases the key's tokens from the store 256 at a time, the next lease asked for ahead (docs/budgets-and-limits.md), so it is part of every figure below except the row "${NO_KEY_LIMIT}" (AUTHZ_KEY_RATE_LIMIT = 0), which shows what it costs.`,
    '',
    'CPU per request: CPU time used during the measured run (after the warm-up) by the target process, and by the PostgreSQL cluster (postmaster and backends), divided by the requests answered; from /proc (bench/http/cpu.ts). The embedded store runs inside the target process.',
    '',
    ...(judged.length
      ? [
          '## Targets (issues 25 and 39: judged on `authz serve` when it ran)',
          '',
          '| target | measured | |',
          '| --- | --- | --- |',
          ...judged.map((t) => `| ${t.target} | ${t.measured} | ${t.met ? 'met' : 'NOT met'} |`),
          '',
        ]
      : []),
    '| target | scenario | req/s | p50 ms | p99 ms | vs bare | server CPU µs/req | PostgreSQL CPU µs/req | non-2xx |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...results.map(
      (r) =>
        `| ${r.target} | ${r.scenario} | ${rps(r).toFixed(0)} | ${p50(r)} | ${p99(r)} | ${bareRps ? `${((rps(r) / rps(bareRps)) * 100).toFixed(0)}%` : '-'} | ${serverUs(r)} | ${pgUs(r)} | ${codes(r)} |`,
    ),
    '',
    ...(serveRows.length
      ? [
          '## `authz serve` as users run it, beside the pared-down app',
          '',
          `The pared-down app (bench/http/server.ts: \`buildApp\` without the request logger, the background loops or the webhook dispatcher, 4 policies) and \`authz serve\` as \`npm start\` runs it (its defaults, ${servePolicies} policies, the request log to a file), on the same PostgreSQL cluster in the same run: the difference is what logging, background work and the dispatcher cost.`,
          '',
          '| scenario | pared-down req/s | authz serve req/s | serve / pared-down | p99 ms (app / serve) | server CPU µs/req (app / serve) | PostgreSQL CPU µs/req (app / serve) |',
          '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
          ...serveRows,
          '',
        ]
      : []),
    ...waitsTable(
      results
        // Bare Fastify too: how busy this machine gets when nothing waits.
        .filter((r) => r.target === 'bare Fastify' || r.runs.every((x) => x.waits !== null))
        .map((r) => ({
          target: r.target,
          scenario: r.scenario,
          rps: rps(r),
          machineBusy: median(r.runs.map((x) => x.machineBusy)),
          mainThread: median(r.runs.map((x) => x.mainThread)),
          waits: r.runs.flatMap((x) => (x.waits ? [x.waits] : [])),
        })),
      bareRps ? rps(bareRps) : null,
      cpus().length,
    ),
    '## Budgets and rate limits: constrained / unconstrained',
    '',
    'The same request (agent bench-1, resource order:1) on three allow policies: none with limits; one with a `calls` budget (limit 1e12, monthly) and `rate_limit: { per_second: 1000000000 }`; one with a `USD` budget (limit 1e12, monthly; the request carries `amount: 1`, held until the decision is confirmed, rejected or expires, 300 s by default, so holds pile up during the run) and the same rate limit. Neither limit is ever reached, so every allow pays the whole accounting: the rate-limit row and the budget row (all requests hit the same rows: one agent), in the same batched authz_apply_limits call as the platform limit, before the decision is written. Non-2xx counts include the warm-ups.',
    '',
    `| target | scenario | decisions/s | p50 ms | p99 ms | vs unconstrained${rounds > 1 ? ' | req/s per round' : ''} | non-2xx |`,
    `| --- | --- | ---: | ---: | ---: | ---: |${rounds > 1 ? ' --- |' : ''} ---: |`,
    ...ratioRows,
    '',
    ...(target70.length
      ? [`Target (constrained >= 70% of unconstrained on PostgreSQL): ${target70.join('; ')}.`, '']
      : []),
    ...(checks.length
      ? ['Accounting check (GET /v1/budgets after the runs):', '', ...checks.map((c) => `- ${c}`), '']
      : []),
    ...(notes.length ? [...notes.map((c) => `- ${c}`), ''] : []),
  ];
  const report = lines.join('\n');
  process.stdout.write(report);
  writeFileSync(join(packageRoot(), 'bench', 'http', 'REPORT.md'), report);
}
