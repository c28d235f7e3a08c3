/**
 * Idempotency keys (migration 006): claim a key, store the answer, release the
 * claim, sweep expired keys. Times are the service clock's, in ms.
 */
import type { SqlOrTx } from './connect.js';

export interface IdempotencyScope {
  accountId: string;
  environment: string;
  key: string;
}

export interface IdempotencyRow {
  fingerprint: string;
  state: 'running' | 'completed';
  status_code: number | null;
  content_type: string | null;
  body: string | null;
  body_encrypted: boolean;
}

export interface StoredAnswer {
  status_code: number;
  content_type: string | null;
  body: string;
  body_encrypted: boolean;
}

const ts = (ms: number) => new Date(ms);

/**
 * Claims the key for a request: true when this request now owns it (a new key,
 * an expired one, or a running claim past `locked_until` with the same
 * fingerprint, whose process presumably died). False: someone else holds it.
 */
export async function claimIdempotencyKey(
  sql: SqlOrTx,
  scope: IdempotencyScope,
  fingerprint: string,
  nowMs: number,
  lockMs: number,
  ttlMs: number,
): Promise<boolean> {
  const rows = await sql`
    insert into idempotency_keys as k (account_id, environment, idempotency_key, fingerprint, state, created_at, locked_until, expires_at)
    values (${scope.accountId}, ${scope.environment}, ${scope.key}, ${fingerprint}, 'running', ${ts(nowMs)}, ${ts(nowMs + lockMs)}, ${ts(nowMs + ttlMs)})
    on conflict (account_id, environment, idempotency_key) do update
      set fingerprint = excluded.fingerprint, state = 'running', status_code = null, content_type = null, body = null,
          body_encrypted = false, created_at = excluded.created_at, locked_until = excluded.locked_until, expires_at = excluded.expires_at
      where k.expires_at <= excluded.created_at
         or (k.state = 'running' and k.locked_until <= excluded.created_at and k.fingerprint = excluded.fingerprint)
    returning 1 as claimed`;
  return rows.length === 1;
}

/** The key's current row, unless it has expired (or vanished: a released claim). */
export async function findIdempotencyKey(
  sql: SqlOrTx,
  scope: IdempotencyScope,
  nowMs: number,
): Promise<IdempotencyRow | null> {
  const [row] = await sql<IdempotencyRow[]>`
    select fingerprint, state, status_code, content_type, body, body_encrypted from idempotency_keys
    where account_id = ${scope.accountId} and environment = ${scope.environment} and idempotency_key = ${scope.key}
      and expires_at > ${ts(nowMs)}`;
  return row ?? null;
}

/** Stores the answer of the request that holds the claim. */
export async function completeIdempotencyKey(
  sql: SqlOrTx,
  scope: IdempotencyScope,
  fingerprint: string,
  answer: StoredAnswer,
): Promise<void> {
  await sql`
    update idempotency_keys
    set state = 'completed', status_code = ${answer.status_code}, content_type = ${answer.content_type}, body = ${answer.body},
        body_encrypted = ${answer.body_encrypted}, locked_until = null
    where account_id = ${scope.accountId} and environment = ${scope.environment} and idempotency_key = ${scope.key}
      and state = 'running' and fingerprint = ${fingerprint}`;
}

/** Gives the key up (a 5xx or 429 answer): a retry runs again. */
export async function releaseIdempotencyKey(sql: SqlOrTx, scope: IdempotencyScope, fingerprint: string): Promise<void> {
  await sql`
    delete from idempotency_keys
    where account_id = ${scope.accountId} and environment = ${scope.environment} and idempotency_key = ${scope.key}
      and state = 'running' and fingerprint = ${fingerprint}`;
}

/** Deletes expired keys; returns how many. */
export async function sweepIdempotencyKeys(sql: SqlOrTx, nowMs: number): Promise<number> {
  const result = await sql`delete from idempotency_keys where expires_at <= ${ts(nowMs)}`;
  return result.count;
}
