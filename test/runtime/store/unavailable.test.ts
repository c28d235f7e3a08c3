/**
 * Store-unavailable errors (runtime/store/unavailable.ts), judged on real
 * errors: a write in a read-only transaction (what a standby or a demoted
 * primary answers), a refused connection, a terminated backend, errors that
 * wrap them; and the postgres.js defect of porsager/postgres#1208 (a reserved
 * connection whose backend was terminated: the next query threw an uncaught
 * TypeError from a setImmediate and killed the process), run in a child
 * process against the patched driver (patches/postgres+3.4.9.patch).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStoreUnavailable } from '../../../runtime/store/unavailable.js';
import { isTransientStoreError } from '../../../runtime/store/transient.js';
import { createTestDatabase } from '../../helpers/postgres.js';
import { freePort, ROOT } from '../../helpers/server-process.js';

const run = promisify(execFile);

async function errorOf(query: Promise<unknown>): Promise<unknown> {
  try {
    await query;
  } catch (error) {
    return error;
  }
  throw new Error('the query did not fail');
}

describe('store unavailable (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let sql: postgres.Sql;
  beforeAll(async () => {
    db = await createTestDatabase();
    sql = postgres(db.url, { max: 2, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql.end({ timeout: 5 });
    await db.drop();
  });

  it('a write refused as read-only (25006: a standby, a demoted primary) is unavailable and transient', async () => {
    const refused = await errorOf(sql.begin('read only', (tx) => tx`create table t_ro (id int)`));
    expect((refused as { code: string }).code).toBe('25006');
    expect(isStoreUnavailable(refused)).toBe(true);
    expect(isTransientStoreError(refused)).toBe(true);
  });

  it('a refused connection is unavailable, also wrapped (cause, AggregateError); query errors are not', async () => {
    const port = await freePort();
    const nowhere = postgres(`postgres://postgres@127.0.0.1:${port}/x`, {
      max: 1,
      onnotice: () => {},
      connect_timeout: 5,
    });
    const refused = await errorOf(nowhere`select 1`.execute());
    await nowhere.end({ timeout: 1 });
    expect((refused as { code: string }).code).toBe('ECONNREFUSED');
    expect(isStoreUnavailable(refused)).toBe(true);
    expect(isStoreUnavailable(new Error('writing the batch failed', { cause: refused }))).toBe(true);
    expect(isStoreUnavailable(new AggregateError([refused, refused], 'every host failed'))).toBe(true);

    const syntax = await errorOf(sql.unsafe('selec 1').execute());
    expect(isStoreUnavailable(syntax)).toBe(false);
    expect(isStoreUnavailable(new Error('wrapped', { cause: syntax }))).toBe(false);
    expect(isStoreUnavailable(new AggregateError([refused, syntax]))).toBe(false);
    expect(isStoreUnavailable(new AggregateError([]))).toBe(false);
    // A cause chain that loops ends.
    const a: Error & { cause?: unknown } = new Error('a');
    a.cause = new Error('b', { cause: a });
    expect(isStoreUnavailable(a)).toBe(false);
  });

  it('a reserved connection whose backend was terminated: both later queries reject with a connection error, none waits for ever, the process lives (porsager/postgres#1208)', async () => {
    // As in the issue: two queries on the reserved connection after pg_terminate_backend.
    // Unpatched, the second one throws from nextWrite's setImmediate and the process dies;
    // and when the first one meets the reset (ECONNRESET) before the socket closes, the
    // second is sent into the dying socket and, unpatched, never settles. Which of the two
    // happens is timing: five rounds, each must settle both queries.
    const script = `
      import postgres from 'postgres';
      const url = process.argv[1];
      const rounds = [];
      for (let i = 0; i < 5; i++) {
        const sql = postgres(url, { max: 2, onnotice() {} });
        const killer = postgres(url, { max: 1, onnotice() {} });
        const reserved = await sql.reserve();
        const [{ pid }] = await reserved\`select pg_backend_pid() as pid\`;
        await killer\`select pg_terminate_backend(\${pid})\`;
        const first = await reserved\`select 1\`.then(() => 'answered', (e) => e.code);
        const second = await reserved\`select 1\`.then(() => 'answered', (e) => e.code);
        reserved.release();
        await sql.end({ timeout: 1 });
        await killer.end({ timeout: 1 });
        rounds.push([first, second]);
      }
      console.log(JSON.stringify(rounds));
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, db.url], {
      cwd: ROOT,
      timeout: 20_000,
    });
    const rounds = JSON.parse(stdout.trim()) as [string, string][];
    expect(rounds).toHaveLength(5);
    for (const [first, second] of rounds) {
      expect(['CONNECTION_CLOSED', 'ECONNRESET', 'EPIPE']).toContain(first);
      expect(second).toBe('CONNECTION_CLOSED');
    }
  });
});
