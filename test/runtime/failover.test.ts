/**
 * Failover (issue 33): `authz serve` on a PostgreSQL primary with a synchronous
 * streaming-replication standby, through a multi-host DATABASE_URL with
 * target_session_attrs=read-write; under a load of decisions and confirms the
 * primary is SIGKILLed, the service is left without a primary until it has
 * answered 503s, the standby is promoted (`pg_ctl promote`), and a new
 * standby is seeded from the new primary; ten kills in a row
 * (test/helpers/failover-drill.ts does the rounds and observes).
 *
 * Checked: no decision answered 200 is lost and none differs, every confirm
 * answered 200 is confirmed, each budget's consumed equals its confirmed
 * decisions (the ledger); while no primary existed every answer was 503
 * service.unavailable with Retry-After (never a 500, never a decision); the
 * process is alive after every kill and wrote no uncaught exception; decisions
 * are answered again after each promotion (the time is logged, not asserted:
 * the figure is the benchmark's, docs/operations.md).
 *
 * Needs initdb, pg_basebackup and pg_ctl (.ci/run installs PostgreSQL): without
 * them it fails, naming them. FAILOVER_BENCH=1 (npm run bench:failover) runs it
 * with fsync on and prints the figures.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findReplicationBinDir,
  REPLICATION_TOOLS,
  startReplicaPair,
  type ReplicaPair,
} from '../../scripts/pg-replication.js';
import { isStoreUnavailable } from '../../runtime/store/unavailable.js';
import { runFailoverDrill, type DrillResult } from '../helpers/failover-drill.js';
import { ensureBuilt } from '../helpers/server-process.js';

const ROUNDS = Number(process.env.FAILOVER_ROUNDS || 10);
const bench = process.env.FAILOVER_BENCH === '1';

describe('target_session_attrs=read-write on a primary and a hot standby (the patched postgres.js)', () => {
  let pair: ReplicaPair;
  beforeAll(async () => {
    pair = await startReplicaPair({ log: () => {} });
  });
  afterAll(async () => {
    await pair?.stop();
  });
  const host = (port: number | undefined) => `127.0.0.1:${port}`;
  const inRecovery = async (url: string) => {
    const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
    try {
      const [row] = await sql<Array<{ standby: boolean }>>`select pg_is_in_recovery() as standby`;
      return row!.standby;
    } finally {
      await sql.end({ timeout: 1 });
    }
  };

  it('the standby listed first: read-write connects to the primary (PostgreSQL 14+ reports default_transaction_read_only off on a standby)', async () => {
    const url = `postgres://postgres@${host(pair.standbyPort())},${host(pair.primaryPort())}/postgres?target_session_attrs=read-write`;
    for (let i = 0; i < 3; i++) expect(await inRecovery(url)).toBe(false);
  });

  it('only standbys reachable: read-write fails (unavailable) instead of waiting for ever; read-only and standby take the standby', async () => {
    const standbyTwice = `${host(pair.standbyPort())},${host(pair.standbyPort())}`;
    const error = await inRecovery(`postgres://postgres@${standbyTwice}/postgres?target_session_attrs=read-write`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, 'read-write must not accept a standby').toBeDefined();
    expect(isStoreUnavailable(error), String(error)).toBe(true);
    expect(await inRecovery(`postgres://postgres@${standbyTwice}/postgres?target_session_attrs=read-only`)).toBe(true);
    expect(
      await inRecovery(
        `postgres://postgres@${host(pair.primaryPort())},${host(pair.standbyPort())}/postgres?target_session_attrs=standby`,
      ),
    ).toBe(true);
  });
});

describe('failover: the primary SIGKILLed under load, the standby promoted, ten times', () => {
  beforeAll(() => {
    ensureBuilt();
  });

  it('needs the PostgreSQL server tools (initdb, pg_basebackup, pg_ctl)', () => {
    // Throws naming the missing tools: the failover test must not pass without them.
    expect(findReplicationBinDir()).toMatch(/\S/);
  });

  it('without the server tools it fails with a message naming the missing ones', () => {
    const dir = mkdtempSync(join(tmpdir(), 'authz-pg-tools-'));
    try {
      const empty = join(dir, 'empty');
      const onlyInitdb = join(dir, 'only-initdb');
      const root = join(dir, 'postgresql');
      for (const d of [empty, onlyInitdb, join(root, '15', 'bin')]) mkdirSync(d, { recursive: true });
      writeFileSync(join(onlyInitdb, 'initdb'), '');
      for (const tool of REPLICATION_TOOLS) writeFileSync(join(root, '15', 'bin', tool), '');

      expect(() => findReplicationBinDir(empty, join(dir, 'none'))).toThrow(
        /PostgreSQL server tools missing for the failover test: initdb, pg_ctl, pg_basebackup, postgres; install/,
      );
      // initdb found on PATH, the rest not beside it.
      expect(() => findReplicationBinDir(onlyInitdb, join(dir, 'none'))).toThrow(
        `missing for the failover test: pg_ctl, pg_basebackup, postgres (not beside ${onlyInitdb}/initdb)`,
      );
      // All four under <root>/<version>/bin: found there.
      expect(findReplicationBinDir(empty, root)).toBe(join(root, '15', 'bin'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(
    'loses no answered decision or confirm, keeps the ledger, fails closed with 503 while no primary exists, and the process survives every kill',
    async () => {
      const lines: string[] = [];
      const result: DrillResult = await runFailoverDrill({
        rounds: ROUNDS,
        decisionsBeforeKill: 150,
        confirmsBeforeKill: 10,
        decisionsAfterPromotion: 30,
        outage503: 10,
        decisionWorkers: 8,
        confirmWorkers: 2,
        durable: bench,
        // Decisions that wait on the store answer 503 after 2 s (instead of 10 s).
        env: { AUTHZ_DECISION_DEADLINE_MS: '2000' },
        log: (line) => {
          lines.push(line);
          console.log(line);
        },
      });
      const failure = `${lines.join('\n')}\nstderr of authz serve:\n${result.stderr.slice(-3000)}`;

      // The figures (counted, not assumed), printed before they are judged: the report and the benchmark's.
      const ms = result.rounds.map((r) => Math.round(r.firstAnswerMs)).sort((a, b) => a - b);
      const median = ms.length % 2 ? ms[(ms.length - 1) / 2]! : (ms[ms.length / 2 - 1]! + ms[ms.length / 2]!) / 2;
      const lostCount = result.rounds.reduce((n, r) => n + r.lost.length + r.lostConfirms.length, 0);
      const http500 = result.unexpected.filter((u) => /^\w+: 500 /.test(u)).length;
      const alive = result.rounds.filter((r) => r.alive).length;
      console.log(
        `[failover] ${result.rounds.length} kills${bench ? ' (fsync on)' : ''}: ${result.answered} decisions and ${result.confirmed} confirms answered, ${lostCount} lost, ${http500} answers 500 (${result.unexpected.length} neither 200 nor 503), ${result.allowsWithoutPrimary.length} answered 200 without a primary; process alive after ${alive} of ${result.rounds.length} kills; first answer after the promotion: min ${ms[0]} ms, median ${median} ms, max ${ms.at(-1)} ms; promote ${result.rounds.map((r) => Math.round(r.promoteMs)).join('/')} ms`,
      );

      expect(result.exit, failure).toBeUndefined();
      expect(result.stderr, failure).not.toMatch(/uncaught|TypeError|Cannot read properties/i);
      expect(result.rounds.length, failure).toBe(ROUNDS);
      for (const r of result.rounds) {
        expect(r.alive, `round ${r.round}`).toBe(true);
        expect(r.lost, `round ${r.round}: decisions lost`).toEqual([]);
        expect(r.lostConfirms, `round ${r.round}: confirms lost`).toEqual([]);
        expect(r.ledgerMismatches, `round ${r.round}: ledger`).toEqual([]);
        expect(r.listenRestored, `round ${r.round}: LISTEN on the new primary`).toBe(true);
        expect(r.decisionsBeforeKill).toBeGreaterThanOrEqual(150);
        // Without a primary: 503s (the drill waited for them), nothing else but 200s of requests sent before the kill.
        expect(r.outageStatuses['503'], `round ${r.round}: ${JSON.stringify(r.outageStatuses)}`).toBeGreaterThanOrEqual(
          10,
        );
        expect(
          Object.keys(r.outageStatuses).filter((s) => s !== '200' && s !== '503'),
          `round ${r.round}`,
        ).toEqual([]);
      }
      expect(result.unexpected, failure).toEqual([]);
      expect(result.bad503, failure).toEqual([]);
      expect(result.allowsWithoutPrimary, failure).toEqual([]);
      expect(result.transportErrors, failure).toBe(0);
    },
    15 * 60_000,
  );
});
