/** GET /.well-known/jwks.json (public) and POST /v1/permits/verify. */
import type { FastifyPluginAsync } from 'fastify';
import type { PermitVerifyRequest } from '../../clients/typescript/wire.js';
import { loadSchema } from '../../compiler/index.js';
import { permitVerificationResource } from '../presenters/permit.js';

/** Verifiers should refresh the key set about this often (docs/permits.md#the-public-keys). */
export const JWKS_MAX_AGE_SECONDS = 300;

export const permitRoutes: FastifyPluginAsync = async (app) => {
  const { ring, permits: permitVerification } = app.services;

  app.get('/.well-known/jwks.json', async (_request, reply) => {
    reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
    return ring.jwks();
  });

  app.post<{ Body: PermitVerifyRequest }>(
    '/v1/permits/verify',
    { config: { scope: 'permits:verify' }, schema: { body: loadSchema('api/permit-verify') } },
    // 200 { valid: true, claims } or { valid: false, reason, claims } (the permit no longer stands); 401 for a bad token.
    async (request) =>
      permitVerificationResource(await permitVerification.verify(request.principal, request.body.token)),
  );
};
