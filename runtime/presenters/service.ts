/** The public form of GET / for a client that is not a browser: where to go from the service's address. */

/**
 * The service's name and version, and the paths of its API reference, OpenAPI document, dashboard and health route.
 *
 * @example
 * serviceResource('0.1.0'); // => { object: 'service', name: 'agent-authz', version: '0.1.0', api_reference: '/docs', openapi: '/v1/openapi.json', dashboard: '/dashboard', health: '/healthz' }
 */
export function serviceResource(version: string): Record<string, unknown> {
  return {
    object: 'service',
    name: 'agent-authz',
    version,
    api_reference: '/docs',
    openapi: '/v1/openapi.json',
    dashboard: '/dashboard',
    health: '/healthz',
  };
}
