/**
 * `npm run bench`: every benchmark, one after another (each in its own process,
 * none overlapping), then one report, bench/REPORT.md: machine and versions on
 * top, the issue targets with what this run measured, then a section per topic
 * (each also kept in bench/<topic>/REPORT.md). Peers are measured in the same
 * run as ours: Cedar and Casbin in the engine topic, bare Fastify in HTTP.
 *
 *   node dist/bench/run.js [--only compiler,http] [--http-rounds 2] [--quick]
 *
 * --quick shortens every topic (smaller sets, 3 s loads): for checking the
 * suite runs, not for figures.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { compilerVersion, packageRoot } from '../compiler/index.js';
import { machineTable } from './machine.js';
import { readTargets, verdict } from './targets.js';

const { values } = parseArgs({
  options: { only: { type: 'string' }, 'http-rounds': { type: 'string' }, quick: { type: 'boolean' } },
});
const quick = values.quick === true;
const root = packageRoot();
const dist = (path: string) => join(root, 'dist', 'bench', path);

interface Topic {
  name: string;
  title: string;
  script: string;
  args: string[];
  nodeArgs?: string[];
}

const TOPICS: Topic[] = [
  {
    name: 'compiler',
    title: 'Engine and compile: ours vs Cedar and Casbin',
    script: 'compiler/run.js',
    nodeArgs: ['--expose-gc'],
    args: quick ? ['--sizes', '10,1000', '--peer-max', '1000'] : [],
  },
  {
    name: 'recompile',
    title: 'Recompile: one change in 10k policies',
    script: 'recompile/run.js',
    args: quick ? ['--policies', '1000', '--changes', '4'] : [],
  },
  {
    name: 'replay',
    title: 'Replay: 1M stored decisions against 10k policies',
    script: 'replay/run.js',
    args: quick ? ['--decisions', '100000'] : [],
  },
  {
    name: 'http',
    title: 'HTTP: POST /v1/decisions vs bare Fastify',
    script: 'http/run.js',
    args: quick ? ['--duration', '3', '--rounds', '1'] : ['--rounds', values['http-rounds'] ?? '2'],
  },
  { name: 'permits', title: 'Permit token signing', script: 'permits/sign.js', args: [] },
  { name: 'webhooks', title: 'Webhook delivery', script: 'webhooks/run.js', args: quick ? ['--events', '2000'] : [] },
  {
    name: 'mcp',
    title: 'MCP proxy: latency added per tool call',
    script: 'mcp/run.js',
    args: quick ? ['--calls', '400'] : [],
  },
  {
    name: 'profile',
    title: 'CPU profile of the decision path',
    script: 'profile/run.js',
    args: quick ? ['--duration', '3'] : [],
  },
];

/** Headings one level down, so each topic's report nests under the combined one. */
const nest = (report: string) => report.replace(/^(#+) /gm, '#$1 ');

function main(): number {
  const only = values.only ? new Set(values.only.split(',')) : null;
  const topics = TOPICS.filter((t) => !only || only.has(t.name));
  const started = Date.now();
  const failed: string[] = [];
  for (const t of topics) {
    process.stderr.write(`\n[bench] ${t.name}: ${t.title}\n`);
    // A topic that fails must not leave the previous run's figures in the report.
    for (const f of ['REPORT.md', 'targets.json']) rmSync(join(root, 'bench', t.name, f), { force: true });
    const run = spawnSync(process.execPath, [...(t.nodeArgs ?? []), dist(t.script), ...t.args], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (run.status !== 0) failed.push(`${t.name} (exit ${run.status ?? run.signal})`);
  }
  let commit = '-';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    // not a checkout
  }
  const targets = topics.flatMap((t) => readTargets(t.name));
  const lines = [
    '# agent-authz benchmarks',
    '',
    `${compilerVersion()} (commit ${commit}), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench\`${quick ? ' --quick (short runs: not figures to quote)' : ''}, ${((Date.now() - started) / 60_000).toFixed(1)} min.`,
    '',
    ...machineTable('a throwaway local cluster per topic, default durability', [
      'fastify',
      'postgres',
      '@electric-sql/pglite',
      'sodium-native',
      '@cedar-policy/cedar-wasm',
      'casbin',
      'autocannon',
    ]),
    '',
    'Everything runs on this one machine: load generator, server processes and PostgreSQL share its cores.',
    '',
    '## Targets',
    '',
    '| target | this run | |',
    '| --- | --- | --- |',
    ...targets.map((t) => `| ${t.target} | ${t.measured} | ${verdict(t.met)} |`),
    '',
    ...(failed.length ? [`Topics that failed to run: ${failed.join(', ')}.`, ''] : []),
  ];
  for (const t of topics) {
    const file = join(root, 'bench', t.name, 'REPORT.md');
    lines.push(existsSync(file) ? nest(readFileSync(file, 'utf8')).trimEnd() : `## ${t.title}\n\n(no report)`, '');
  }
  const report = lines.join('\n');
  writeFileSync(join(root, 'bench', 'REPORT.md'), report);
  process.stdout.write(report);
  return failed.length ? 1 : 0;
}

process.exitCode = main();
