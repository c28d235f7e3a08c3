/**
 * The API description: `GET /v1/openapi.json` (OpenAPI 3.1, generated from the
 * route schemas by @fastify/swagger) and the docs page at `/docs`
 * (@fastify/swagger-ui, which serves its own assets: nothing from a CDN). No
 * auth. Registered before the other routes: the document collects every route
 * registered after it.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { compilerVersion } from '../../compiler/index.js';
import { swaggerOptions } from '../openapi/document.js';

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, swaggerOptions(compilerVersion().replace(/^agent-authz /, '')));
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // The page loads /docs/json, the same document as /v1/openapi.json.
    uiConfig: { docExpansion: 'list', deepLinking: true },
    staticCSP: true,
  });
}
