/**
 * /v1/bundle: replace an environment's whole policy set with a compiled bundle
 * (authz compile), atomically (domain/bundles.ts). Bundles may be larger than
 * other bodies (BUNDLE_BODY_LIMIT).
 */
import type { FastifyPluginAsync } from 'fastify';

export const BUNDLE_BODY_LIMIT = 64 * 1024 * 1024;

export const bundleRoutes: FastifyPluginAsync = async (app) => {
  const { bundles } = app.services;
  app.put('/v1/bundle', { config: { scope: 'policies:write' }, bodyLimit: BUNDLE_BODY_LIMIT }, async (request) => bundles.put(request.principal, request.body));
  app.get('/v1/bundle', { config: { scope: 'policies:read' } }, async (request) => bundles.get(request.principal));
};
