/**
 * Smoke timing of the benchmark peers: for each set size, prepare Cedar and Casbin
 * and report the median (and p95) time of one decision over the generated
 * requests, after a warm-up pass. Not the benchmark itself (see run.ts); a quick
 * check that the adapters use their peers' APIs sensibly.
 *
 *   node dist/bench/compiler/peers-smoke.js [sizes...]   (default 10 1000 10000)
 */
import type { DecisionRequest } from '../../compiler/policy/types.js';
import { generatePolicySet } from './generate.js';
import { prepareCasbin } from './peers/casbin.js';
import { prepareCedar } from './peers/cedar.js';

interface Row {
  peer: string;
  n: number;
  prepareMs: number;
  medianMs: number;
  p95Ms: number;
  allows: number;
  decisions: number;
}

/** Per-decision times in ms, one sample per request; `budgetMs` caps the timed pass for slow peers. */
function timeDecisions(evaluate: (r: DecisionRequest) => 'allow' | 'deny', requests: readonly DecisionRequest[], budgetMs: number) {
  // Warm-up: up to 200 decisions or a quarter of the budget.
  const warmStart = performance.now();
  for (let i = 0; i < Math.min(200, requests.length) && performance.now() - warmStart < budgetMs / 4; i++) evaluate(requests[i]!);
  const samples: number[] = [];
  let allows = 0;
  const start = performance.now();
  for (const req of requests) {
    const t0 = process.hrtime.bigint();
    const answer = evaluate(req);
    const t1 = process.hrtime.bigint();
    samples.push(Number(t1 - t0) / 1e6);
    if (answer === 'allow') allows++;
    if (performance.now() - start > budgetMs && samples.length >= 20) break;
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { medianMs: at(0.5), p95Ms: at(0.95), allows, decisions: samples.length };
}

const fmt = (ms: number) => (ms >= 1 ? ms.toFixed(2) : ms >= 0.01 ? ms.toFixed(3) : ms.toFixed(4));

const header = ['peer', 'policies', 'prepare ms', 'median ms/decision', 'p95 ms', 'decisions timed', 'allow'];
const widths = [22, 8, 10, 18, 8, 15, 5];
const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');

function print(r: Row) {
  console.log(
    line([r.peer, String(r.n), r.prepareMs.toFixed(1), fmt(r.medianMs), fmt(r.p95Ms), String(r.decisions), `${Math.round((100 * r.allows) / r.decisions)}%`]),
  );
}

async function main() {
  const sizes = process.argv.slice(2).map(Number).filter((x) => x > 0);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const n of sizes.length > 0 ? sizes : [10, 1000, 10000]) {
    const { policies, requests } = generatePolicySet(n, 1);
    const cedar = prepareCedar(policies);
    try {
      print({ peer: 'cedar', n, prepareMs: cedar.prepareMs, ...timeDecisions((r) => cedar.evaluate(r), requests, 20_000) });
    } finally {
      cedar.dispose();
    }
    const casbin = await prepareCasbin(policies);
    print({ peer: 'casbin', n, prepareMs: casbin.prepareMs, ...timeDecisions((r) => casbin.evaluate(r), requests, 20_000) });
    const casbinDo = await prepareCasbin(policies, { effect: 'deny-override' });
    print({ peer: 'casbin (deny-override)', n, prepareMs: casbinDo.prepareMs, ...timeDecisions((r) => casbinDo.evaluate(r), requests, 20_000) });
  }
}

await main();
