/** Signing keys for permit tokens (service-wide, not per account). */
import type { SqlOrTx } from './connect.js';

export interface SigningKeyRow {
  kid: string;
  public_jwk: Record<string, string>;
  private_key: string;
  encrypted: boolean;
  created_at: Date;
  retired_at: Date | null;
  expires_at: Date | null;
}

/** Keys still published: the signer and retired keys whose tokens may not have expired. */
export async function publishedSigningKeys(sql: SqlOrTx, at: Date): Promise<SigningKeyRow[]> {
  return sql<SigningKeyRow[]>`
    select kid, public_jwk, private_key, encrypted, created_at, retired_at, expires_at from signing_keys
    where expires_at is null or expires_at > ${at} order by created_at desc`;
}

export async function insertSigningKey(sql: SqlOrTx, row: SigningKeyRow): Promise<void> {
  await sql`insert into signing_keys (kid, public_jwk, private_key, encrypted, created_at)
            values (${row.kid}, ${sql.json(row.public_jwk)}, ${row.private_key}, ${row.encrypted}, ${row.created_at})`;
}

/** Retires the current signer(s): they stop signing now and leave the JWKS at `expiresAt`. */
export async function retireSigningKeys(sql: SqlOrTx, at: Date, expiresAt: Date): Promise<void> {
  await sql`update signing_keys set retired_at = ${at}, expires_at = ${expiresAt} where retired_at is null`;
}

export async function countActiveSigningKeys(sql: SqlOrTx): Promise<number> {
  const [row] = await sql<Array<{ n: number }>>`select count(*)::int as n from signing_keys where retired_at is null`;
  return row!.n;
}

/** Every stored private key (expired ones too), for re-sealing under the current master key. */
export async function allSigningKeySecrets(
  sql: SqlOrTx,
): Promise<Array<Pick<SigningKeyRow, 'kid' | 'private_key' | 'encrypted'>>> {
  return sql<
    Array<Pick<SigningKeyRow, 'kid' | 'private_key' | 'encrypted'>>
  >`select kid, private_key, encrypted from signing_keys order by created_at`;
}

/** Replaces how one private key is stored (the same key, sealed again). */
export async function updateSigningKeySecret(
  sql: SqlOrTx,
  kid: string,
  privateKey: string,
  encrypted: boolean,
): Promise<void> {
  await sql`update signing_keys set private_key = ${privateKey}, encrypted = ${encrypted} where kid = ${kid}`;
}
