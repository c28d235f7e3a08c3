/**
 * The application/json body parser of every route (one mechanism, app-wide):
 *
 * - an empty body (or only whitespace) is no body: `request.body` is undefined.
 *   A client that always sends `Content-Type: application/json` can call the
 *   routes that take no body (revoke, replay, DELETE, rotations) with an empty
 *   one, and a route with a body schema answers its usual 400
 *   validation.missing_field for a missing body;
 * - malformed JSON is 400 validation.invalid_json, saying where it broke;
 * - a `__proto__` field, or a `constructor` object with a `prototype` field
 *   (prototype poisoning; Fastify's own parser refuses them too), is 400
 *   validation.invalid_field naming the field's JSON pointer in `details[].path`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidFieldError, InvalidJsonError } from '../errors/api-error.js';
import { where } from '../shared/storable.js';

/** A field name JSON may carry that would poison a prototype when copied: its JSON pointer, or null. */
export function poisonedField(value: unknown): string | null {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length > 0) {
    const [v, pointer] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${pointer}/${i}`]);
      continue;
    }
    for (const key of Object.keys(v)) {
      const child = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      const field = (v as Record<string, unknown>)[key];
      if (key === '__proto__') return child;
      if (key === 'constructor' && field !== null && typeof field === 'object' && Object.hasOwn(field, 'prototype'))
        return `${child}/prototype`;
      stack.push([field, child]);
    }
  }
  return null;
}

/**
 * Whether the text may hold a `__proto__`, `constructor` or `prototype` key: it
 * names one, or has a \u escape (a key can be spelled with escapes). Most bodies
 * have neither and are not walked.
 */
const mayBePoisoned = (text: string): boolean =>
  text.includes('__proto__') || text.includes('constructor') || text.includes('\\u');

/**
 * Parses a JSON body as described above.
 *
 * @example
 * parseJsonBody('')                 // => undefined
 * parseJsonBody('{"a":1}')          // => { a: 1 }
 * parseJsonBody('{"__proto__":{}}') // throws InvalidFieldError, details [{ path: '/__proto__', ... }]
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InvalidJsonError(`the body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (mayBePoisoned(text)) {
    const path = poisonedField(value);
    if (path !== null) {
      const message = `${where('body', path)} is not accepted: a field named __proto__, or constructor.prototype, could change the prototype of an object`;
      throw new InvalidFieldError(message, { details: [{ path, message }] });
    }
  }
  return value;
}

/**
 * Replaces Fastify's application/json parser in `app` (and every plugin
 * registered in it) with parseJsonBody.
 *
 * @example
 * registerJsonBodies(app);
 */
export function registerJsonBodies(app: FastifyInstance): void {
  if (app.hasContentTypeParser('application/json')) app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string' },
    (_request: FastifyRequest, body: string | Buffer, done) => {
      try {
        done(null, parseJsonBody(typeof body === 'string' ? body : body.toString('utf8')));
      } catch (error) {
        done(error as Error, undefined);
      }
    },
  );
}
