/**
 * `npm run soak`: does the service hold a steady load without its memory or its
 * latency creeping up? A throwaway PostgreSQL (default durability, like the
 * other benches), the bench target (bench/http/server.ts, with `--stats` for
 * its memory and `--webhook` so its dispatcher delivers every event to a
 * receiver in this process), then:
 *
 * 1. the maximum rate: a short warm-up, then autocannon flat out for
 *    `--max-seconds` (15) at `--connections` (50);
 * 2. the soak: back-to-back autocannon slices of `--interval` (10) seconds at
 *    `--share` (0.8) of that rate (autocannon `overallRate`) for `--minutes`
 *    (5); after each slice, the target's RSS and heap used (GET /bench/stats),
 *    its heap used after a full GC (the target runs with --expose-gc; the
 *    retained heap, where a leak shows), and the slice's decisions/s, p50, p99.
 *
 * The request mix: allow unconstrained, allow under a `calls` budget (and a
 * rate limit), allow under a USD budget (amount held, 60 s TTL so holds expire
 * during the run), deny; 200 agents. Budgets and rate limits are never reached
 * (bench/http/policies.ts), so every constrained allow pays the whole
 * accounting. Writes bench/soak/REPORT.md (or `--out`) with a verdict computed
 * from the samples: slope of the heap after GC after the first minute and
 * last-minute vs second-minute median of it, last-minute vs second-minute p99.
 *
 *   node dist/bench/soak/run.js [--minutes 5] [--max-seconds 15] [--connections 50] [--interval 10] [--share 0.8] [--out FILE]
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { compilerVersion, packageRoot } from '../../compiler/index.js';
import { startCluster } from '../../scripts/pg-cluster.js';
import { machineTable } from '../machine.js';
import { startReceiver } from '../http/receiver.js';
import { startTarget, stopTarget, type Target } from '../http/target.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string' },
    'max-seconds': { type: 'string' },
    connections: { type: 'string' },
    interval: { type: 'string' },
    share: { type: 'string' },
    out: { type: 'string' },
  },
});
const minutes = Number(values.minutes ?? 5);
const maxSeconds = Number(values['max-seconds'] ?? 15);
const connections = Number(values.connections ?? 50);
const intervalSeconds = Number(values.interval ?? 10);
const share = Number(values.share ?? 0.8);
const out = values.out ?? join(packageRoot(), 'bench', 'soak', 'REPORT.md');
for (const [name, v] of Object.entries({ minutes, maxSeconds, connections, intervalSeconds, share })) {
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
}
const WARMUP_SECONDS = 3;
const AGENTS = 200;
/** Thresholds of the verdict. */
const HEAP_SLOPE_MAX = 1; // MiB per minute
const HEAP_RATIO_MAX = 1.15;
const P99_RATIO_MAX = 1.5;
const RATE_HELD_MIN = 0.95;

/** One slot per request in turn: 5 allow, 2 calls budget, 2 USD budget, 1 deny (bench/http/policies.ts). */
const MIX = ['allow', 'calls', 'allow', 'usd', 'allow', 'deny', 'allow', 'calls', 'allow', 'usd'] as const;
const BODY: Record<(typeof MIX)[number], (agent: string, n: number) => object> = {
  allow: (agent, n) => ({ agent_id: agent, action: 'orders.read', resource: `order:${n % 1000}` }),
  calls: (agent, n) => ({ agent_id: agent, action: 'orders.list', resource: `order:${n % 1000}` }),
  usd: (agent, n) => ({
    agent_id: agent,
    action: 'orders.pay',
    resource: `order:${n % 1000}`,
    amount: 1,
    ttl_seconds: 60,
  }),
  deny: (agent, n) => ({ agent_id: agent, action: 'orders.delete', resource: `order:${n % 1000}` }),
};

interface Slice {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  bad: number;
}

let sent = 0;
async function load(t: Target, seconds: number, overallRate?: number): Promise<Slice> {
  const r = await autocannon({
    url: `http://127.0.0.1:${t.port}`,
    connections,
    duration: seconds,
    ...(overallRate ? { overallRate } : {}),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${t.key}` },
    requests: [
      {
        method: 'POST',
        path: '/v1/decisions',
        setupRequest: (request) => {
          const n = sent++;
          request.body = JSON.stringify(BODY[MIX[n % MIX.length]!](`bench-${n % AGENTS}`, n));
          return request;
        },
      },
    ],
  });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: r['2xx'],
    bad: r.non2xx + r.errors + r.timeouts,
  };
}

interface Memory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
}

/** The target's process.memoryUsage(); after a full GC with `gc`. */
async function memory(t: Target, gc = false): Promise<Memory> {
  const res = await fetch(`http://127.0.0.1:${t.port}/bench/stats${gc ? '?gc=1' : ''}`);
  if (!res.ok) throw new Error(`GET /bench/stats: ${res.status} ${await res.text()}`);
  return (await res.json()) as Memory;
}

interface Sample extends Slice {
  /** Seconds since the soak began, at the end of the slice. */
  t: number;
  rssMiB: number;
  heapMiB: number;
  /** Heap used right after a full GC: what is retained. */
  retainedMiB: number;
  deliveriesPerS: number;
}

const MiB = 2 ** 20;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

interface Verdict {
  lines: string[];
  ok: boolean;
}

/**
 * From the samples: heap slope (MiB/min) after the first minute, last-minute vs
 * second-minute median heap and p99, and whether every slice kept the rate. A
 * run too short for a first, second and last minute compares its first half
 * with its last half instead, and says so.
 */
function verdict(samples: Sample[], rate: number): Verdict {
  const end = samples[samples.length - 1]!.t;
  const afterFirst = samples.filter((s) => s.t > 60);
  const second = samples.filter((s) => s.t > 60 && s.t <= 120);
  const last = samples.filter((s) => s.t > end - 60);
  const long = afterFirst.length >= 3 && second.length > 0 && end >= 180;
  const half = Math.ceil(samples.length / 2);
  const [slopeSet, early, late, earlyName, lateName] = long
    ? [afterFirst, second, last, 'second minute', 'last minute']
    : [samples, samples.slice(0, half), samples.slice(samples.length - half), 'first half', 'last half'];
  const heapSlope = slope(slopeSet.map((s) => [s.t / 60, s.retainedMiB]));
  const sampledSlope = slope(slopeSet.map((s) => [s.t / 60, s.heapMiB]));
  const rssSlope = slope(slopeSet.map((s) => [s.t / 60, s.rssMiB]));
  const heapRatio = median(late.map((s) => s.retainedMiB)) / median(early.map((s) => s.retainedMiB));
  const rssRatio = median(late.map((s) => s.rssMiB)) / median(early.map((s) => s.rssMiB));
  const p99Early = median(early.map((s) => s.p99));
  const p99Late = median(late.map((s) => s.p99));
  const p99Ratio = p99Late / p99Early;
  const minRate = Math.min(...samples.map((s) => s.rps));
  const heapFlat = heapSlope <= HEAP_SLOPE_MAX && heapRatio <= HEAP_RATIO_MAX;
  const p99Flat = p99Ratio <= P99_RATIO_MAX;
  const rateHeld = minRate >= rate * RATE_HELD_MIN;
  const bad = samples.reduce((n, s) => n + s.bad, 0);
  const yes = (b: boolean) => (b ? '**yes**' : '**NO**');
  const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  return {
    ok: heapFlat && p99Flat && rateHeld && bad === 0,
    lines: [
      ...(long
        ? []
        : [
            `Short run: not enough samples for a first, second and last minute, so the ${earlyName} is compared with the ${lateName} and the slope is over every sample. Not a soak verdict.`,
            '',
          ]),
      `| check | measured | threshold | flat |`,
      `| --- | --- | --- | --- |`,
      `| heap after GC: least-squares slope${long ? ' after the first minute' : ''} | ${f(heapSlope)} MiB/min | <= ${HEAP_SLOPE_MAX} MiB/min | ${yes(heapSlope <= HEAP_SLOPE_MAX)} |`,
      `| heap after GC: median of the ${lateName} / median of the ${earlyName} | ${f(heapRatio, 3)} | <= ${HEAP_RATIO_MAX} | ${yes(heapRatio <= HEAP_RATIO_MAX)} |`,
      `| p99: median of the ${lateName}'s slices / the ${earlyName}'s | ${f(p99Late)} / ${f(p99Early)} ms = ${f(p99Ratio, 3)} | <= ${P99_RATIO_MAX} | ${yes(p99Flat)} |`,
      `| rate: slowest slice / soak rate | ${f(minRate, 0)} / ${f(rate, 0)} decisions/s = ${f(minRate / rate, 3)} | >= ${RATE_HELD_MIN} | ${yes(rateHeld)} |`,
      `| non-2xx answers and errors | ${bad} | 0 | ${yes(bad === 0)} |`,
      `| RSS (informational): slope, ${lateName} / ${earlyName} | ${f(rssSlope)} MiB/min, ${f(rssRatio, 3)} | | |`,
      `| heap used as sampled, before GC (informational): slope | ${f(sampledSlope)} MiB/min | | |`,
      '',
      `Verdict: ${heapFlat ? 'memory flat' : '**memory NOT flat**'}, ${p99Flat ? 'p99 flat' : '**p99 NOT flat**'}, ${rateHeld ? 'rate held' : '**rate NOT held**'}${bad === 0 ? '' : `, **${bad} failed requests**`}${long ? '' : ' (short run)'}.`,
    ],
  };
}

async function main(): Promise<void> {
  const started = new Date();
  const log = (line: string) => process.stderr.write(`[soak] ${line}\n`);
  const cluster = await startCluster({ durable: true, log: () => {} });
  const receiver = await startReceiver();
  let target: Target | undefined;
  try {
    target = await startTarget(['--database-url', cluster.url, '--webhook', receiver.url, '--stats'], ['--expose-gc']);
    const t = target;
    await load(t, WARMUP_SECONDS);
    const max = await load(t, maxSeconds);
    const rate = Math.max(1, Math.round(max.rps * share));
    log(
      `max ${max.rps.toFixed(0)} decisions/s (p50 ${max.p50} ms, p99 ${max.p99} ms, non-2xx ${max.bad}); soak at ${rate}/s for ${minutes} min`,
    );
    const before = await memory(t, true);

    const slices = Math.max(1, Math.ceil((minutes * 60) / intervalSeconds));
    const samples: Sample[] = [];
    const soakStart = Date.now();
    let delivered = receiver.count();
    let last = Date.now();
    for (let i = 0; i < slices; i++) {
      const s = await load(t, intervalSeconds, rate);
      const now = Date.now();
      const m = await memory(t);
      const retained = await memory(t, true);
      const count = receiver.count();
      const sample: Sample = {
        ...s,
        t: (now - soakStart) / 1000,
        rssMiB: m.rss / MiB,
        heapMiB: m.heapUsed / MiB,
        retainedMiB: retained.heapUsed / MiB,
        deliveriesPerS: (count - delivered) / ((now - last) / 1000),
      };
      delivered = count;
      last = now;
      samples.push(sample);
      log(
        `${sample.t.toFixed(0)} s: ${s.rps.toFixed(0)}/s p50 ${s.p50} ms p99 ${s.p99} ms, RSS ${sample.rssMiB.toFixed(1)} MiB, heap ${sample.heapMiB.toFixed(1)} MiB (${sample.retainedMiB.toFixed(1)} after GC), ${sample.deliveriesPerS.toFixed(0)} deliveries/s${s.bad ? `, ${s.bad} non-2xx/errors` : ''}`,
      );
    }

    const v = verdict(samples, rate);
    const short = minutes < 5;
    const lines = [
      `# Soak: POST /v1/decisions at ${Math.round(share * 100)}% of the maximum rate for ${minutes} min${short ? ' (SHORT RUN: not a soak result)' : ''}`,
      '',
      `${compilerVersion()}, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run soak${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`.`,
      '',
      ...machineTable('a throwaway local cluster, default durability', [
        'fastify',
        'postgres',
        'sodium-native',
        'autocannon',
      ]),
      '',
      "The target is one bench server process (bench/http/server.ts: the runtime app on PostgreSQL with its webhook dispatcher, an endpoint subscribed to every event on a receiver in the load generator's process; no replication poll or budget sweep, which `authz serve` adds). Load generator, target and PostgreSQL share this machine's cores.",
      `Request mix, in turn: ${MIX.join(', ')} (allow: unconstrained; calls: a \`calls\` budget and a rate limit; usd: a USD budget holding amount 1 for a 60 s TTL, and a rate limit; limits never reached), over ${AGENTS} agents. Each slice is a new autocannon run (${connections} connections, \`overallRate\`), so connections are re-opened every ${intervalSeconds} s.`,
      '',
      `- Maximum: **${max.rps.toFixed(0)} decisions/s** (${maxSeconds} s flat out at ${connections} connections after a ${WARMUP_SECONDS} s warm-up; p50 ${max.p50} ms, p99 ${max.p99} ms, non-2xx ${max.bad}).`,
      `- Soak rate: **${rate} decisions/s** (${Math.round(share * 100)}%), ${slices} slices of ${intervalSeconds} s.`,
      `- Target memory before the soak: RSS ${(before.rss / MiB).toFixed(1)} MiB, heap used after GC ${(before.heapUsed / MiB).toFixed(1)} MiB.`,
      '',
      '## Per interval',
      '',
      '| time s | decisions/s | p50 ms | p99 ms | RSS MiB | heap used MiB | heap after GC MiB | deliveries/s | non-2xx |',
      '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...samples.map(
        (s) =>
          `| ${s.t.toFixed(0)} | ${s.rps.toFixed(0)} | ${s.p50} | ${s.p99} | ${s.rssMiB.toFixed(1)} | ${s.heapMiB.toFixed(1)} | ${s.retainedMiB.toFixed(1)} | ${s.deliveriesPerS.toFixed(0)} | ${s.bad} |`,
      ),
      '',
      '## Verdict',
      '',
      ...v.lines,
      '',
      "After each slice: RSS and heap used as they are, then heap used again right after a full GC (`global.gc()` in the target, between slices, so it is in no slice's latency). The memory verdict is on the heap after GC, which only grows if something is retained; heap used as sampled moves with the collector.",
      '',
    ];
    const report = lines.join('\n');
    writeFileSync(out, report);
    process.stdout.write(report);
    log(`report: ${out}`);
  } finally {
    if (target) await stopTarget(target);
    await receiver.close();
    await cluster.stop();
  }
}

await main();
