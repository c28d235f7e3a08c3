/**
 * `node dist/bench/http/history.js`: what history in conditions costs on
 * `authz serve` (PostgreSQL, its defaults, 200 policies), 50 connections
 * (docs/history.md). Five scenarios, interleaved over `--rounds` rounds, each
 * request in one of `--sessions` sessions: an allow whose winning policy reads
 * `history.count(ACTION, '1h') < 1e9` (session scope: every allow is recorded)
 * against the same allow without a condition, and likewise a deny; and an
 * allow whose policy also adds one label to its session (issue 51's "history
 * and a label" figure), in sessions of its own: a decision whose labels the
 * gate judges ends the history leases of its session's keys, so sharing the
 * sessions would charge the history scenarios after it for retaking every
 * lease (`--label-sessions shared` measures that worst case). Under the
 * history allow's load (in its warm-up, before the measured window, so that
 * the race's gate decisions are not charged to its figure), 200 concurrent
 * requests against `history.count('race.go', '1h') < 5` in one fresh session
 * must give exactly 5 allows. Each pair measured side by side, in alternating
 * order (roundOrder). With each scenario's req/s, the CPU each request cost the server
 * process and PostgreSQL (/proc: bench/http/cpu.ts), which contention from other
 * work on the machine moves far less than req/s. Prints the figures as JSON
 * (bench/REPORT.md gives them).
 *
 *   node dist/bench/http/history.js [--duration 8] [--rounds 2] [--connections 50] [--sessions 2000] [--label-sessions own|shared]
 */
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { startCluster } from '../../scripts/pg-cluster.js';
import { startServe } from './serve-target.js';
import { stopTarget } from './target.js';
import { clusterPids, cpuOf } from './cpu.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string' },
    sessions: { type: 'string' },
    'label-sessions': { type: 'string' },
  },
});
const duration = Number(values.duration ?? 8);
const rounds = Number(values.rounds ?? 2);
const connections = Number(values.connections ?? 50);
const sessions = Number(values.sessions ?? 2000);
const labelSessions = values['label-sessions'] ?? 'own';
if (labelSessions !== 'own' && labelSessions !== 'shared') throw new Error('--label-sessions: own or shared');

const POLICIES = [
  {
    id: 'pol_h_plain',
    name: 'h-plain',
    effect: 'allow',
    agents: ['bench-*'],
    actions: ['hist.plain'],
    resources: ['order:*'],
  },
  {
    id: 'pol_h_count',
    name: 'h-count',
    effect: 'allow',
    agents: ['bench-*'],
    actions: ['hist.counted'],
    resources: ['order:*'],
    condition: "history.count('hist.counted', '1h') < 1000000000",
  },
  {
    id: 'pol_h_label',
    name: 'h-label',
    effect: 'allow',
    agents: ['bench-*'],
    actions: ['hist.labelled'],
    resources: ['order:*'],
    condition: "history.count('hist.labelled', '1h') < 1000000000",
    labels: ['bench.read'],
  },
  { id: 'pol_h_deny', name: 'h-deny', effect: 'deny', agents: ['bench-*'], actions: ['hist.refused'] },
  {
    id: 'pol_h_deny_count',
    name: 'h-deny-count',
    effect: 'deny',
    agents: ['bench-*'],
    actions: ['hist.refusedcounted'],
    condition: "history.count('hist.refusedcounted', '1h') >= 0",
  },
  {
    id: 'pol_h_race',
    name: 'h-race',
    effect: 'allow',
    agents: ['racer-*'],
    actions: ['race.go'],
    condition: "history.count('race.go', '1h') < 5",
  },
];

const SCENARIOS = [
  { name: 'allow, no history', action: 'hist.plain', effect: 'allow' },
  { name: 'allow, history.count 1h session', action: 'hist.counted', effect: 'allow' },
  { name: 'deny, no history', action: 'hist.refused', effect: 'deny' },
  { name: 'deny, history.count 1h session', action: 'hist.refusedcounted', effect: 'deny' },
  { name: 'allow, history.count 1h session + one label', action: 'hist.labelled', effect: 'allow' },
] as const;
type Scenario = (typeof SCENARIOS)[number];

/**
 * The scenarios of round `round`: each figure beside the one it is divided by,
 * in one order in even rounds and the other in odd ones (ABBA), so that what
 * drifts over a run (the tables grow, the machine's other work) and what a
 * scenario leaves behind for the next (autovacuum after the label scenario's
 * session updates) fall on both sides alike. The label scenario comes last.
 */
function roundOrder(round: number): Scenario[] {
  const [plainAllow, allow, plainDeny, deny, label] = SCENARIOS;
  return round % 2 === 0 ? [plainAllow, allow, plainDeny, deny, label] : [allow, plainAllow, deny, plainDeny, label];
}

async function main(): Promise<void> {
  const cluster = await startCluster({ durable: true, log: () => {} });
  try {
    const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await admin.unsafe('create database authz_history');
    await admin.end();
    const databaseUrl = cluster.url.replace(/\/postgres$/, '/authz_history');
    const serve = await startServe({ databaseUrl, policies: 200 });
    const base = `http://127.0.0.1:${serve.port}`;
    const headers = { authorization: `Bearer ${serve.key}`, 'content-type': 'application/json' };
    for (const p of POLICIES) {
      const r = await fetch(`${base}/v1/policies`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ state: 'enabled', priority: 100, ...p }),
      });
      if (r.status !== 201) throw new Error(`policy ${p.id}: ${r.status} ${await r.text()}`);
    }
    let n = 0;
    const load = (action: string, seconds: number) =>
      autocannon({
        url: `${base}/v1/decisions`,
        method: 'POST',
        connections,
        duration: seconds,
        headers,
        requests: [
          {
            setupRequest: (req) => ({
              ...req,
              body: JSON.stringify({
                agent_id: `bench-${n % 50}`,
                action,
                resource: 'order:1',
                session_id: `${action === 'hist.labelled' && labelSessions === 'own' ? 'l' : 's'}-${n++ % sessions}`,
              }),
            }),
          },
        ],
      });
    const race = async (round: number) => {
      const session = `race-${round}-${Date.now()}`;
      const answers = await Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const r = await fetch(`${base}/v1/decisions`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ agent_id: `racer-${i % 5}`, action: 'race.go', session_id: session }),
          });
          return r.status === 200 ? ((await r.json()) as { effect: string }).effect : `http ${r.status}`;
        }),
      );
      return {
        allows: answers.filter((e) => e === 'allow').length,
        others: [...new Set(answers.filter((e) => e !== 'allow' && e !== 'deny'))],
      };
    };
    const figures: Record<string, number[]> = {};
    const cpu: Record<string, { server_us: number[]; postgres_us: number[] }> = {};
    const serverPid = serve.child.pid!;
    const races: Array<{ allows: number; others: string[] }> = [];
    for (let round = 0; round < rounds; round++) {
      for (const s of roundOrder(round)) {
        // Warm-up. The race runs under the history allow's load here, before its measured window: its 200
        // decisions of one session go through the limits gate one after another (a new key, contended),
        // and would otherwise be charged to the figure it is measured beside.
        const warming = load(s.action, s.action === 'hist.counted' ? 4 : 2);
        if (s.action === 'hist.counted') {
          await new Promise((r) => setTimeout(r, 1000));
          races.push(await race(round));
        }
        await warming;
        const pgPids = clusterPids(cluster.dataDir);
        const [server0, pg0] = [cpuOf([serverPid]), cpuOf(pgPids)];
        const r = await load(s.action, duration);
        if (r.non2xx + r.errors > 0) throw new Error(`${s.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
        (figures[s.name] ??= []).push(r.requests.average);
        const answered = r.requests.total;
        const c = (cpu[s.name] ??= { server_us: [], postgres_us: [] });
        c.server_us.push(Math.round(((cpuOf([serverPid]) - server0) * 1000) / answered));
        c.postgres_us.push(Math.round(((cpuOf(pgPids) - pg0) * 1000) / answered));
      }
    }
    const [countRows] = await (async () => {
      const db = postgres(databaseUrl, { max: 1, onnotice: () => {} });
      const rows =
        // The gate's rows (table and indexes), and the leased entries' index entries in the decisions (migration 029).
        await db`select (select count(*)::int from history_entries) as entries,
          (select count(*)::int from history_gate_entries) as gate_entries,
          pg_total_relation_size('history_gate_entries')::bigint as gate_bytes,
          (select coalesce(sum(pg_relation_size(t.relid)), 0)::bigint
             from unnest(array['decisions_history_by_session', 'decisions_history_by_agent', 'decisions_history_by_user',
               'decisions_history_by_environment']) i, pg_partition_tree(i::regclass) t) as decision_index_bytes`;
      await db.end();
      return rows;
    })();
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      const mid = Math.floor(sorted.length / 2);
      return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    };
    const out = Object.fromEntries(
      Object.entries(figures).map(([k, v]) => [k, { rps: v.map(Math.round), median: Math.round(median(v)) }]),
    );
    const round3 = (x: number) => Number(x.toFixed(3));
    const ratio = (a: string, b: string) => round3(median(figures[a]!) / median(figures[b]!));
    const perRound = (a: string, b: string) => figures[a]!.map((v, i) => round3(v / figures[b]![i]!));
    const allowRounds = perRound('allow, history.count 1h session', 'allow, no history');
    const denyRounds = perRound('deny, history.count 1h session', 'deny, no history');
    console.log(
      JSON.stringify(
        {
          at: new Date().toISOString(),
          connections,
          duration,
          rounds,
          sessions,
          label_sessions: labelSessions,
          loadavg: loadavg(),
          figures: out,
          cpu_per_request: cpu,
          allow_ratio: ratio('allow, history.count 1h session', 'allow, no history'),
          deny_ratio: ratio('deny, history.count 1h session', 'deny, no history'),
          history_label_ratio: ratio('allow, history.count 1h session + one label', 'allow, no history'),
          per_round_allow_ratio: allowRounds,
          per_round_deny_ratio: denyRounds,
          // The median of the rounds' ratios: each pair measured back to back, so slower changes cancel.
          median_round_allow_ratio: round3(median(allowRounds)),
          median_round_deny_ratio: round3(median(denyRounds)),
          // Rounds 0, 2, ...: the figure without history measured first; 1, 3, ...: the one with it.
          history_first_rounds: Array.from({ length: rounds }, (_, i) => i).filter((i) => i % 2 === 1),
          races,
          history_entries: countRows,
        },
        null,
        2,
      ),
    );
    await stopTarget(serve);
  } finally {
    await cluster.stop();
  }
}

await main();
