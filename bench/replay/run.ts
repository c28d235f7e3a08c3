/**
 * `npm run bench:replay`: `authz replay` of 1,000,000 synthetic stored decisions
 * against a bundle of 10,000 policies (bench/compiler/generate.ts). Writes
 * bench/replay/REPORT.md and targets.json.
 *
 * - Evaluation: the candidate table deciding the stored requests in this process,
 *   1,000,000 evaluations (best of five passes): evaluations per second.
 * - End to end: a real `node bin/authz.js replay BUNDLE --format json` child
 *   reading the export, chunked NDJSON, from a server on 127.0.0.1 in this
 *   process (which makes each line on demand): decisions per second from the
 *   first byte served to the child's exit, and the child's peak RSS (VmHWM from
 *   /proc, read until it exits).
 *
 * The stored decisions cycle through the generator's 10,000 requests, each
 * stored as the live set decided it; the candidate flips the effect of one exact
 * policy in twenty, so some decisions change.
 *
 *   node dist/bench/replay/run.js [--decisions 1000000] [--policies 10000]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  compileItems,
  compilerVersion,
  createBundle,
  evaluate,
  packageRoot,
  readPolicyValue,
  type DecisionTable,
  type Policy,
} from '../../compiler/index.js';
import { generatePolicySet } from '../compiler/generate.js';
import { writeTargets } from '../targets.js';

const { values } = parseArgs({ options: { decisions: { type: 'string' }, policies: { type: 'string' } } });
const DECISIONS = Number(values.decisions ?? 1_000_000);
const POLICIES = Number(values.policies ?? 10_000);
const REQUESTS = 10_000;
const TARGET_PER_SECOND = 200_000;
const KEY = 'svc_test_sk_benchreplay0000000000000000000000';

function compile(policies: readonly Policy[]): DecisionTable {
  const items = policies.flatMap((p) => readPolicyValue(p).items);
  const result = compileItems(items, { lint: false });
  if (!result.table) throw new Error(`bench set does not compile: ${result.diagnostics[0]?.message}`);
  return result.table;
}

/** Peak resident set size of a live process, in bytes (Linux), or NaN. */
function peakRss(pid: number): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

async function main(): Promise<void> {
  const load = loadavg()[0]!;
  const { policies, requests } = generatePolicySet(POLICIES, 1, { requests: REQUESTS });
  const live = compile(policies);
  let flipped = 0;
  const candidatePolicies = policies.map((p, i) => {
    if (i % 20 !== 0 || !p.agents || p.agents.some((a) => a.includes('*'))) return p;
    flipped++;
    return {
      ...p,
      effect: p.effect === 'allow' ? ('deny' as const) : ('allow' as const),
      priority: p.effect === 'allow' ? 50 : 500,
    };
  });
  const candidate = compile(candidatePolicies);
  const dir = mkdtempSync(join(tmpdir(), 'authz-bench-replay-'));
  const bundleFile = join(dir, 'candidate.json');
  writeFileSync(bundleFile, JSON.stringify(createBundle(candidate)));

  // Each stored decision: `{"id":"dec_<n>",` + the tail of its request's decision.
  const tails = requests.map((request) => {
    const e = evaluate(live, request);
    const body = {
      object: 'decision',
      effect: e.effect,
      reason: e.reason,
      agent_id: request.agent_id,
      action: request.action,
      resource: request.resource ?? null,
      amount: null,
      policy_id: e.policy_id,
      status: e.effect === 'deny' ? 'denied' : 'confirmed',
      evaluated_at: '2026-11-20T09:00:00.000Z',
      livemode: false,
      metadata: { matched_policy_ids: e.matched.map((p) => p.id), warnings: e.warnings },
      context: { channel: 'chat', session: 'run-42' },
    };
    return `${JSON.stringify(body).slice(1)}\n`;
  });
  const expectedChanges = (() => {
    let changed = 0;
    for (let i = 0; i < DECISIONS; i++) {
      const r = requests[i % REQUESTS]!;
      const a = evaluate(live, r);
      const b = evaluate(candidate, r);
      if (a.effect !== b.effect || a.reason !== b.reason) changed++;
    }
    return changed;
  })();

  // 1. Evaluation alone.
  const passes: number[] = [];
  for (let pass = 0; pass < 5; pass++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < DECISIONS; i++) evaluate(candidate, requests[i % REQUESTS]!);
    passes.push(DECISIONS / (Number(process.hrtime.bigint() - t0) / 1e9));
  }
  const evalPerSecond = Math.max(...passes);
  process.stderr.write(`evaluation: ${Math.round(evalPerSecond).toLocaleString('en-US')}/s\n`);

  // 2. End to end through the CLI.
  let firstByte = 0;
  const server = createServer((req, res) => {
    if ((req.url ?? '').startsWith('/v1/decisions/export')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      firstByte = performance.now();
      let i = 0;
      const pump = () => {
        while (i < DECISIONS) {
          let chunk = '';
          for (let k = 0; k < 256 && i < DECISIONS; k++, i++) chunk += `{"id":"dec_${i}",${tails[i % REQUESTS]}`;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const child = spawn(
    process.execPath,
    [
      join(packageRoot(), 'bin', 'authz.js'),
      'replay',
      bundleFile,
      '--url',
      `http://127.0.0.1:${port}`,
      '--key',
      KEY,
      '--since',
      '2026-11-01T00:00:00Z',
      '--format',
      'json',
      '--quiet',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let peak = 0;
  const poll = setInterval(() => {
    const p = peakRss(child.pid!);
    if (p > peak) peak = p;
  }, 50);
  let head = '';
  child.stdout.setEncoding('utf8').on('data', (t: string) => {
    if (head.length < 200) head += t.slice(0, 200);
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const ended = performance.now();
  clearInterval(poll);
  server.close();
  rmSync(dir, { recursive: true, force: true });
  const summary = /^\{"replayed":(\d+),"changed":(\d+)/.exec(head);
  if (code !== 1 || !summary) throw new Error(`authz replay exited ${code}: ${head}`);
  if (Number(summary[1]) !== DECISIONS || Number(summary[2]) !== expectedChanges) {
    throw new Error(
      `authz replay counted ${summary[1]} replayed / ${summary[2]} changed; expected ${DECISIONS} / ${expectedChanges}`,
    );
  }
  const e2ePerSecond = DECISIONS / ((ended - firstByte) / 1000);
  process.stderr.write(
    `end to end: ${Math.round(e2ePerSecond).toLocaleString('en-US')}/s, peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB\n`,
  );

  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const report = [
    '# Replay benchmark',
    '',
    `${compilerVersion()}, Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${new Date().toISOString().slice(0, 10)}.`,
    `${n(DECISIONS)} synthetic stored decisions (the ${n(REQUESTS)} requests of bench/compiler/generate.ts in turn) against a bundle of ${n(POLICIES)} policies; the candidate flips ${flipped} of them, which changes ${n(expectedChanges)} decisions.`,
    '',
    '| measure | figure |',
    '| --- | ---: |',
    `| evaluation alone (candidate table, best of 5 passes) | ${n(evalPerSecond)} decisions/s |`,
    `| end to end: \`authz replay --format json\` reading the export over HTTP (parse, evaluate, compare, spool the changes) | ${n(e2ePerSecond)} decisions/s |`,
    `| end to end: wall time from the first byte served to the exit | ${((ended - firstByte) / 1000).toFixed(1)} s |`,
    `| peak RSS of the \`authz replay\` process | ${(peak / 2 ** 20).toFixed(0)} MiB |`,
    '',
    `The export server runs in the benchmark process, on the same cores as the CLI it feeds. Load average (1 min) when the run started: ${load.toFixed(1)} on ${cpus().length} cores.`,
    '',
  ].join('\n');
  process.stdout.write(report);
  writeFileSync(join(packageRoot(), 'bench', 'replay', 'REPORT.md'), report);
  writeTargets('replay', [
    {
      target: `replay: >= ${n(TARGET_PER_SECOND)} evaluations/s against ${n(POLICIES)} policies`,
      measured: `${n(evalPerSecond)}/s (end to end ${n(e2ePerSecond)}/s, peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB)`,
      met: evalPerSecond >= TARGET_PER_SECOND,
    },
  ]);
}

await main();
