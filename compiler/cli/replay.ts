/**
 * `authz replay BUNDLE --url URL --key KEY [--since 7d] [--limit N]
 * [--format text|json|github] [--quiet]`: the stored decisions of the key's
 * environment decided again against a candidate policy set, reporting every
 * decision whose effect or reason would change (compiler/replay/replay.ts says
 * what is compared). The export is read as a stream, line by line, in constant
 * memory; progress goes to stderr as it runs (every 10,000 decisions or second).
 *
 * Exit codes: 0 nothing would change; 1 something would; 2 usage error, or the
 * replay could not be done (candidate does not compile, service unreachable or
 * refusing, a malformed export): 1 always means "changes".
 */
import { githubAnnotation, renderDiagnostics } from './diagnostics-format.js';
import { EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, processIo, UsageError, wantsHelp, type CliIo } from './io.js';
import { loadPolicySet } from './load-table.js';
import { readArguments, usageProblem } from './usage.js';
import { ChangeSpool, changeRecord, LastN } from '../replay/collect.js';
import { NdjsonError, readNdjson } from '../replay/ndjson.js';
import { replayDecision, StoredDecisionError, type ReplayResult } from '../replay/replay.js';
import { ReplayHistory } from '../replay/history.js';
import { tableHistoryProbes } from '../history/probes-of.js';
import { openExport, ServiceError, serviceTime, type Service } from '../replay/service.js';
import { outcomeText, ReplaySummary } from '../replay/summary.js';
import { parseSince, windowStart } from '../replay/window.js';
import type { DecisionTable } from '../table/build.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';
const PROGRESS_EVERY = 10_000;

export const REPLAY_USAGE = `usage: authz replay BUNDLE [--url URL] [--key KEY] [--since 7d] [--limit N] [--format text|json|github] [--quiet]
  BUNDLE    the candidate: a bundle written by authz compile (.json), or policy files (a YAML file or folder)
  --url     the service (default AUTHZ_URL or ${DEFAULT_URL})
  --key     an API key with scope decisions:read (default AUTHZ_API_KEY); its environment's decisions are replayed
  --since   the window: 30m, 12h, 7d (back from the service's current time) or an ISO time (default 7d)
  --limit   only the newest N decisions of the window
  --format  text (default), json ({ replayed, changed, changes } only), github (annotations and the text report)
  --quiet   no progress lines on stderr
examples:
  authz replay policies/ --since 24h
  authz compile policies/ -o candidate.json && authz replay candidate.json --limit 1000 --format github
exit codes: 0 nothing would change, 1 something would, 2 usage error or no replay possible (candidate does not compile, service unreachable or refusing)`;

interface ReplayOptions {
  candidate: string;
  service: Service;
  since: string;
  limit: number | undefined;
  format: 'text' | 'json' | 'github';
  quiet: boolean;
}

function readOptions(argv: readonly string[], env: NodeJS.ProcessEnv): ReplayOptions {
  const { values, positionals } = readArguments(argv, {
    url: { type: 'string' },
    key: { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string' },
    format: { type: 'string' },
    quiet: { type: 'boolean' },
  });
  if (positionals.length !== 1)
    throw new UsageError(
      positionals.length === 0 ? 'missing the candidate BUNDLE' : `one BUNDLE only (got ${positionals.length})`,
    );
  const key = values.key || env.AUTHZ_API_KEY;
  if (!key) throw new UsageError('give --key or set AUTHZ_API_KEY');
  const format = values.format ?? 'text';
  if (format !== 'text' && format !== 'json' && format !== 'github')
    throw new UsageError('--format must be one of text, json, github');
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new UsageError(`--limit must be a whole number >= 1, not ${values.limit}`);
  }
  const url = (values.url || env.AUTHZ_URL || DEFAULT_URL).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(url)) throw new UsageError(`--url must be an http(s) URL, not ${url}`);
  return {
    candidate: positionals[0]!,
    service: { url, key },
    since: values.since ?? '7d',
    limit,
    format,
    quiet: values.quiet ?? false,
  };
}

/**
 * Runs `authz replay` (bin/authz.js calls it with the process's arguments).
 *
 * @param argv - the arguments after `authz replay`.
 * @param io - where to write, and the folder relative paths start from (default: the process's).
 * @param env - where AUTHZ_URL and AUTHZ_API_KEY are read (default: process.env).
 * @returns the exit code: 0 nothing would change, 1 something would, 2 usage error or no replay possible.
 *
 * @example
 * ```ts
 * import { replayCommand } from 'agent-authz/compiler';
 *
 * const lines = [];
 * const io = { out: (t) => lines.push(t), err: (t) => lines.push(t), isTTY: false, cwd: process.cwd() };
 * console.log(await replayCommand(['examples/support', '--since', 'yesterday', '--key', 'k'], io)); // => 2
 * console.log(lines[0].split('\n')[0]); // => authz replay: --since must be a duration (30m, 12h, 7d) or an ISO time, not yesterday
 * ```
 */
export async function replayCommand(
  argv: readonly string[],
  io: CliIo = processIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  if (wantsHelp(argv)) {
    io.out(REPLAY_USAGE);
    return EXIT_OK;
  }
  let options: ReplayOptions;
  let table: DecisionTable;
  try {
    options = readOptions(argv, env);
    if (!parseSince(options.since))
      throw new UsageError(`--since must be a duration (30m, 12h, 7d) or an ISO time, not ${options.since}`);
    const set = loadPolicySet(options.candidate, io.cwd);
    if (!set.ok) {
      io.err(`authz replay: ${options.candidate} does not compile:`);
      for (const line of renderDiagnostics(set.diagnostics, 'text', false, set.sources)) io.err(`  ${line}`);
      return EXIT_USAGE;
    }
    table = set.table;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(usageProblem('replay', e.message));
    return EXIT_USAGE;
  }
  const spool = options.format === 'json' && options.limit === undefined ? new ChangeSpool() : null;
  try {
    return await run(options, table, io, spool);
  } catch (e) {
    if (e instanceof ServiceError || e instanceof StoredDecisionError || e instanceof NdjsonError) {
      io.err(`authz replay: ${e.message}`);
      return EXIT_USAGE;
    }
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    io.err(`authz replay: the export broke off: ${(e as Error).message}${cause ? ` (${cause})` : ''}`);
    return EXIT_USAGE;
  } finally {
    spool?.close();
  }
}

/** What the last N results need: changed ones in full, the others as one number (1: pre-table). */
type Kept = ReplayResult | 0 | 1;

async function run(
  options: ReplayOptions,
  table: DecisionTable,
  io: CliIo,
  spool: ChangeSpool | null,
): Promise<number> {
  const since = parseSince(options.since)!;
  let now = Date.now();
  let clock = 'this machine';
  if (since.kind === 'relative') {
    const t = await serviceTime(options.service);
    if (t === null)
      io.err(
        "authz replay: warning: the service sent no Date header; the window is measured from this machine's clock",
      );
    else {
      now = t;
      clock = 'the service';
    }
  }
  const from = windowStart(since, now);
  // A candidate reading history: the export starts its longest window earlier, those decisions only feed the history.
  const longestMs = Math.max(0, ...tableHistoryProbes(table).map((p) => p.windowSeconds * 1000));
  const history = longestMs > 0 ? new ReplayHistory(longestMs) : null;
  const fromMs = Date.parse(from);
  const body = await openExport(options.service, history ? new Date(fromMs - longestMs).toISOString() : from);

  const summary = new ReplaySummary();
  const last = options.limit !== undefined ? new LastN<Kept>(options.limit) : null;
  let read = 0;
  let lastProgress = Date.now();
  const progress = () => {
    if (options.quiet) return;
    io.err(
      last
        ? `replay: ${read} decisions read`
        : `replay: ${summary.replayed} decisions replayed, ${summary.changed} would change`,
    );
    lastProgress = Date.now();
  };
  await readNdjson(body, (line) => {
    read++;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new StoredDecisionError(`line ${read} of the export is not JSON: ${line.slice(0, 120)}`);
    }
    if (history && isBefore(value, fromMs)) {
      read--;
      history.add(value as Record<string, unknown>);
      return;
    }
    let result: ReplayResult;
    try {
      result = replayDecision(table, value, history);
    } catch (e) {
      if (e instanceof StoredDecisionError)
        throw new StoredDecisionError(`line ${read} of the export is not a decision: ${e.message}`);
      throw e;
    }
    if (last) last.push(result.changed ? result : result.pre_table ? 1 : 0);
    else {
      summary.add(result);
      if (result.changed) spool?.add(changeRecord(result));
    }
    if (read % PROGRESS_EVERY === 0 || ((read & 255) === 0 && Date.now() - lastProgress >= 1000)) progress();
  });
  if (last) {
    for (const kept of last.values()) {
      if (kept === 0 || kept === 1) summary.addUnchanged(kept === 1);
      else summary.add(kept);
    }
  }
  const window =
    since.kind === 'relative' ? `the last ${since.text} (since ${from} by ${clock}'s clock)` : `since ${from}`;
  if (options.format === 'json') printJson(io, summary, spool, last);
  else
    printText(io, summary, {
      window,
      candidate: options.candidate,
      limit: options.limit,
      read,
      github: options.format === 'github',
    });
  return summary.changed > 0 ? EXIT_PROBLEMS : EXIT_OK;
}

function printJson(io: CliIo, summary: ReplaySummary, spool: ChangeSpool | null, last: LastN<Kept> | null): void {
  const head = `{"replayed":${summary.replayed},"changed":${summary.changed},"changes":[`;
  if (summary.changed === 0) {
    io.out(`${head}]}`);
    return;
  }
  // One change per line, written in blocks of about 64 KiB rather than a write per line.
  let block = head;
  const line = (json: string, isLast: boolean) => {
    block += `\n${json}${isLast ? '' : ','}`;
    if (block.length >= 65_536) {
      io.out(block);
      block = '';
    }
  };
  if (spool) spool.forEach(line);
  else {
    const changes = last!.values().filter((k): k is ReplayResult => k !== 0 && k !== 1);
    changes.forEach((r, i) => line(JSON.stringify(changeRecord(r)), i === changes.length - 1));
  }
  io.out(block === '' ? ']}' : `${block}\n]}`);
}

interface TextContext {
  window: string;
  candidate: string;
  limit: number | undefined;
  read: number;
  github: boolean;
}

function printText(io: CliIo, s: ReplaySummary, c: TextContext): void {
  const scope = c.limit !== undefined && c.read > s.replayed ? ` (the newest ${s.replayed} of ${c.read})` : '';
  io.out(
    `replayed ${s.replayed} decision${s.replayed === 1 ? '' : 's'}${scope} of ${c.window} against ${c.candidate}: ${s.changed === 0 ? 'no change' : `${s.changed} would change`}`,
  );
  const transitions = s.byCount();
  if (transitions.length > 0) {
    io.out('changes (from -> to):');
    for (const t of transitions) {
      const pre = t.pre_table ? ' [pre-table: denied before the table, replayed through it alone]' : '';
      io.out(`  ${outcomeText(t.from)} -> ${outcomeText(t.to)}: ${t.count}${pre}   e.g. ${t.samples.join(', ')}`);
      if (c.github) {
        const message = `${t.count} of ${s.replayed} replayed decisions would go from ${outcomeText(t.from)} to ${outcomeText(t.to)}${pre} (e.g. ${t.samples.join(', ')})`;
        io.out(githubAnnotation({ severity: 'warning', code: 'authz replay', message }));
      }
    }
    const top = (label: string, entries: Array<[string, number]>) => {
      if (entries.length > 0) io.out(`${label}: ${entries.map(([k, n]) => `${k} (${n})`).join(', ')}`);
    };
    top('agents most affected', s.agents.top(5));
    top('actions most affected', s.actions.top(5));
  }
  if (s.preTable > 0) {
    io.out(
      `${s.preTable} of them ${s.preTable === 1 ? 'was' : 'were'} denied before the table (agent.revoked, budget.exceeded): replayed through the table alone, a change only where the candidate would let the request through`,
    );
  }
}

/** A line of the export decided before `ms` (a decision that only feeds a replay's history). */
function isBefore(value: unknown, ms: number): boolean {
  const at =
    value !== null && typeof value === 'object' ? (value as { evaluated_at?: unknown }).evaluated_at : undefined;
  return typeof at === 'string' && Date.parse(at) < ms;
}
