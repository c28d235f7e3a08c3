/**
 * Where a decision's time goes during one load run on a target that serves
 * `GET /metrics` (`authz serve` in the bench): its group-commit batches (items
 * per store statement and each statement's round trip, for the decisions
 * written and for the limit checks) and the event loop's lag, read from the
 * target's own metrics before and after the run (docs/operations.md#metrics).
 * With the machine's busy share and the server's main thread (cpu.ts) it tells
 * waiting from working: a rate whose cores are not all busy is held by waits.
 *
 * @example
 *   const before = await scrapeMetrics(port, token);
 *   // ... load ...
 *   const w = waitsBetween(before!, (await scrapeMetrics(port, token))!); // { writeItems: 15.2, writeMs: 2.5, ... }
 */

/** prom-client's event-loop timer (collectDefaultMetrics' eventLoopMonitoringPrecision, left at its default). */
const LAG_TIMER_MS = 10;

export interface Waits {
  /** Mean decisions per write statement, and its mean round trip in ms (null: none written). */
  writeItems: number | null;
  writeMs: number | null;
  /** The same for the limit checks (authz_apply_limits). */
  limitsItems: number | null;
  limitsMs: number | null;
  /** The event loop's mean lag over the run, ms, beyond prom-client's 10 ms sampling timer (reset at each scrape). */
  loopLagMs: number | null;
}

/**
 * The target's Prometheus text (its event-loop lag statistics start over with
 * each scrape); null when it serves none (an older build under bench:compare).
 */
export async function scrapeMetrics(port: number, token: string): Promise<string | null> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return res.ok ? text : null;
}

/** The value of the sample `name{labels}` (exactly those labels; `{}`: none), or 0 when absent. */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const inner = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  const prefix = inner ? `${name}{${inner}} ` : `${name} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line ? Number(line.slice(prefix.length).split(' ')[0]) : 0;
}

/** What the run between two scrapes spent per batch and waiting for the event loop. */
export function waitsBetween(before: string, after: string): Waits {
  const delta = (name: string, batch: string) =>
    sampleValue(after, name, { batch }) - sampleValue(before, name, { batch });
  const batch = (kind: string) => {
    const n = delta('authz_store_batch_size_count', kind);
    if (n <= 0) return [null, null] as const;
    return [
      delta('authz_store_batch_size_sum', kind) / n,
      (delta('authz_store_batch_duration_seconds_sum', kind) / n) * 1000,
    ] as const;
  };
  const [writeItems, writeMs] = batch('decisions');
  const [limitsItems, limitsMs] = batch('limits');
  // prom-client samples the delay with a 10 ms timer (its default precision): a loop that never waits reads 10 ms.
  const lag = sampleValue(after, 'nodejs_eventloop_lag_mean_seconds');
  return {
    writeItems,
    writeMs,
    limitsItems,
    limitsMs,
    loopLagMs: lag > 0 ? Math.max(0, lag * 1000 - LAG_TIMER_MS) : null,
  };
}

export interface WaitsRow {
  target: string;
  scenario: string;
  rps: number;
  /** Share of all cores busy, and of one core the target's main thread used (medians of the rounds). */
  machineBusy: number;
  mainThread: number;
  /** One per round. */
  waits: Waits[];
}

const mean = (xs: Array<number | null>): number | null => {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
};
const fmt = (x: number | null, digits: number) => (x === null ? '-' : x.toFixed(digits));

/**
 * The report section: per scenario, how busy the machine and the server's main
 * thread were, the group-commit batches and the event loop's lag, and the rate
 * the same CPU per request would give with every core busy (the CPU bound), as a
 * share of bare Fastify's measured rate. Empty when no row has waits.
 */
export function waitsTable(rows: readonly WaitsRow[], bareRps: number | null, cores: number): string[] {
  if (rows.length === 0) return [];
  return [
    "## Where a decision's time goes",
    '',
    `Read during each measured run: the machine's busy share (all ${cores} cores, /proc/stat: every process, the load generator's and PostgreSQL's included), the target's main thread (the event loop; share of one core), and from the target's own /metrics the group-commit batches of the decision path (mean items per store statement and each statement's round trip until the event loop took up the answer) and the event loop's mean lag (how late a timer fires on average: a callback ready then waits that long; docs/operations.md#metrics). "CPU bound" is the rate at which this CPU per request would fill every core (req/s / busy share), as a share of bare Fastify's measured rate: what a scenario could reach here if nothing waited. Below it, the rate is held by waiting (a decision's batch round trip with every connection waiting on one), not by CPU. Means of the rounds.`,
    '',
    '| target | scenario | req/s | machine busy | main thread | CPU bound (% of bare) | write batch: items, ms | limits batch: items, ms | event-loop lag ms |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => {
      const bound = r.rps / Math.max(0.01, r.machineBusy);
      const w = (k: keyof Waits) => mean(r.waits.map((x) => x[k]));
      return `| ${r.target} | ${r.scenario} | ${r.rps.toFixed(0)} | ${(r.machineBusy * 100).toFixed(0)}% | ${(r.mainThread * 100).toFixed(0)}% | ${bound.toFixed(0)}${bareRps ? ` (${((bound / bareRps) * 100).toFixed(0)}%)` : ''} | ${fmt(w('writeItems'), 1)}, ${fmt(w('writeMs'), 2)} | ${fmt(w('limitsItems'), 1)}, ${fmt(w('limitsMs'), 2)} | ${fmt(w('loopLagMs'), 2)} |`;
    }),
    '',
  ];
}
