/**
 * Transient store failures (runtime/store/transient.ts): which errors are worth a
 * retry, judged on real errors from a real PostgreSQL server, and the in-process
 * retry (p-retry) that the webhook dispatcher puts around its store calls.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTransientStoreError, retryTransient } from '../../../runtime/store/transient.js';
import { createTestDatabase } from '../../helpers/postgres.js';

/** A real error from `query` (a postgres.js error object). */
async function errorOf(query: Promise<unknown>): Promise<unknown> {
  try {
    await query;
  } catch (error) {
    return error;
  }
  throw new Error('the query did not fail');
}

describe('transient store errors (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let sql: postgres.Sql;
  let admin: postgres.Sql;
  beforeAll(async () => {
    db = await createTestDatabase();
    sql = postgres(db.url, { max: 1, onnotice: () => {} });
    admin = postgres(db.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql.end({ timeout: 5 });
    await admin.end({ timeout: 5 });
    await db.drop();
  });

  /** Runs a long query on `sql`'s one connection and terminates that backend while it runs. */
  async function terminatedQuery(): Promise<unknown> {
    const [{ pid }] = await sql<Array<{ pid: number }>>`select pg_backend_pid() as pid`;
    const running = sql`select pg_sleep(5)`.execute();
    setTimeout(() => void admin`select pg_terminate_backend(${pid})`.execute(), 100);
    return errorOf(running);
  }

  it('a connection terminated mid-query is transient; constraint, syntax and type errors are not', async () => {
    const terminated = await terminatedQuery();
    expect((terminated as { code?: string }).code).toMatch(/^57P01$|^CONNECTION_/);
    expect(isTransientStoreError(terminated)).toBe(true);

    // The pool may still hand out the dead connection once: exactly what the retry is for.
    await retryTransient(() => sql`create table if not exists u (id int primary key)`.execute(), { minTimeout: 5 });
    await sql`insert into u values (1) on conflict do nothing`;
    const duplicate = await errorOf(sql`insert into u values (1)`.execute());
    expect((duplicate as { code: string }).code).toBe('23505');
    expect(isTransientStoreError(duplicate)).toBe(false);
    expect(isTransientStoreError(await errorOf(sql.unsafe('selec 1').execute()))).toBe(false);
    expect(isTransientStoreError(await errorOf(sql`select 'x'::int`.execute()))).toBe(false);
    expect(isTransientStoreError(new Error('boom'))).toBe(false);
    expect(isTransientStoreError(undefined)).toBe(false);
  });

  it('retryTransient retries a call whose connection was terminated, and the retry runs on a new connection', async () => {
    let tries = 0;
    const retried: unknown[] = [];
    const value = await retryTransient(
      async () => {
        tries++;
        if (tries === 1) throw await terminatedQuery();
        const [{ n }] = await sql<Array<{ n: number }>>`select 42 as n`;
        return n;
      },
      { minTimeout: 5, onRetry: (error) => retried.push(error) },
    );
    expect(value).toBe(42);
    // The first try failed; the pool may fail the next one on the dead connection too.
    expect(tries).toBeGreaterThanOrEqual(2);
    expect(tries).toBeLessThanOrEqual(3);
    expect(retried).toHaveLength(tries - 1);
    expect(retried.every(isTransientStoreError)).toBe(true);
  });

  it('retryTransient throws a non-transient error at once, and gives up on a transient one after its retries', async () => {
    let tries = 0;
    await expect(
      retryTransient(async () => {
        tries++;
        await sql`select 'x'::int`;
      }),
    ).rejects.toMatchObject({ code: '22P02' });
    expect(tries).toBe(1);

    tries = 0;
    const unavailable = Object.assign(new Error('the database system is starting up'), { code: '57P03' });
    await expect(
      retryTransient(
        async () => {
          tries++;
          throw unavailable;
        },
        { retries: 2, minTimeout: 1, maxTimeout: 2 },
      ),
    ).rejects.toBe(unavailable);
    expect(tries).toBe(3);
  });
});
