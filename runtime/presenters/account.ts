/** The public forms of the operator API's accounts and API keys (docs/api.md#operator-api). */
import type { Account } from '../../clients/typescript/wire.js';
import type { AccountRecord, CreatedKey } from '../domain/accounts.js';

/**
 * An account: POST /admin/accounts, and the items of GET /admin/accounts.
 *
 * @example
 * accountResource({ id: 'acc_1', name: 'acme', created_at: new Date(0) }); // => { id: 'acc_1', object: 'account', name: 'acme', created_at: '1970-01-01T00:00:00.000Z' }
 */
export function accountResource(account: AccountRecord): Account {
  return { id: account.id, object: 'account', name: account.name, created_at: account.created_at.toISOString() };
}

/**
 * A key just made, with the full key (the only answer that carries it):
 * POST /admin/accounts/:account_id/api-keys; a roll's answer names the key it
 * replaces (POST /admin/api-keys/:id/rotate).
 *
 * @example
 * apiKeyResource(created, 'key_old'); // => { id: 'key_...', object: 'api_key', key: 'sk_test_...', ..., replaces: 'key_old' }
 */
export function apiKeyResource(created: CreatedKey, replaces?: string): Record<string, unknown> {
  return {
    id: created.id,
    object: 'api_key',
    key: created.key,
    account_id: created.account_id,
    environment: created.environment,
    scopes: created.scopes,
    created_at: created.created_at.toISOString(),
    ...(replaces === undefined ? {} : { replaces }),
  };
}

/**
 * DELETE /admin/api-keys/:id.
 *
 * @example
 * revokedApiKeyResource('key_1'); // => { id: 'key_1', object: 'api_key', revoked: true }
 */
export function revokedApiKeyResource(id: string): Record<string, unknown> {
  return { id, object: 'api_key', revoked: true };
}
