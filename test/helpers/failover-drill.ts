/**
 * The failover drill (issue 33) of test/runtime/failover.test.ts (and of
 * `npm run bench:failover`): a real `authz serve` child process on a PostgreSQL
 * primary with a synchronous standby (scripts/pg-replication.ts), reached
 * through one multi-host `DATABASE_URL` with `target_session_attrs=read-write`.
 * Each round, under a load of decisions (a USD budget, plain allows, denies)
 * and confirms of allowed charges:
 *
 * 1. load until the round has its decisions and confirms answered;
 * 2. SIGKILL of the primary (postmaster and all its processes);
 * 3. the load goes on against no primary until the service has answered
 *    `outage503` requests 503 after the kill (bounded wait);
 * 4. `pg_ctl promote` of the standby; the time from its return to the first
 *    decision answered 200 is the round's figure;
 * 5. more load on the new primary, then the load stops and the round is checked
 *    on the new primary: every decision ever answered 200 is stored with its
 *    effect and agent, every confirm answered 200 is confirmed, each USD
 *    budget's consumed equals the confirmed decisions' amounts (the ledger),
 *    and the process is alive;
 * 6. a new synchronous standby is seeded from the new primary (pg_basebackup)
 *    on the dead node's port.
 *
 * Every answer is classified: 200, 503 (with its Retry-After and code), or
 * anything else (a 500 among them) kept as `unexpected`; a 200 for a decision
 * sent after the kill and answered before the promotion began is kept in
 * `allowsWithoutPrimary`. The drill only observes: its callers judge.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import { startReplicaPair, type ReplicaPair } from '../../scripts/pg-replication.js';
import { confirmLoad, type QueuedConfirm } from './confirm-load.js';
import {
  freePort,
  HOST,
  request,
  startServeProcess,
  stopServer,
  type Reply,
  type ServeProcess,
} from './server-process.js';
import type { JsonObject } from './json.js';

export interface DrillOptions {
  rounds: number;
  /** Decisions and confirms answered in a round before its kill. */
  decisionsBeforeKill: number;
  confirmsBeforeKill: number;
  /** Decisions answered 200 after the promotion before the round is checked. */
  decisionsAfterPromotion: number;
  /** 503 answers to wait for between the kill and the promotion. */
  outage503: number;
  decisionWorkers: number;
  confirmWorkers: number;
  /** fsync on (the benchmark). */
  durable?: boolean;
  /** Extra environment of `authz serve`. */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

export interface RoundResult {
  round: number;
  /** Decisions and confirms answered 200 before the kill (this round). */
  decisionsBeforeKill: number;
  confirmsBeforeKill: number;
  /** Answers between the kill and the first 200 after the promotion, by status. */
  outageStatuses: Record<string, number>;
  /** ms from the kill to `pg_ctl promote` returning. */
  outageMs: number;
  /** ms `pg_ctl promote -w` took. */
  promoteMs: number;
  /** ms from `pg_ctl promote` returning to the first decision answered 200. */
  firstAnswerMs: number;
  /** Answered decisions (all rounds so far) missing or different in the store. */
  lost: string[];
  /** Confirms answered 200 (all rounds so far) not confirmed in the store. */
  lostConfirms: string[];
  /** Budgets whose consumed differs from the confirmed decisions' amounts. */
  ledgerMismatches: string[];
  /**
   * Whether the process's LISTEN came back on the new primary: an agent
   * revoked by a NOTIFY sent there (the store still says active) is denied
   * agent.revoked within a bounded poll. Other processes' revocations and
   * policy changes arrive that way.
   */
  listenRestored: boolean;
  /** Whether `authz serve` was running after the round. */
  alive: boolean;
}

export interface DrillResult {
  rounds: RoundResult[];
  /** Every answer that was neither 200 nor a 503 service.unavailable with Retry-After (a 500 among them). */
  unexpected: string[];
  /** 503 answers without a Retry-After header or with another code. */
  bad503: string[];
  /** Decisions sent after a kill and answered 200 before that round's promotion began. */
  allowsWithoutPrimary: string[];
  /** Requests that got no HTTP answer (connection refused or reset by the service). */
  transportErrors: number;
  /** Decisions and confirms answered 200 over the whole drill. */
  answered: number;
  confirmed: number;
  /** What `authz serve` wrote on stderr (an uncaught exception would be there). */
  stderr: string;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
}

const ADMIN_TOKEN = 'admin-token-for-failover-drill-0123456789';
const USD_LIMIT = 10_000_000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Answered {
  id: string;
  effect: string;
  agent: string;
  amount: number | null;
  /** When it was sent and answered (performance.now()), to place a lost one in its round. */
  sentAt: number;
  answeredAt: number;
}

/** Polls `done` every 10 ms until true; throws `what` after `ms`, or at once when `failed()` says why. */
async function waitFor(
  what: string,
  done: () => boolean,
  ms: number,
  state: () => string,
  failed: () => string | undefined,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    const why = failed();
    if (why) throw new Error(`${why} while waiting for ${what}: ${state()}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${state()}`);
    await sleep(10);
  }
}

/** Runs the drill; stops everything it started, also on failure. */
export async function runFailoverDrill(options: DrillOptions): Promise<DrillResult> {
  const log = options.log ?? (() => {});
  let pair: ReplicaPair | undefined;
  let server: ServeProcess | undefined;
  let stop = true;
  let workers: Promise<void>[] = [];
  try {
    pair = await startReplicaPair({ durable: options.durable, log });
    const admin = postgres(pair.primaryUrl(), { max: 1, onnotice: () => {} });
    await admin.unsafe('create database authz');
    await admin.end({ timeout: 2 });

    const port = await freePort();
    const base = `http://${HOST}:${port}`;
    server = await startServeProcess(port, {
      DATABASE_URL: pair.url('authz'),
      AUTHZ_ADMIN_TOKEN: ADMIN_TOKEN,
      AUTHZ_KEY_RATE_LIMIT: '1000000',
      ...options.env,
    });
    const proc = server;

    const account = await request(base, ADMIN_TOKEN, 'POST', '/admin/accounts', { name: 'failover' });
    if (account.status !== 201) throw new Error(`account: ${JSON.stringify(account.body)}`);
    const created = await request(base, ADMIN_TOKEN, 'POST', `/admin/accounts/${account.body.id}/api-keys`, {
      environment: 'test',
      scopes: ['*'],
    });
    if (created.status !== 201) throw new Error(`key: ${JSON.stringify(created.body)}`);
    const key = created.body.key as string;
    const api = (method: string, path: string, body?: unknown) => request(base, key, method, path, body);
    const policies = [
      {
        id: 'pol_usd',
        name: 'usd',
        effect: 'allow',
        agents: ['usd-*'],
        actions: ['payments.charge'],
        budget: { unit: 'USD', limit: USD_LIMIT, period: 'monthly' },
      },
      { id: 'pol_docs', name: 'docs', effect: 'allow', actions: ['docs.read'] },
      { id: 'pol_block', name: 'block', effect: 'deny', actions: ['files.delete'] },
    ];
    for (const p of policies) {
      const r = await api('POST', '/v1/policies', p);
      if (r.status !== 201) throw new Error(`policy ${p.id}: ${JSON.stringify(r.body)}`);
    }

    const answered: Answered[] = [];
    const confirmQueue: Array<QueuedConfirm<Answered>> = [];
    const confirmed = new Map<string, number | null>();
    const unexpected: string[] = [];
    const bad503: string[] = [];
    const allowsWithoutPrimary: string[] = [];
    let transportErrors = 0;
    /** Set at a kill, cleared when the promotion begins: no primary exists meanwhile. */
    let noPrimarySince: number | undefined;
    let outage: { statuses: Record<string, number>; since503: number } | undefined;
    let promotedAt: number | undefined;
    let firstAnswerAt: number | undefined;
    let next = 0;

    const classify = (what: string, r: Reply): boolean => {
      if (outage) outage.statuses[r.status] = (outage.statuses[r.status] ?? 0) + 1;
      if (r.status === 200) return true;
      if (r.status === 503) {
        if (outage) outage.since503++;
        const code = r.body?.error?.code;
        const retryAfter = r.headers.get('retry-after');
        if (code !== 'service.unavailable' || !retryAfter || !/^\d+$/.test(retryAfter))
          bad503.push(`${what}: code ${code}, retry-after ${retryAfter}`);
        return false;
      }
      unexpected.push(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
      return false;
    };

    const decisionWorker = async () => {
      while (!stop) {
        const i = next++;
        const slot = i % 10;
        const body: Record<string, unknown> =
          slot < 4
            ? {
                agent_id: `usd-${i % 3}`,
                action: 'payments.charge',
                resource: `invoice:${i}`,
                amount: 1 + (i % 9),
                ttl_seconds: 3600,
              }
            : slot < 9
              ? { agent_id: `docs-${i % 20}`, action: 'docs.read', resource: `doc:${i}` }
              : { agent_id: `docs-${i % 20}`, action: 'files.delete', resource: `file:${i}` };
        const sentWithoutPrimary = noPrimarySince !== undefined;
        const sentAt = performance.now();
        let r: Reply;
        try {
          r = await api('POST', '/v1/decisions', body);
        } catch {
          transportErrors++;
          await sleep(20);
          continue;
        }
        if (!classify('decision', r)) {
          await sleep(5);
          continue;
        }
        if (sentWithoutPrimary && noPrimarySince !== undefined)
          allowsWithoutPrimary.push(`${r.body.id} ${r.body.effect}`);
        if (promotedAt !== undefined && firstAnswerAt === undefined) firstAnswerAt = performance.now();
        const a: Answered = {
          id: r.body.id,
          effect: r.body.effect,
          agent: body.agent_id as string,
          amount: (body.amount as number | undefined) ?? null,
          sentAt,
          answeredAt: performance.now(),
        };
        answered.push(a);
        if (slot < 4 && a.effect === 'allow') confirmQueue.push(a);
      }
    };
    // A retry of a confirm whose 503 came after its commit (the connection died before the answer) may find it already confirmed.
    const confirmWorker = confirmLoad({
      queue: confirmQueue,
      stopped: () => stop,
      api,
      onReply: (d, amount, r) => {
        if (d.retried && r.status === 409 && r.body?.error?.code === 'decision.already_confirmed')
          confirmed.set(d.id, amount);
        else if (classify('confirm', r)) confirmed.set(d.id, amount);
        else if (r.status === 503) confirmQueue.push({ ...d, retried: true, confirmAmount: amount }); // again later, the same confirm
      },
      onTransportError: () => {
        transportErrors++;
      },
    });
    const startLoad = () => {
      stop = false;
      workers = [
        ...Array.from({ length: options.decisionWorkers }, decisionWorker),
        ...Array.from({ length: options.confirmWorkers }, confirmWorker),
      ];
    };
    const stopLoad = async () => {
      stop = true;
      await Promise.all(workers);
      workers = [];
    };
    const died = () =>
      proc.child.exitCode !== null || proc.child.signalCode !== null
        ? `authz serve exited (${proc.child.exitCode ?? proc.child.signalCode})`
        : undefined;
    const state = () =>
      `${answered.length} decisions, ${confirmed.size} confirms; unexpected ${unexpected.slice(0, 3).join('; ')}; stderr ${proc.stderr.join('').slice(-500)}`;

    /** Sends `revoked` for a fresh agent on the primary by NOTIFY until the service denies it (bounded), then `active`. */
    const listenComesBack = async (url: string, tenant: string, agent: string): Promise<boolean> => {
      const first = await api('POST', '/v1/decisions', { agent_id: agent, action: 'docs.read' });
      if (first.status !== 200 || first.body.effect !== 'allow')
        throw new Error(`probe ${agent}: ${first.status} ${JSON.stringify(first.body)}`);
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        for (let i = 0; i < 200; i++) {
          await sql`select pg_notify('authz_agents', ${`${tenant}:revoked:${agent}`})`;
          const r = await api('POST', '/v1/decisions', { agent_id: agent, action: 'docs.read' });
          if (r.status === 200 && r.body.reason === 'agent.revoked') {
            await sql`select pg_notify('authz_agents', ${`${tenant}:active:${agent}`})`;
            return true;
          }
          await sleep(50);
        }
        return false;
      } finally {
        await sql.end({ timeout: 2 });
      }
    };

    const rounds: RoundResult[] = [];
    /** Each round's kill and promotion (performance.now()), to place a lost decision. */
    const marks: Array<{ round: number; kill: number; promoted: number }> = [];
    const placed = (a: Answered) => {
      const signed = (ms: number) => `${ms < 0 ? '-' : '+'}${Math.abs(Math.round(ms))} ms`;
      // Relative to the nearest kill (a decision of the round being checked: its kill may still be ahead).
      const at = (t: number) => {
        const m = marks.reduce<(typeof marks)[number] | undefined>(
          (best, x) => (!best || Math.abs(t - x.kill) < Math.abs(t - best.kill) ? x : best),
          undefined,
        );
        return m ? `round ${m.round}'s kill ${signed(t - m.kill)}, its promotion ${signed(t - m.promoted)}` : '';
      };
      return `sent at ${at(a.sentAt)}; answered at ${at(a.answeredAt)}`;
    };
    for (let round = 1; round <= options.rounds; round++) {
      const answeredAtStart = answered.length;
      const confirmedAtStart = confirmed.size;
      startLoad();
      await waitFor(
        `round ${round}: the load before the kill`,
        () =>
          answered.length - answeredAtStart >= options.decisionsBeforeKill &&
          confirmed.size - confirmedAtStart >= options.confirmsBeforeKill,
        120_000,
        state,
        died,
      );
      const decisionsBeforeKill = answered.length - answeredAtStart;
      const confirmsBeforeKill = confirmed.size - confirmedAtStart;

      const killedAt = performance.now();
      outage = { statuses: {}, since503: 0 };
      await pair.killPrimary();
      // From here until the promotion begins no server takes writes: a request sent meanwhile cannot be stored.
      noPrimarySince = Date.now();
      await waitFor(
        `round ${round}: ${options.outage503} answers 503 without a primary`,
        () => outage!.since503 >= options.outage503,
        120_000,
        state,
        died,
      );

      noPrimarySince = undefined;
      const promoteStart = performance.now();
      await pair.promote();
      promotedAt = performance.now();
      const promoteMs = promotedAt - promoteStart;
      marks.push({ round, kill: killedAt, promoted: promotedAt });
      firstAnswerAt = undefined;
      const afterPromotion = answered.length;
      await waitFor(
        `round ${round}: the first answer after the promotion`,
        () => firstAnswerAt !== undefined,
        120_000,
        state,
        died,
      );
      const outageStatuses = outage.statuses;
      outage = undefined;
      await waitFor(
        `round ${round}: the load after the promotion`,
        () => answered.length - afterPromotion >= options.decisionsAfterPromotion,
        120_000,
        state,
        died,
      );
      await stopLoad();
      const firstAnswerMs = firstAnswerAt! - promotedAt;
      promotedAt = undefined;

      // --- the round's checks, on the new primary ---
      const sql = postgres(pair.primaryUrl('authz'), {
        max: 2,
        onnotice: () => {},
        types: { bigint: postgres.BigInt },
      });
      const lost: string[] = [];
      const lostConfirms: string[] = [];
      const ledgerMismatches: string[] = [];
      try {
        const stored = new Map<
          string,
          { effect: string; agent_id: string; status: string; amount: number | null; confirmed_amount: number | null }
        >();
        const ids = answered.map((a) => a.id);
        for (let i = 0; i < ids.length; i += 5000) {
          const rows = await sql<
            {
              id: string;
              effect: string;
              agent_id: string;
              status: string;
              amount: number | null;
              confirmed_amount: number | null;
            }[]
          >`
            select id, effect, agent_id, status, amount, confirmed_amount from decisions where id = any(${ids.slice(i, i + 5000)})`;
          for (const row of rows) stored.set(row.id, row);
        }
        for (const a of answered) {
          const s = stored.get(a.id);
          if (!s || s.effect !== a.effect || s.agent_id !== a.agent || s.amount !== a.amount)
            lost.push(`${a.id} ${a.effect} ${a.agent}: ${s ? JSON.stringify(s) : 'missing'} (${placed(a)})`);
        }
        for (const [id, amount] of confirmed) {
          const s = stored.get(id);
          if (!s || s.status !== 'confirmed' || (amount !== null && s.confirmed_amount !== amount))
            lostConfirms.push(`${id}: ${s ? JSON.stringify(s) : 'missing'}`);
        }
        // The ledger: consumed of each USD budget (the API's view) = the amounts of the decisions stored as confirmed.
        for (const agent of ['usd-0', 'usd-1', 'usd-2']) {
          const b = await api('GET', `/v1/budgets?agent_id=${agent}&limit=100`);
          const row = (b.body.data as Array<JsonObject> | undefined)?.find((x) => x.policy_id === 'pol_usd');
          const [sum] = await sql<{ cents: string | null }[]>`
            select sum(round(coalesce(confirmed_amount, amount) * 100))::text as cents from decisions
            where agent_id = ${agent} and status = 'confirmed'`;
          const consumed = row ? Math.round(Number(row.consumed) * 100) : NaN;
          if (consumed !== Number(sum?.cents ?? 0))
            ledgerMismatches.push(
              `${agent}: consumed ${row?.consumed} vs confirmed ${Number(sum?.cents ?? 0) / 100} (${b.status})`,
            );
        }
      } finally {
        await sql.end({ timeout: 2 });
      }
      const listenRestored = await listenComesBack(
        pair.primaryUrl('authz'),
        `${account.body.id}:test`,
        `probe-${round}`,
      );
      const alive = proc.child.exitCode === null && proc.child.signalCode === null;
      const result: RoundResult = {
        round,
        decisionsBeforeKill,
        confirmsBeforeKill,
        outageStatuses,
        outageMs: promoteStart - killedAt,
        promoteMs,
        firstAnswerMs,
        lost,
        lostConfirms,
        ledgerMismatches,
        listenRestored,
        alive,
      };
      rounds.push(result);
      log(
        `[failover] round ${round}: ${decisionsBeforeKill} decisions + ${confirmsBeforeKill} confirms before the kill; without a primary ${Math.round(result.outageMs)} ms, answers ${JSON.stringify(outageStatuses)}; first answer ${Math.round(firstAnswerMs)} ms after the promotion; lost ${lost.length}, confirms lost ${lostConfirms.length}, ledger mismatches ${ledgerMismatches.length}; LISTEN ${listenRestored ? 'back' : 'LOST'}; process ${alive ? 'alive' : 'DEAD'}`,
      );
      if (!alive) break;
      if (round < options.rounds) await pair.reseedStandby();
    }
    return {
      rounds,
      unexpected,
      bad503,
      allowsWithoutPrimary,
      transportErrors,
      answered: answered.length,
      confirmed: confirmed.size,
      stderr: proc.stderr.join(''),
      exit:
        proc.child.exitCode === null && proc.child.signalCode === null
          ? undefined
          : { code: proc.child.exitCode, signal: proc.child.signalCode },
    };
  } finally {
    stop = true;
    await Promise.all(workers);
    if (server) await stopServer(server);
    // Kept beside the nodes' logs (scripts/pg-replication.ts, AUTHZ_PG_PAIR_KEEP_LOGS) to look into a failure.
    const keep = process.env.AUTHZ_PG_PAIR_KEEP_LOGS;
    if (keep && server) writeFileSync(join(keep, `serve-${process.pid}-${Date.now()}.stderr`), server.stderr.join(''));
    await pair?.stop();
  }
}
