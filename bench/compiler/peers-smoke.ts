/**
 * Smoke timing of the benchmark peers: for each set size, prepare Cedar and Casbin
 * and report the median (and p95) time of one decision over the generated
 * requests, after a warm-up pass. Not the benchmark itself; a quick check that
 * the adapters use their peers' APIs sensibly.
 *
 *   node dist/bench/compiler/peers-smoke.js [sizes...]   (default 10 1000 10000)
 *
 * Every (peer, size) runs in a fresh child process (`--one <peer> <n>`, printing
 * one JSON row). Besides keeping one peer's heap and JIT state out of another's
 * timings, this avoids a V8 crash seen on Node 20.20.2 ("Fatal error ...
 * unreachable code" in Deoptimizer::DoComputeBuiltinContinuation): running the
 * Cedar peer at 10k policies in a process that had already timed 1k-policy
 * sets aborted the process every time, while each run alone is fine. (Likely
 * trigger: cedar-wasm's optimised JS glue deoptimising when the wasm memory grows
 * for the bigger set; --no-opt avoids it.)
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { EvaluationInput } from '../../compiler/index.js';
import { generatePolicySet } from './generate.js';
import { prepareCasbin } from './peers/casbin.js';
import { prepareCedar } from './peers/cedar.js';

const PEERS = ['cedar', 'casbin', 'casbin-deny-override'] as const;
type PeerName = (typeof PEERS)[number];

interface Row {
  peer: PeerName;
  n: number;
  prepareMs: number;
  medianMs: number;
  p95Ms: number;
  allows: number;
  decisions: number;
}

/** Time budget for the timed pass of one (peer, size); slow peers time fewer requests. */
const BUDGET_MS = 20_000;

/** Per-decision times in ms, one sample per request, after a warm-up. */
function timeDecisions(evaluate: (r: EvaluationInput) => 'allow' | 'deny', requests: readonly EvaluationInput[]) {
  const warmStart = performance.now();
  for (let i = 0; i < Math.min(200, requests.length) && performance.now() - warmStart < BUDGET_MS / 4; i++)
    evaluate(requests[i]!);
  const samples: number[] = [];
  let allows = 0;
  const start = performance.now();
  for (const req of requests) {
    const t0 = process.hrtime.bigint();
    const answer = evaluate(req);
    const t1 = process.hrtime.bigint();
    samples.push(Number(t1 - t0) / 1e6);
    if (answer === 'allow') allows++;
    if (performance.now() - start > BUDGET_MS && samples.length >= 20) break;
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { medianMs: at(0.5), p95Ms: at(0.95), allows, decisions: samples.length };
}

async function measure(peer: PeerName, n: number): Promise<Row> {
  const { policies, requests } = generatePolicySet(n, 1);
  if (peer === 'cedar') {
    const cedar = prepareCedar(policies);
    try {
      return { peer, n, prepareMs: cedar.prepareMs, ...timeDecisions((r) => cedar.evaluate(r), requests) };
    } finally {
      cedar.dispose();
    }
  }
  const casbin = await prepareCasbin(policies, { effect: peer === 'casbin' ? 'priority' : 'deny-override' });
  return { peer, n, prepareMs: casbin.prepareMs, ...timeDecisions((r) => casbin.evaluate(r), requests) };
}

const fmt = (ms: number) => (ms >= 1 ? ms.toFixed(2) : ms >= 0.01 ? ms.toFixed(3) : ms.toFixed(4));
const header = ['peer', 'policies', 'prepare ms', 'median ms/decision', 'p95 ms', 'decisions timed', 'allow'];
const widths = [20, 8, 10, 18, 8, 15, 5];
const line = (cells: string[]) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--one') {
    const peer = args[1] as PeerName;
    if (!PEERS.includes(peer)) throw new Error(`unknown peer ${args[1]}`);
    console.log(JSON.stringify(await measure(peer, Number(args[2]))));
    return;
  }
  const sizes = args.map(Number).filter((x) => Number.isInteger(x) && x > 0);
  const script = fileURLToPath(import.meta.url);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const n of sizes.length > 0 ? sizes : [10, 1000, 10000]) {
    for (const peer of PEERS) {
      const out = execFileSync(process.execPath, [...process.execArgv, script, '--one', peer, String(n)], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
        maxBuffer: 1 << 20,
      });
      const r = JSON.parse(out.trim().split('\n').pop()!) as Row;
      console.log(
        line([
          r.peer,
          String(r.n),
          r.prepareMs.toFixed(1),
          fmt(r.medianMs),
          fmt(r.p95Ms),
          String(r.decisions),
          `${Math.round((100 * r.allows) / r.decisions)}%`,
        ]),
      );
    }
  }
}

await main();
