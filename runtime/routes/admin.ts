/**
 * The operator API (docs/api.md#operator-api), enabled only when AUTHZ_ADMIN_TOKEN
 * is set; otherwise its routes do not exist (404). The clock route exists only on
 * servers started with AUTHZ_TEST_CLOCK=1.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { loadSchema } from '../../compiler/index.js';
import { bearerToken } from '../auth/authenticate.js';
import { AdminAuthError } from '../errors/api-error.js';
import type { Environment } from '../tenant.js';
import { accountResource, apiKeyResource, revokedApiKeyResource } from '../presenters/account.js';
import { clockResource } from '../presenters/clock.js';
import { listBody } from '../presenters/list.js';
import { signingKeyResource } from '../presenters/signing-key.js';

const adminSchema = loadSchema('api/admin') as { $defs: Record<string, object> };
const def = (name: string) => adminSchema.$defs[name]!;

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export const adminRoutes: FastifyPluginAsync = async (app) => {
  const { config, accounts, testClock, ring } = app.services;
  const token = config.adminToken;
  if (token === undefined) return;
  const expected = digest(token);

  const requireAdmin = async (request: FastifyRequest) => {
    const given = bearerToken(request);
    if (given === null || !timingSafeEqual(digest(given), expected))
      throw new AdminAuthError('send the operator token as Authorization: Bearer <AUTHZ_ADMIN_TOKEN>');
  };

  app.post<{ Body: { name: string } }>(
    '/admin/accounts',
    { onRequest: requireAdmin, schema: { body: def('account') } },
    async (request, reply) => reply.code(201).send(accountResource(await accounts.createAccount(request.body.name))),
  );

  // The accounts of one name (`authz keys create --account-name` reuses the one it finds).
  app.get<{ Querystring: { name: string } }>(
    '/admin/accounts',
    { onRequest: requireAdmin, schema: { querystring: def('accountQuery') } },
    async (request) =>
      listBody((await accounts.findByName(request.query.name)).map(accountResource), false, '/admin/accounts'),
  );

  app.post<{ Params: { account_id: string }; Body: { environment: Environment; scopes: string[] } }>(
    '/admin/accounts/:account_id/api-keys',
    { onRequest: requireAdmin, schema: { body: def('apiKey') } },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          apiKeyResource(
            await accounts.createApiKey(request.params.account_id, request.body.environment, request.body.scopes),
          ),
        ),
  );

  app.delete<{ Params: { id: string } }>('/admin/api-keys/:id', { onRequest: requireAdmin }, async (request) => {
    await accounts.revokeApiKey(request.params.id);
    return revokedApiKeyResource(request.params.id);
  });

  // Rolls an API key: a new key of the same account, environment and scopes, the old one revoked, atomically.
  app.post<{ Params: { id: string } }>(
    '/admin/api-keys/:id/rotate',
    { onRequest: requireAdmin },
    async (request, reply) => {
      const created = await accounts.rotateApiKey(request.params.id);
      return reply.code(201).send(apiKeyResource(created, request.params.id));
    },
  );

  app.post('/admin/signing-keys/rotate', { onRequest: requireAdmin }, async () => {
    const jwk = await ring.rotate();
    return signingKeyResource(jwk, ring.jwks());
  });

  if (testClock) {
    app.post<{ Body: { advance_seconds: number } }>(
      '/admin/clock',
      { onRequest: requireAdmin, schema: { body: def('clock') } },
      async (request) => {
        await testClock.advance(request.body.advance_seconds);
        return clockResource(testClock.now());
      },
    );
  }
};
