/** The test clock's offset (AUTHZ_TEST_CLOCK=1), kept across restarts: one row of `test_clock`. */
import type { SqlOrTx } from './connect.js';

/** The stored offset in ms, or 0 when the test clock was never moved. */
export async function loadTestClockOffset(sql: SqlOrTx): Promise<number> {
  const [row] = await sql<Array<{ offset_ms: number }>>`select offset_ms from test_clock`;
  return row?.offset_ms ?? 0;
}

/** Adds `deltaMs` to the stored offset, atomically; returns the offset after the change. */
export async function addTestClockOffset(sql: SqlOrTx, deltaMs: number): Promise<number> {
  const [row] = await sql<Array<{ offset_ms: number }>>`
    insert into test_clock as c (id, offset_ms) values (true, ${deltaMs}::float8)
    on conflict (id) do update set offset_ms = c.offset_ms + excluded.offset_ms
    returning offset_ms`;
  return row!.offset_ms;
}
