/** GET /.well-known/jwks.json (public) and POST /v1/permits/verify. */
import type { FastifyPluginAsync } from 'fastify';
import { loadSchema } from '../../compiler/schemas.js';
import { ApiError } from '../errors/api-error.js';
import { verifyPermit } from '../permits/verify.js';

/** Verifiers should refresh the key set about this often (spec 5.2.4). */
export const JWKS_MAX_AGE_SECONDS = 300;

export const permitRoutes: FastifyPluginAsync = async (app) => {
  const { ring, clock, config, alerts } = app.services;

  app.get('/.well-known/jwks.json', async (_request, reply) => {
    reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
    return ring.jwks();
  });

  app.post<{ Body: { token: string } }>(
    '/v1/permits/verify',
    { config: { scope: 'permits:verify' }, schema: { body: loadSchema('api/permit-verify') } },
    async (request) => {
      const p = request.principal;
      try {
        const claims = await verifyPermit(request.body.token, ring, clock, p, config.baseUrl);
        return { object: 'permit_verification', valid: true, claims };
      } catch (error) {
        if (error instanceof ApiError) alerts.invalidPermitToken(p.accountId, p.environment);
        throw error;
      }
    },
  );
};
