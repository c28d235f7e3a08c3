/**
 * YAML on the policy routes: bodies sent as `application/yaml` or `text/yaml`
 * reach the handler as their text (the route reads them with the compiler's
 * YAML reader, for line and column in every problem), and `Accept` chooses
 * between JSON (the default) and YAML answers.
 *
 * The text body goes through the same hooks as JSON: the body limit (Fastify's
 * raw body reader), the storable-input check and the idempotency fingerprint
 * (a hash of the text).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { mediaTypeOf, refuseOtherMediaTypes } from './media-type.js';

export const YAML_MEDIA_TYPES = ['application/yaml', 'text/yaml'] as const;

/** The Content-Type of a YAML answer. */
export const YAML_CONTENT_TYPE = 'application/yaml; charset=utf-8';

/** Registers the YAML body parser on `app` (call inside the routes' plugin: it applies to that plugin's routes only). */
export function registerYamlBodies(app: FastifyInstance): void {
  app.addContentTypeParser([...YAML_MEDIA_TYPES], { parseAs: 'string' }, (_request, body, done) => done(null, body));
  refuseOtherMediaTypes(app, 'application/json or application/yaml');
}

/** Whether the request's body was sent as YAML. */
export function isYamlBody(request: FastifyRequest): boolean {
  const media = mediaTypeOf(request);
  return media !== undefined && (YAML_MEDIA_TYPES as readonly string[]).includes(media);
}

/**
 * Whether the Accept header asks for YAML rather than JSON: a YAML type named
 * explicitly (application/yaml or text/yaml) with a q above 0, and JSON not
 * preferred over it (application/json at a higher q, or at the same q when it is
 * named explicitly). Wildcards never choose YAML; no header means JSON.
 */
export function prefersYaml(accept: string | string[] | undefined): boolean {
  if (accept === undefined) return false;
  let yaml = 0;
  // q of JSON by the most specific range that matches it: 3 exact, 2 application/*, 1 */*.
  let json = { q: 0, specificity: 0 };
  for (const part of (Array.isArray(accept) ? accept.join(',') : accept).split(',')) {
    const [range, ...params] = part.split(';');
    const type = range!.trim().toLowerCase();
    if (type === '') continue;
    const qParam = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    const parsed = qParam === undefined ? 1 : Number(qParam.slice(2));
    const q = Number.isFinite(parsed) ? Math.min(Math.max(parsed, 0), 1) : 0;
    if ((YAML_MEDIA_TYPES as readonly string[]).includes(type)) yaml = Math.max(yaml, q);
    const specificity = type === 'application/json' ? 3 : type === 'application/*' ? 2 : type === '*/*' ? 1 : 0;
    if (specificity > json.specificity) json = { q, specificity };
  }
  if (yaml === 0) return false;
  return yaml > json.q || (yaml === json.q && json.specificity < 3);
}
