/**
 * /v1/bundle: replace an environment's whole policy set with a compiled bundle
 * (authz compile), atomically (domain/bundles.ts). Bundles may be larger than
 * other bodies (BUNDLE_BODY_LIMIT).
 */
import type { FastifyPluginAsync } from 'fastify';
import { rejectUnstorableBodySliced } from '../http/validation.js';
import { bundleResource } from '../presenters/bundle.js';

export const BUNDLE_BODY_LIMIT = 64 * 1024 * 1024;

export const bundleRoutes: FastifyPluginAsync = async (app) => {
  const { bundles } = app.services;
  // A bundle's body is large: its storability is checked in slices, not by the app-wide hook.
  app.put(
    '/v1/bundle',
    { config: { scope: 'policies:write', bodyCheckedInSlices: true }, bodyLimit: BUNDLE_BODY_LIMIT },
    async (request) => {
      await rejectUnstorableBodySliced(request.body);
      return bundleResource(await bundles.put(request.principal, request.body));
    },
  );
  app.get('/v1/bundle', { config: { scope: 'policies:read' } }, async (request) =>
    bundleResource(await bundles.get(request.principal)),
  );
};
