/**
 * `npm run bench:agentdojo`: AgentDojo's ground-truth traces replayed as
 * decisions (replay.ts) through `authz serve` on the embedded store, with the
 * policy pack built from the tool classification (pack.ts), once per pack
 * rule. Writes bench/agentdojo/REPORT.md: per suite, the injection pairs whose
 * exit call was stopped (denied or held for review) and the user tasks that
 * passed untouched.
 *
 *   node dist/bench/agentdojo/run.js [--suites banking,slack,travel,workspace] [--write-examples]
 *
 * --write-examples rewrites the shipped pack, examples/agentdojo/<suite>.yaml
 * (the trifecta rule; test/bench/agentdojo.test.ts checks they are current), and stops.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { compileSources, createBundle, packageRoot } from '../../compiler/index.js';
import { startServe } from '../http/serve-target.js';
import { stopTarget } from '../http/target.js';
import { PACK_RULES, suitePack, type PackRule } from './pack.js';
import { replaySuite, type Decide, type SuiteResult } from './replay.js';
import { loadTraces } from './traces.js';

const { values } = parseArgs({ options: { suites: { type: 'string' }, 'write-examples': { type: 'boolean' } } });
const traces = loadTraces();
const suites = (values.suites ?? Object.keys(traces.suites).join(',')).split(',');

/** The pack of every suite for one rule, as a bundle's JSON text. */
function packBundle(rule: PackRule): string {
  const files = suites.map((s) => ({ file: `agentdojo-${s}.yaml`, text: suitePack(s, traces.suites[s]!, rule) }));
  const { table, diagnostics } = compileSources(files);
  if (!table) throw new Error(`the pack does not compile: ${diagnostics.map((d) => d.message).join('; ')}`);
  return JSON.stringify(createBundle(table));
}

async function runRule(rule: PackRule): Promise<SuiteResult[]> {
  const serve = await startServe({ bundle: packBundle(rule) });
  const decide: Decide = async (request) => {
    const res = await fetch(`http://127.0.0.1:${serve.port}/v1/decisions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${serve.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const body = (await res.json()) as { effect?: string };
    if (!res.ok || !body.effect) throw new Error(`POST /v1/decisions: ${res.status} ${JSON.stringify(body)}`);
    return body.effect;
  };
  try {
    const results: SuiteResult[] = [];
    for (const s of suites) results.push(await replaySuite(s, traces.suites[s]!, decide, rule));
    return results;
  } finally {
    await stopTarget(serve);
  }
}

const pct = (n: number, d: number) => `${((n / Math.max(1, d)) * 100).toFixed(0)}%`;

/** The shipped pack: the trifecta rule, one file per suite. */
export const EXAMPLE_RULE: PackRule = 'trifecta';

async function main(): Promise<void> {
  if (values['write-examples']) {
    for (const s of Object.keys(traces.suites))
      writeFileSync(
        join(packageRoot(), 'examples', 'agentdojo', `${s}.yaml`),
        suitePack(s, traces.suites[s]!, EXAMPLE_RULE),
      );
    return;
  }
  const lines = [
    '# AgentDojo replayed as decisions',
    '',
    "AgentDojo v1's ground-truth traces (bench/agentdojo/data/README.md) replayed through `authz serve` (embedded store) with a policy pack built only from the tool classification (bench/agentdojo/pack.ts): reads of untrusted content label the session `untrusted`, reads of private data `private`; an exit is held for review when the rule holds. Utility: a user task's calls in a session of their own, all allowed. Security: a user task's calls up to its first read of an injection vector, then the injection task's calls: stopped when an exit call of the injection is denied or held. No model is in the loop: this measures the policy, not an agent's choices.",
    '',
  ];
  for (const rule of PACK_RULES) {
    const results = await runRule(rule);
    const total = results.reduce(
      (a, r) => ({
        u: a.u + r.userTasks,
        ok: a.ok + r.untouched,
        p: a.p + r.pairs,
        s: a.s + r.stoppable,
        x: a.x + r.stopped,
      }),
      {
        u: 0,
        ok: 0,
        p: 0,
        s: 0,
        x: 0,
      },
    );
    lines.push(
      `## Rule \`${rule}\``,
      '',
      '| suite | injection pairs stopped | of pairs with an exit | user tasks untouched |',
      '| --- | ---: | ---: | ---: |',
      ...results.map(
        (r) =>
          `| ${r.suite} | ${r.stopped} / ${r.pairs} (${pct(r.stopped, r.pairs)}) | ${r.stopped} / ${r.stoppable} (${pct(r.stopped, r.stoppable)}) | ${r.untouched} / ${r.userTasks} (${pct(r.untouched, r.userTasks)}) |`,
      ),
      `| all | ${total.x} / ${total.p} (${pct(total.x, total.p)}) | ${total.x} / ${total.s} (${pct(total.x, total.s)}) | ${total.ok} / ${total.u} (${pct(total.ok, total.u)}) |`,
      '',
    );
    process.stderr.write(`${rule}: stopped ${total.x}/${total.p}, untouched ${total.ok}/${total.u}\n`);
  }
  const report = `${lines.join('\n')}\n`;
  process.stdout.write(report);
  writeFileSync(join(packageRoot(), 'bench', 'agentdojo', 'REPORT.md'), report);
}

await main();
