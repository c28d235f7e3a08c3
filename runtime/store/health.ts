/** Readiness: the store answers a trivial query. */
import type { SqlOrTx } from './connect.js';

export async function ping(sql: SqlOrTx): Promise<void> {
  await sql`select 1`;
}
