/**
 * The app's routes as registered (Fastify's onRoute hook, passed to buildApp):
 * the fuzz and isolation tests walk this list, so a new route is covered the day
 * it is added.
 */
import type { RouteOptions } from 'fastify';

export interface RouteInfo {
  method: string;
  /** As registered, e.g. `/v1/webhooks/:id/deliveries/:delivery_id/replay`. */
  url: string;
  /** Path parameter names in order. */
  params: string[];
  /** The route's own body limit, when it sets one. */
  bodyLimit?: number;
  key: string;
}

export interface RouteCollector {
  onRoute(route: RouteOptions): void;
  readonly routes: RouteInfo[];
}

export function collectRoutes(): RouteCollector {
  const routes: RouteInfo[] = [];
  return {
    routes,
    onRoute(route) {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      for (const method of methods) {
        const url = route.url;
        const params = [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
        routes.push({
          method,
          url,
          params,
          key: `${method} ${url}`,
          ...(route.bodyLimit !== undefined ? { bodyLimit: route.bodyLimit } : {}),
        });
      }
    },
  };
}

/** The URL of a route with these (already encoded) path parameter values. */
export function fillPath(route: RouteInfo, values: Record<string, string>): string {
  return route.url.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`fillPath: no value for :${name} of ${route.key}`);
    return v;
  });
}
