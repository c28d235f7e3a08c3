/**
 * Bearer API key authentication and scope checks. A route states the scope it
 * needs in its config (`config: { scope: 'decisions:write' }`); this hook resolves
 * the key to its account and environment (the request's tenant) before anything
 * else runs.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidKeyError, ScopeInsufficientError } from '../errors/api-error.js';
import type { Principal } from '../tenant.js';
import { hasScope, type Scope } from './api-keys.js';
import type { ApiKeyCache } from './key-cache.js';
import type { ApiKeyRow } from '../store/accounts.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scope a route needs (a list: any one of them); routes without one are public. */
    scope?: Scope | readonly Scope[];
  }
  interface FastifyRequest {
    principal: Principal;
  }
}

export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}

/**
 * Resolves the API key of every route that names a scope to its principal
 * (401 auth.invalid_key, 403 auth.scope_insufficient) before anything else runs.
 */
export function registerAuthentication(app: FastifyInstance, keys: ApiKeyCache): void {
  app.decorateRequest('principal', null as unknown as Principal);
  // A callback hook: a key known in memory is admitted without a promise or a turn of the event loop.
  app.addHook('onRequest', (request, _reply, done) => {
    const scope = request.routeOptions.config?.scope;
    if (scope === undefined) return done();
    const token = bearerToken(request);
    if (token === null)
      return done(new InvalidKeyError('send an API key as Authorization: Bearer svc_test_sk_... or svc_live_sk_...'));
    const known = keys.lookup(token);
    if (!(known instanceof Promise)) return done(admit(request, scope, known));
    known.then((row) => done(admit(request, scope, row)), done);
  });
}

/** Sets the request's principal from the key's row, or says why it is refused. */
function admit(request: FastifyRequest, scope: Scope | readonly Scope[], row: ApiKeyRow | null): Error | undefined {
  if (row === null) return new InvalidKeyError('the API key does not exist, is revoked or is malformed');
  const anyOf: readonly Scope[] = typeof scope === 'string' ? [scope] : scope;
  if (!anyOf.some((s) => hasScope(row.scopes, s)))
    return new ScopeInsufficientError(`this API key lacks the scope ${anyOf.join(' or ')}`);
  request.principal = { keyId: row.id, accountId: row.account_id, environment: row.environment, scopes: row.scopes };
  return undefined;
}

/**
 * The platform rate limit per API key, for the routes registered in `scope`
 * (every authenticated route but POST /v1/decisions, whose decision service
 * applies it in the same store call as the policies' limits); `admit` throws
 * to refuse the request.
 */
export function registerKeyAdmission(scope: FastifyInstance, admit: (principal: Principal) => Promise<void>): void {
  scope.addHook('onRequest', async (request) => {
    if (request.principal) await admit(request.principal);
  });
}
