/**
 * The decision log's indexes at scale (issue 51): every query the decision log
 * serves, and the cost of inserting decisions, before and after the index
 * migrations from `--split` on (a number, say 025; by default none: every
 * migration before, the same figures again after), on the same loaded log.
 *
 * 1. A throwaway PostgreSQL cluster (durable), migrated up to the migration
 *    before `--split`; `--rows` decisions (default 10,000,000) loaded in SQL
 *    over 30 days (bench/decision-log-indexes-load.ts), VACUUM (ANALYZE).
 * 2. Each query (bench/decision-log-indexes-queries.ts: the statements of
 *    runtime/store/decisions.ts, reviews.ts, sessions.ts, stats.ts,
 *    log-partitions.ts and functions/authz_session_live.sql, with literal
 *    values) under EXPLAIN (ANALYZE, BUFFERS): one warm-up, then `--runs` runs;
 *    the median execution time, the plan's shape (indexes named by their parent
 *    index, partitions counted) and its shared buffers.
 * 2b. Each secondary index dropped in turn, in a transaction rolled back: the
 *    insert (beside the insert with it, measured just before) and the queries
 *    whose plan used it (`--drop-runs` runs; 1, the default: one run, no
 *    warm-up); then decisions_list and decisions_by_time dropped together, with
 *    the lists and the export ordered by id; then no secondary index (the
 *    insert's floor).
 * 3. The insert (bench/decision-log-indexes-insert.ts): `--batches` batches of 50 decisions (the same mix) through
 *    authz_write_decisions (decisions only, no events), each under EXPLAIN
 *    ANALYZE, after a CHECKPOINT, in a transaction rolled back: median time per
 *    batch / 50, and WAL bytes per decision.
 * 4. The rest of the migrations (the index migration), timed; 2 and 3 again.
 *
 * Prints a markdown table (also to `--out`) and writes every plan to `--plans`
 * (JSON) when given. Load averages are printed with each phase.
 *
 *   node dist/bench/decision-log-indexes.js [--rows 10000000] [--runs 5] [--batches 200] [--split NNN] [--drop-runs 1] [--out FILE] [--plans FILE]
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { dayOf, partitionName } from '../runtime/store/log-partitions.js';
import { functionsDir, migrate, migrationsDir } from '../runtime/store/migrate.js';
import { startCluster } from '../scripts/pg-cluster.js';
import { AGENTS, insertCost, type Db } from './decision-log-indexes-insert.js';
import { loadDecisions } from './decision-log-indexes-load.js';
import { benchQueries, type BenchQuery } from './decision-log-indexes-queries.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string' },
    runs: { type: 'string' },
    batches: { type: 'string' },
    split: { type: 'string' },
    'drop-runs': { type: 'string' },
    out: { type: 'string' },
    plans: { type: 'string' },
  },
});
const ROWS = Number(values.rows ?? 10_000_000);
const RUNS = Number(values.runs ?? 5);
const BATCHES = Number(values.batches ?? 200);
/** Migrations whose name sorts before this are applied before the load; the rest after phase 2b. Default: past the last one. */
const SPLIT = values.split ?? '999';
/** Runs per query with an index dropped (some of them read the whole log); 1: one run, no warm-up. */
const DROP_RUNS = Number(values['drop-runs'] ?? 1);
const DAYS = 30;
const SESSIONS = 50_000;

const log = (line: string) => process.stderr.write(`${line}\n`);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

type Plan = Record<string, unknown> & { Plans?: Plan[] };
type ExplainRow = { 'QUERY PLAN': Array<Record<string, unknown>> };
interface Measured {
  ms: number;
  planningMs: number;
  shape: string;
  buffers: string;
  plan: unknown;
}

/** Child index name -> its partitioned parent's name. */
async function indexParents(sql: postgres.Sql): Promise<Map<string, string>> {
  const rows = await sql<Array<{ child: string; parent: string }>>`
    select c.relname as child, p.relname as parent from pg_inherits i
    join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent where c.relkind = 'i'`;
  return new Map(rows.map((r) => [r.child, r.parent]));
}

/** A plan as one line: node types, index names (the parent's), children grouped and counted (31x ...). */
function shape(node: Plan, parents: Map<string, string>): string {
  const index = node['Index Name'] as string | undefined;
  const rel = node['Relation Name'] as string | undefined;
  let s = node['Node Type'] as string;
  if (index) s += ` ${parents.get(index) ?? index}`;
  else if (rel) s += ` ${rel.replace(/_p\d{8}$/, '_p*')}`;
  const kids = node.Plans ?? [];
  if (kids.length === 0) return s;
  const groups = new Map<string, number>();
  for (const k of kids) {
    const t = (k['Subplan Name'] ? `${k['Subplan Name'] as string}: ` : '') + shape(k, parents);
    groups.set(t, (groups.get(t) ?? 0) + 1);
  }
  return `${s} > ${[...groups].map(([t, n]) => (n > 1 ? `${n}x ${t}` : t)).join(' + ')}`;
}

/** Runs `fn` and undoes what it did: in a transaction (or, inside one, a savepoint) rolled back. */
async function rolledBack<T>(db: Db, fn: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  let out: T | undefined;
  const body = async (tx: postgres.TransactionSql) => {
    out = await fn(tx);
    throw new RolledBack();
  };
  await ('savepoint' in db ? db.savepoint(body) : db.begin(body)).catch((e: unknown) => {
    if (!(e instanceof RolledBack)) throw e;
  });
  return out!;
}

class RolledBack extends Error {}

/** EXPLAIN (ANALYZE, BUFFERS) the query: one warm-up, then RUNS runs; the median run's figures (a write: rolled back). */
async function measure(db: Db, q: BenchQuery, parents: Map<string, string>, n = RUNS): Promise<Measured> {
  const runs: Array<{ ms: number; planningMs: number; plan: Plan }> = [];
  // No warm-up for the single runs of the drop tests (some of them read the whole log).
  for (let i = n === 1 ? 1 : 0; i <= n; i++) {
    const explain = async (tx: Db) => {
      const [row] = await tx.unsafe<ExplainRow[]>(`explain (analyze, buffers, format json) ${q.sql}`);
      return row!['QUERY PLAN'][0]!;
    };
    const out = q.write ? await rolledBack(db, explain) : await explain(db);
    if (i === 0) continue;
    runs.push({
      ms: out['Execution Time'] as number,
      planningMs: out['Planning Time'] as number,
      plan: out.Plan as Plan,
    });
  }
  runs.sort((a, b) => a.ms - b.ms);
  const median = runs[Math.floor(runs.length / 2)]!;
  const hit = median.plan['Shared Hit Blocks'] as number;
  const read = median.plan['Shared Read Blocks'] as number;
  return {
    ms: median.ms,
    planningMs: median.planningMs,
    shape: shape(median.plan, parents),
    buffers: `${hit}${read ? ` + ${read} read` : ''}`,
    plan: median.plan,
  };
}

/** The (partitioned) indexes of decisions, by name. */
async function decisionIndexes(sql: postgres.Sql): Promise<string[]> {
  const rows = await sql<Array<{ name: string }>>`
    select indexrelid::regclass::text as name from pg_index where indrelid = 'decisions'::regclass order by 1`;
  return rows.map((r) => r.name);
}

/** Each index of decisions with its size (all partitions). */
async function indexSizes(sql: postgres.Sql): Promise<string> {
  const rows = await sql<Array<{ name: string; bytes: string }>>`
    select i.relname as name, sum(pg_relation_size(t.relid))::text as bytes
    from pg_class i join pg_index x on x.indexrelid = i.oid, pg_partition_tree(i.oid) t
    where x.indrelid = 'decisions'::regclass group by 1 order by 1`;
  return rows.map((r) => `${r.name} ${(Number(r.bytes) / 2 ** 20).toFixed(0)} MiB`).join(', ');
}

/** The migrations before SPLIT, in a folder of their own (beside a link to the function files, for their \ir lines). */
function migrationsBefore(): { dir: string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'authz-idx-'));
  const dir = join(root, 'migrations');
  mkdirSync(dir);
  symlinkSync(functionsDir(), join(root, 'functions'));
  for (const name of readdirSync(migrationsDir()))
    if (name < SPLIT) symlinkSync(join(migrationsDir(), name), join(dir, name));
  return { dir, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

interface Phase {
  queries: Map<string, Measured>;
  insert: { usPerRow: number; walPerRow: number };
  load: string;
}

/** Measures `queries` and the insert on `db`, logging each figure under `name`. */
async function phase(
  db: Db,
  queries: BenchQuery[],
  name: string,
  parents: Map<string, string>,
  runs = RUNS,
): Promise<Phase> {
  const started = load();
  const measured = new Map<string, Measured>();
  for (const q of queries) {
    const m = await measure(db, q, parents, runs);
    measured.set(q.name, m);
    log(`  [${name}] ${q.name}: ${m.ms.toFixed(3)} ms (${m.buffers} buffers) ${m.shape}`);
  }
  const insert = await insertNow(db, name);
  return { queries: measured, insert, load: `${started} .. ${load()}` };
}

type Insert = Phase['insert'];

/** The insert's cost now: after a checkpoint (the same full-page images each time), in a transaction rolled back (the log stays as loaded). */
async function insertNow(db: Db, name: string): Promise<Insert> {
  await db`checkpoint`;
  const insert = await rolledBack(db, (tx) => insertCost(tx, BATCHES));
  if (!('savepoint' in db)) await vacuumInserted(db);
  log(
    `  [${name}] insert: ${insert.usPerRow.toFixed(1)} us/decision, ${insert.walPerRow.toFixed(0)} WAL bytes/decision`,
  );
  return insert;
}

/**
 * VACUUM of today's partition, where the rolled-back inserts left their dead rows and index entries (at the
 * newest end of every index, where the lists start reading); after every transaction that inserted.
 */
async function vacuumInserted(sql: postgres.Sql): Promise<void> {
  await sql.unsafe(`vacuum ${partitionName('decisions', dayOf(Date.now()))}`);
}

/** "insert x -> y us/decision, WAL x -> y B/decision". */
const insertChange = (x: Insert, y: Insert) =>
  `insert ${x.usPerRow.toFixed(1)} -> ${y.usPerRow.toFixed(1)} us/decision, WAL ${x.walPerRow.toFixed(0)} -> ${y.walPerRow.toFixed(0)} B/decision`;

/** Whether a plan shape names this index. */
const uses = (m: Measured, index: string) => new RegExp(`\\b${index}\\b`).test(m.shape);

/** Markdown: the queries of `b` beside their figures in `a` (when there). */
function rows(qs: BenchQuery[], a: Phase, b: Phase): string[] {
  return qs.map((q) => {
    const x = a.queries.get(q.name);
    const y = b.queries.get(q.name)!;
    const same = x?.shape === y.shape ? 'same' : y.shape;
    return `| ${q.name} | ${x ? x.ms.toFixed(3) : '-'} | ${y.ms.toFixed(3)} | ${x ? `${x.shape} (${x.buffers})` : '-'} | ${same} (${y.buffers}) |`;
  });
}

const HEAD = [
  '| query | with ms | without ms | plan with (buffers) | plan without (buffers) |',
  '| --- | ---: | ---: | --- | --- |',
];

async function main(): Promise<void> {
  const cluster = await startCluster({ durable: true, log });
  const before = migrationsBefore();
  try {
    const sql = postgres(cluster.url, { max: 1, onnotice: () => {} });
    await migrate(sql, { dir: before.dir, functionsDir: functionsDir() });
    const endMs = Date.now() - 60_000;
    log(`loading ${ROWS.toLocaleString('en-US')} decisions (load ${load()})`);
    const t0 = performance.now();
    await loadDecisions(sql, { rows: ROWS, days: DAYS, agents: AGENTS, sessions: SESSIONS, endMs, log });
    const loadS = (performance.now() - t0) / 1000;
    const [{ n, bytes }] = await sql<
      Array<{ n: string; bytes: string }>
    >`select (select count(*) from decisions)::text as n,
      (select pg_size_pretty(sum(pg_total_relation_size(relid))) from pg_partition_tree('decisions'))::text as bytes`;
    log(`loaded ${n} decisions in ${loadS.toFixed(0)} s, ${bytes} with indexes (load ${load()})`);
    const { queries, byId } = await benchQueries(sql, { endMs, days: DAYS, sessions: SESSIONS });
    const parents = await indexParents(sql);
    const sizesBefore = await indexSizes(sql);
    const lines: string[] = [];

    // 1. Every query with the indexes as they are.
    const a = await phase(sql, queries, 'before', parents);

    // 2. Each secondary index dropped in turn (a transaction rolled back): the queries whose plan used it.
    lines.push('### Without one index (dropped in a transaction rolled back): the queries whose plan used it', '');
    const indexes = (await decisionIndexes(sql)).filter((i) => i !== 'decisions_pkey');
    for (const index of indexes) {
      const used = queries.filter((q) => uses(a.queries.get(q.name)!, index));
      // The insert with the index measured just before the one without it (the same cache state).
      const withIt = await insertNow(sql, `with ${index}`);
      const without = await rolledBack(sql, async (tx) => {
        await tx.unsafe(`drop index ${index}`);
        return phase(tx, used, `without ${index}`, parents, DROP_RUNS);
      });
      await vacuumInserted(sql);
      lines.push(
        `**${index}** (${insertChange(withIt, without.insert)})`,
        '',
        ...(used.length ? [...HEAD, ...rows(used, a, without)] : ['No query used it.']),
        '',
      );
    }

    // 3. Lists and the export ordered by id: decisions_list and decisions_by_time dropped (rolled back).
    // (The queries that used them are measured without them above.)
    const pair = ['decisions_list', 'decisions_by_time'];
    const withPair = await insertNow(sql, 'with both');
    const idOrdered = await rolledBack(sql, async (tx) => {
      for (const i of pair) await tx.unsafe(`drop index ${i}`);
      return phase(tx, byId, 'ordered by id', parents, RUNS);
    });
    await vacuumInserted(sql);
    lines.push(
      `### Ordered by id: without ${pair.join(' and ')} (${insertChange(withPair, idOrdered.insert)})`,
      '',
      ...HEAD,
      ...rows(byId, a, idOrdered),
      '',
    );

    // 4. The floor: no secondary index at all (rolled back).
    const withAll = await insertNow(sql, 'with all');
    const bare = await rolledBack(sql, async (tx) => {
      for (const i of indexes) await tx.unsafe(`drop index ${i}`);
      return phase(tx, [], 'primary key only', parents);
    });
    await vacuumInserted(sql);

    // 5. The migrations from SPLIT on, then every query again.
    const m0 = performance.now();
    const applied = await migrate(sql);
    const migrateMs = performance.now() - m0;
    log(`applied ${applied.join(', ') || 'nothing'} in ${migrateMs.toFixed(0)} ms`);
    const b = await phase(sql, queries, 'after', parents);
    const sizesAfter = await indexSizes(sql);
    await sql.end();

    const report = [
      `${Number(n).toLocaleString('en-US')} decisions (${bytes} with indexes, loaded in ${loadS.toFixed(0)} s), ${DAYS} days; ` +
        `median of ${RUNS} runs after a warm-up, EXPLAIN (ANALYZE, BUFFERS) execution time (ms); insert: median of ` +
        `${BATCHES} batches of 50 through authz_write_decisions, PostgreSQL time per decision. Before: migrations < ${SPLIT}; ` +
        `after: ${applied.join(', ') || 'none'} (applied in ${migrateMs.toFixed(0)} ms). Load average before ${a.load}, after ${b.load}.`,
      '',
      '### Before and after',
      '',
      '| query | before ms | after ms | plan before (buffers) | plan after (buffers) |',
      '| --- | ---: | ---: | --- | --- |',
      ...rows(queries, a, b),
      '',
      '| insert | before | after | every index (again) | primary key only (just after) |',
      '| --- | ---: | ---: | ---: | ---: |',
      `| PostgreSQL time per decision | ${[a, b, { insert: withAll }, bare].map((p) => `${p.insert.usPerRow.toFixed(1)} us`).join(' | ')} |`,
      `| WAL bytes per decision | ${[a, b, { insert: withAll }, bare].map((p) => p.insert.walPerRow.toFixed(0)).join(' | ')} |`,
      '',
      `Index sizes before: ${sizesBefore}.`,
      '',
      `Index sizes after: ${sizesAfter}.`,
      '',
      ...lines,
    ].join('\n');
    process.stdout.write(`${report}\n`);
    if (values.out) writeFileSync(values.out, `${report}\n`);
    if (values.plans) {
      const plans = queries.map((q) => ({
        name: q.name,
        sql: q.sql,
        before: a.queries.get(q.name)!.plan,
        after: b.queries.get(q.name)!.plan,
      }));
      writeFileSync(values.plans, JSON.stringify(plans, null, 1));
    }
  } finally {
    before.cleanup();
    await cluster.stop();
  }
}

await main();
