/**
 * Request validation with route JSON Schemas: bodies strictly (no type coercion,
 * unknown fields rejected, not removed), query strings with coercion ("20" -> 20).
 * Ajv errors become the codes of docs/errors.md in one place (toApiError).
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { FastifySchemaCompiler } from 'fastify';
import { ApiError, InvalidFieldError, MissingFieldError } from '../errors/api-error.js';
import { runSliced } from '../shared/sliced.js';
import { unstorableInput, unstorableInputSteps, where } from '../shared/storable.js';

export { MAX_INPUT_DEPTH, unstorableInput } from '../shared/storable.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route checks its (large) body itself, in slices (rejectUnstorableBodySliced); the hook skips it. */
    bodyCheckedInSlices?: boolean;
  }
}

const strict = new Ajv2020({
  allErrors: true,
  coerceTypes: false,
  removeAdditional: false,
  useDefaults: false,
  strict: false,
});
const coercing = new Ajv2020({
  allErrors: true,
  coerceTypes: true,
  removeAdditional: false,
  useDefaults: true,
  strict: false,
});
const compiled = { strict: new WeakMap<object, ValidateFunction>(), coercing: new WeakMap<object, ValidateFunction>() };

/** Compiles each schema object once per mode (schemas from schemas/ carry an $id and are shared by routes). */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const mode = httpPart === 'querystring' || httpPart === 'params' ? 'coercing' : 'strict';
  const cache = compiled[mode];
  let fn = cache.get(schema as object);
  if (!fn) {
    const ajv = mode === 'coercing' ? coercing : strict;
    const id = (schema as { $id?: string }).$id;
    fn = (id && ajv.getSchema(id)) || ajv.compile(schema as object);
    cache.set(schema as object, fn);
  }
  return fn;
};

/** Fastify's schema errors -> validation.missing_field / validation.invalid_field with every problem in details. */
export function toApiError(errors: ErrorObject[], part: string | undefined, body: unknown): ApiError {
  const details = errors.map((e) => {
    if (e.keyword === 'required') {
      const field = `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`;
      return { path: field, message: `${where(part, field)} is required`, missing: true };
    }
    if (e.keyword === 'additionalProperties') {
      const field = `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}`;
      return { path: field, message: `unknown field ${where(part, field)}`, missing: false };
    }
    if (e.keyword === 'type' && e.instancePath === '' && part === 'body' && (body === undefined || body === null)) {
      return { path: '/', message: 'a JSON object body is required', missing: true };
    }
    if (e.keyword === 'enum') {
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues.map((v) =>
        typeof v === 'string' ? v : JSON.stringify(v),
      );
      return {
        path: e.instancePath || '/',
        message: `${where(part, e.instancePath)} must be one of ${allowed.join(', ')}`,
        missing: false,
      };
    }
    if (e.keyword === 'type') {
      return {
        path: e.instancePath || '/',
        message: `${where(part, e.instancePath)} ${typeProblem(e.params as { type: string | string[] }, valueAt(body, part, e.instancePath))}`,
        missing: false,
      };
    }
    return {
      path: e.instancePath || '/',
      message: `${where(part, e.instancePath)} ${e.message ?? 'is invalid'}`,
      missing: false,
    };
  });
  const first = details.find((d) => d.missing) ?? details[0]!;
  const list = details.map(({ path, message }) => ({ path, message }));
  return first.missing
    ? new MissingFieldError(first.message, { details: list })
    : new InvalidFieldError(first.message, { details: list });
}

/** JSON Schema's type names in words (a Map: these are type names, not a public JSON form). */
const A_TYPE = new Map([
  ['number', 'a number'],
  ['integer', 'a whole number'],
  ['string', 'a string'],
  ['boolean', 'true or false'],
  ['object', 'an object'],
  ['array', 'an array'],
  ['null', 'null'],
]);

/** What JSON type a value is, as {@link typeProblem} names it. */
function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'number' && Number.isInteger(value) ? 'integer' : typeof value;
}

/**
 * A type error in words: `must be a number, not a string ("20")` (Ajv's own is
 * `must be number,null`); a nullable field's null is left out, being the
 * field's absence.
 */
function typeProblem(params: { type: string | string[] }, value: unknown): string {
  const wanted = (Array.isArray(params.type) ? params.type : params.type.split(',')).filter((t) => t !== 'null');
  const names = (wanted.length > 0 ? wanted : ['null']).map((t) => A_TYPE.get(t) ?? t);
  if (value === undefined) return `must be ${names.join(' or ')}`;
  const given = typeOf(value);
  const shown = given === 'string' ? ` (${JSON.stringify(value).slice(0, 40)})` : '';
  const not = given === 'boolean' ? String(value) : (A_TYPE.get(given === 'integer' ? 'number' : given) ?? given);
  return `must be ${names.join(' or ')}, not ${not}${shown}`;
}

/** The value at a JSON pointer of the request part that was validated (the body's). */
function valueAt(body: unknown, part: string | undefined, pointer: string): unknown {
  if (part !== 'body') return undefined;
  let value = body;
  for (const token of pointer.split('/').slice(1)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[token.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return value;
}

/** preValidation hook: body, query string and path parameters must be storable (never a 500 for bad input). */
export async function rejectUnstorableInput(request: {
  body?: unknown;
  query?: unknown;
  params?: unknown;
  routeOptions?: { config?: { bodyCheckedInSlices?: boolean } };
}): Promise<void> {
  const body = request.routeOptions?.config?.bodyCheckedInSlices ? undefined : request.body;
  for (const [part, value] of [
    ['params', request.params],
    ['querystring', request.query],
    ['body', body],
  ] as const) {
    const problem = unstorableInput(value, part);
    if (problem) throw new InvalidFieldError(problem.message, { details: [problem] });
  }
}

/**
 * The same check of a body, in slices between other requests (PUT /v1/bundle:
 * 100,000 policies are a few million values), for a route whose config has
 * `bodyCheckedInSlices`.
 *
 * @example
 * app.put('/v1/bundle', { config: { bodyCheckedInSlices: true } }, async (request) => {
 *   await rejectUnstorableBodySliced(request.body);
 *   return bundles.put(request.principal, request.body);
 * });
 */
export async function rejectUnstorableBodySliced(body: unknown): Promise<void> {
  const problem = await runSliced(unstorableInputSteps(body, 'body'));
  if (problem) throw new InvalidFieldError(problem.message, { details: [problem] });
}
