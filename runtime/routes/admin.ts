/**
 * The operator API (contract: Operator API), enabled only when AUTHZ_ADMIN_TOKEN
 * is set; otherwise its routes do not exist (404). The clock route exists only on
 * servers started with AUTHZ_TEST_CLOCK=1.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { loadSchema } from '../../compiler/schemas.js';
import { displayPrefix, generateApiKey, hashApiKey } from '../auth/api-keys.js';
import type { Environment } from '../tenant.js';
import { bearerToken } from '../auth/authenticate.js';
import { AccountNotFoundError, AdminAuthError, ApiKeyNotFoundError } from '../errors/api-error.js';
import { newId } from '../ids.js';
import type { SqlOrTx } from '../store/connect.js';
import { findAccount, insertAccount, insertApiKey, revokeApiKey, revokeLiveApiKey } from '../store/accounts.js';

const adminSchema = loadSchema('api/admin') as { $defs: Record<string, object> };
const def = (name: string) => adminSchema.$defs[name]!;

export interface CreatedKey {
  id: string;
  object: 'api_key';
  key: string;
  account_id: string;
  environment: Environment;
  scopes: string[];
  created_at: string;
}

/** Creates an API key; the full key exists only in the returned value. */
export async function createApiKey(sql: SqlOrTx, accountId: string, environment: Environment, scopes: string[], at: Date): Promise<CreatedKey> {
  const key = generateApiKey(environment);
  const id = newId('key');
  await insertApiKey(sql, { id, account_id: accountId, environment, key_prefix: displayPrefix(key), scopes, created_at: at, revoked_at: null }, hashApiKey(key));
  return { id, object: 'api_key', key, account_id: accountId, environment, scopes, created_at: at.toISOString() };
}

export async function createAccount(sql: SqlOrTx, name: string, at: Date): Promise<{ id: string; object: 'account'; name: string; created_at: string }> {
  const id = newId('acc');
  await insertAccount(sql, { id, name, created_at: at });
  return { id, object: 'account', name, created_at: at.toISOString() };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export const adminRoutes: FastifyPluginAsync = async (app) => {
  const { config, store, clock, keys, testClock, ring } = app.services;
  const token = config.adminToken;
  if (token === undefined) return;
  const expected = digest(token);
  const sql = store.sql;

  const requireAdmin = async (request: FastifyRequest) => {
    const given = bearerToken(request);
    if (given === null || !timingSafeEqual(digest(given), expected)) throw new AdminAuthError('send the operator token as Authorization: Bearer <AUTHZ_ADMIN_TOKEN>');
  };

  app.post<{ Body: { name: string } }>('/admin/accounts', { onRequest: requireAdmin, schema: { body: def('account') } }, async (request, reply) =>
    reply.code(201).send(await createAccount(sql, request.body.name, new Date(clock.now()))),
  );

  app.post<{ Params: { account_id: string }; Body: { environment: Environment; scopes: string[] } }>(
    '/admin/accounts/:account_id/api-keys',
    { onRequest: requireAdmin, schema: { body: def('apiKey') } },
    async (request, reply) => {
      const account = await findAccount(sql, request.params.account_id);
      if (!account) throw new AccountNotFoundError(`no account ${request.params.account_id}`);
      return reply.code(201).send(await createApiKey(sql, account.id, request.body.environment, request.body.scopes, new Date(clock.now())));
    },
  );

  app.delete<{ Params: { id: string } }>('/admin/api-keys/:id', { onRequest: requireAdmin }, async (request) => {
    if (!(await revokeApiKey(sql, request.params.id, new Date(clock.now())))) throw new ApiKeyNotFoundError(`no API key ${request.params.id}`);
    keys.forget(request.params.id);
    return { id: request.params.id, object: 'api_key', revoked: true };
  });

  // Rolls an API key (Stripe's "roll key"): a new key of the same account,
  // environment and scopes, and the old one revoked, in one transaction: either
  // both happen or neither. An unknown or already revoked key: 404. Like DELETE,
  // this process refuses the old key at once; others within their cache TTL.
  app.post<{ Params: { id: string } }>('/admin/api-keys/:id/rotate', { onRequest: requireAdmin }, async (request, reply) => {
    const oldId = request.params.id;
    const at = new Date(clock.now());
    const created = await sql.begin(async (tx) => {
      const old = await revokeLiveApiKey(tx, oldId, at);
      return old ? createApiKey(tx, old.account_id, old.environment, old.scopes, at) : null;
    });
    if (!created) throw new ApiKeyNotFoundError(`no live API key ${oldId} (unknown or already revoked)`);
    keys.forget(oldId);
    return reply.code(201).send({ ...created, replaces: oldId });
  });

  app.post('/admin/signing-keys/rotate', { onRequest: requireAdmin }, async () => {
    const jwk = await ring.rotate();
    return { object: 'signing_key', kid: jwk.kid, public_jwk: jwk, jwks: ring.jwks() };
  });

  if (testClock) {
    app.post<{ Body: { advance_seconds: number } }>('/admin/clock', { onRequest: requireAdmin, schema: { body: def('clock') } }, async (request) => {
      testClock.advance(request.body.advance_seconds);
      return { object: 'clock', now: new Date(testClock.now()).toISOString() };
    });
  }
};
