/**
 * `npm run bench:mcp-output`: what the gateway's output side costs per result
 * (issue 48; docs/mcp.md#what-the-gateway-reads-in-results). Target: the
 * detectors (secrets and pii, redact) add at most 1 ms p50 to a 64 KiB text
 * tool result; a result with nothing to record adds nothing else (no service
 * round trip).
 *
 * In this process, the gateway's own code (output/gate.ts) on 64 KiB text
 * results of a tool whose annotations say it stays closed (so no label of its
 * own): the same result read with no detectors and with both, in alternating
 * blocks so that both share the machine's noise; the added p50 is the
 * difference. The text is prose with the numbers results carry (dates, times,
 * prices, order numbers, versions, addresses of web pages, hex ids) and nothing
 * to find; a second text has a few findings (two e-mail addresses, a phone
 * number, an AWS key id) and is redacted. The record call is counted, not
 * made: its round trip is the one bench:mcp measures for a decision. The
 * machine's load averages are printed with the figures. Writes
 * bench/mcp/OUTPUT-REPORT.md and prints it, then the figures as JSON.
 *
 *   node dist/bench/mcp/output.js [--results 600] [--block 50]
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../../compiler/index.js';
import { OutputGate } from '../../clients/mcp-proxy/output/gate.js';
import type { OutputConfig } from '../../clients/mcp-proxy/output/config.js';
import { machineTable } from '../machine.js';

const { values } = parseArgs({ options: { results: { type: 'string' }, block: { type: 'string' } } });
const RESULTS = Number(values.results ?? 600);
const BLOCK = Number(values.block ?? 50);
const SIZE = 64 * 1024;

const SENTENCES = [
  'The quarterly review on 2026-11-28 at 10:30 covered 14 open items and 3 closed ones.',
  'Order ORD-2024-118342 shipped from warehouse 7 with 12 parcels; invoice INV-00012345 follows.',
  'Prices rose 4.5% to $45.99 per unit, see https://example.com/pricing?plan=team&seats=25 for details.',
  'Build 20261128.4 of version 1.2.3 fixed ticket #100234 and commit 9f86d081884c7d65.',
  "The meeting moved to room 301; bring the draft, the budget sheet and last year's figures.",
  'Latency p50 was 12 ms, p99 48 ms, over 2,000 requests from 192.168.100.200.',
  'Please summarise the thread and propose next steps by Friday.',
];

/** The sentences in turn from the `seed`th (until 2026-11-29 the text repeated the first sentence only: `(i * 7) % 7` is 0). */
function prose(seed: number): string {
  let out = '';
  for (let i = seed; out.length < SIZE; i++) out += `${SENTENCES[i % SENTENCES.length]} `;
  return out.slice(0, SIZE);
}

const clean = prose(1);
const withFindings =
  `${clean.slice(0, SIZE - 200)} Contact ada@example.org or grace@example.com, +44 20 7946 0958, key AKIAZ3MHJ8PTYQ2XN4WB.`.slice(
    0,
    SIZE,
  );

const base: OutputConfig = { labels: [], server_labels: false, detect: {}, phone_regions: ['US'] };
let records = 0;
const authz = {
  recordOutput: async () => {
    records++;
    return {} as never;
  },
};
const gate = (config: OutputConfig) => {
  const g = new OutputGate({ config, authz, log: () => undefined });
  g.noteTools([{ name: 'read_doc', annotations: { openWorldHint: false } }]);
  return g;
};
const plain = gate(base);
const detecting = gate({ ...base, detect: { secrets: 'redact', pii: 'redact' } });
const secretsOnly = gate({ ...base, detect: { secrets: 'redact' } });
const piiOnly = gate({ ...base, detect: { pii: 'redact' } });
const result = (text: string) => ({ content: [{ type: 'text', text }] });

const KINDS = ['plain', 'detecting', 'findings', 'secrets', 'pii'] as const;
type Kind = (typeof KINDS)[number];
const series = () => Object.fromEntries(KINDS.map((k) => [k, [] as number[]])) as Record<Kind, number[]>;
/** CPU time of each result (process.cpuUsage, user + system): on a loaded machine wall time also counts the waits for a core. */
const cpu = series();
/** CPU time per result, the mean of each block (one process.cpuUsage reading per block: no reading inside the timed results). */
const blockCpu = series();

async function timeOne(g: OutputGate, text: string, cpuTimes?: number[]): Promise<number> {
  const upstream = result(text);
  const cpuStart = process.cpuUsage();
  const started = performance.now();
  await g.answer('tools/call', 'read_doc', upstream, 'dec_bench');
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpuStart);
  cpuTimes?.push((used.user + used.system) / 1000);
  return wall;
}

const p = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const ms = (x: number) => x.toFixed(3);

async function main(): Promise<void> {
  const loadBefore = loadavg();
  for (let i = 0; i < 100; i++) {
    await timeOne(plain, clean);
    await timeOne(detecting, clean);
    await timeOne(detecting, withFindings);
  }
  records = 0;
  const times = series();
  let recordsClean = 0;
  const runs: Array<[Kind, OutputGate, string]> = [
    ['plain', plain, clean],
    ['detecting', detecting, clean],
    ['findings', detecting, withFindings],
    ['secrets', secretsOnly, clean],
    ['pii', piiOnly, clean],
  ];
  for (let done = 0; done < RESULTS; done += BLOCK) {
    for (const [kind, g, text] of runs) {
      const before = records;
      for (let i = 0; i < BLOCK; i++) times[kind].push(await timeOne(g, text, cpu[kind]));
      const started = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await g.answer('tools/call', 'read_doc', result(text), 'dec_bench');
      const used = process.cpuUsage(started);
      blockCpu[kind].push((used.user + used.system) / 1000 / BLOCK);
      if (kind !== 'findings') recordsClean += records - before;
    }
  }
  const loadAfter = loadavg();
  const added = p(times.detecting, 0.5) - p(times.plain, 0.5);
  const addedCpu = p(cpu.detecting, 0.5) - p(cpu.plain, 0.5);
  const addedBlockCpu = p(blockCpu.detecting, 0.5) - p(blockCpu.plain, 0.5);
  const figures = {
    results: RESULTS,
    bytes: SIZE,
    p50_no_detectors_ms: p(times.plain, 0.5),
    p50_detectors_ms: p(times.detecting, 0.5),
    p99_detectors_ms: p(times.detecting, 0.99),
    added_p50_ms: added,
    added_p50_cpu_ms: addedCpu,
    added_block_mean_cpu_ms: addedBlockCpu,
    p50_secrets_only_ms: p(times.secrets, 0.5),
    p50_pii_only_ms: p(times.pii, 0.5),
    p50_with_findings_cpu_ms: p(cpu.findings, 0.5),
    p50_with_findings_ms: p(times.findings, 0.5),
    records_for_results_with_nothing_to_record: recordsClean,
    records_for_results_with_findings: records - recordsClean,
    target_met: added <= 1 && recordsClean === 0,
    load_before: loadBefore,
    load_after: loadAfter,
  };
  const report = `# The gateway's output side: cost per result (\`npm run bench:mcp-output\`)

${RESULTS} tool results of ${SIZE} bytes of text each, read by the gateway's output side (clients/mcp-proxy/output/gate.ts) in this process,
in alternating blocks of ${BLOCK}: without detectors, with \`detect: { secrets: redact, pii: redact }\` on a text with nothing to find,
on one with four findings (redacted), and with each detector alone. Target (issue 48): the detectors add at most 1 ms p50; a result
with nothing to record adds no service round trip. CPU time is process.cpuUsage (user + system), which a loaded machine disturbs less
than wall time: per result (p50), and per block of ${BLOCK} divided by ${BLOCK} (the median of the blocks).

| | p50 | p99 | p50 CPU time | CPU time per result, blocks |
| --- | --- | --- | --- | --- |
${(
  [
    ['no detectors', 'plain'],
    ['secrets + pii, nothing found', 'detecting'],
    ['secrets + pii, 4 findings redacted', 'findings'],
    ['secrets alone, nothing found', 'secrets'],
    ['pii alone, nothing found', 'pii'],
  ] as Array<[string, Kind]>
)
  .map(
    ([name, k]) =>
      `| ${name} | ${ms(p(times[k], 0.5))} ms | ${ms(p(times[k], 0.99))} ms | ${ms(p(cpu[k], 0.5))} ms | ${ms(p(blockCpu[k], 0.5))} ms |`,
  )
  .join('\n')}

- Added by the detectors, p50: **${ms(added)} ms** wall, **${ms(addedCpu)} ms** CPU time (${ms(addedBlockCpu)} ms by blocks) (target at most 1 ms: ${added <= 1 ? 'met' : addedCpu <= 1 ? 'met in CPU time, not in wall time on this loaded machine' : 'NOT met'}).
- Output records for the ${RESULTS} results with nothing to record: **${recordsClean}** (each result with findings: one, ${records - recordsClean} in all).
- Load averages (1, 5, 15 min) before ${loadBefore.map((l) => l.toFixed(2)).join(', ')}, after ${loadAfter.map((l) => l.toFixed(2)).join(', ')}: on a shared machine they say how far to trust the figures.

${machineTable("none: the gateway's code in this process", ['@secretlint/secretlint-rule-preset-recommend', 'libphonenumber-js', 'ibantools']).join('\n')}
`;
  writeFileSync(join(packageRoot(), 'bench', 'mcp', 'OUTPUT-REPORT.md'), report);
  console.log(report);
  console.log(JSON.stringify(figures));
}

await main();
