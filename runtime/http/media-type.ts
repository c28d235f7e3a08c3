/** The media type of a request's body, from its Content-Type (lower case, without parameters). */
import type { FastifyRequest } from 'fastify';

/** `application/yaml` for `Application/YAML; charset=utf-8`; undefined without a Content-Type. */
export function mediaTypeOf(request: FastifyRequest): string | undefined {
  const type = request.headers['content-type'];
  return typeof type === 'string' ? type.split(';')[0]!.trim().toLowerCase() : undefined;
}

/** Whether a media type is JSON (`application/json` or a `+json` type). */
export const isJsonMediaType = (media: string): boolean => media === 'application/json' || media.endsWith('+json');
