/** Whether the store holds anything sealed under a master key (secrets/sealed-text.ts). */
import type { SqlOrTx } from './connect.js';

/**
 * True when any signing key, webhook secret or stored idempotent answer is
 * sealed: such a store needs the key it was sealed with, and `authz serve`
 * then never generates a new one (it would open none of them).
 *
 * @example
 * if (!master && (await holdsSealedSecrets(store.sql))) refuse(); // the key was lost
 */
export async function holdsSealedSecrets(sql: SqlOrTx): Promise<boolean> {
  const [row] = await sql<Array<{ sealed: boolean }>>`
    select exists (select 1 from signing_keys where encrypted)
        or exists (select 1 from webhook_endpoints where secret_encrypted)
        or exists (select 1 from idempotency_keys where body_encrypted) as sealed`;
  return row!.sealed;
}
