/** The media type of a request's body, and the 415 for the ones a route does not read. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { UnsupportedMediaTypeError } from '../errors/api-error.js';

/** `application/yaml` for `Application/YAML; charset=utf-8`; undefined without a Content-Type. */
export function mediaTypeOf(request: FastifyRequest): string | undefined {
  const type = request.headers['content-type'];
  return typeof type === 'string' ? type.split(';')[0]!.trim().toLowerCase() : undefined;
}

/** Whether a media type is JSON (`application/json` or a `+json` type). */
export const isJsonMediaType = (media: string): boolean => media === 'application/json' || media.endsWith('+json');

/**
 * In `scope` (and the plugins inside it), a body of any media type without a
 * parser there (text/plain included: Fastify's own text parser is removed) is
 * 415 validation.unsupported_media_type, saying which types are read.
 *
 * @example
 * refuseOtherMediaTypes(app, 'application/json');
 */
export function refuseOtherMediaTypes(scope: FastifyInstance, accepted: string): void {
  if (scope.hasContentTypeParser('text/plain')) scope.removeContentTypeParser('text/plain');
  if (scope.hasContentTypeParser('*')) scope.removeContentTypeParser('*');
  scope.addContentTypeParser('*', (_request, _payload, done) =>
    done(new UnsupportedMediaTypeError(`send the body as ${accepted}`), undefined),
  );
}
