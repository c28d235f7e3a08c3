/**
 * Writes clients/typescript/wire.ts: the TypeScript types of every public
 * answer, generated from the JSON Schemas of schemas/api/answers/ (and the
 * policy and bundle schemas they use) with json-schema-to-typescript, one type
 * per OpenAPI component, named as the component; and of every request body and
 * query string the routes validate, from the other files of schemas/api/ (one
 * type per file, named by {@link requestTypeName}: `DecisionRequest`,
 * `SessionLabelsRequest`, `BudgetRemainingQuery`). Run `npm run gen:types`
 * after changing a schema; test/schemas/wire-types.test.ts fails while the
 * committed module differs from what this writes.
 *
 * @example
 * // npm run gen:types  (builds, then: node dist/scripts/gen-wire-types.js)
 * (await wireTypesSource()).includes('export interface Decision {'); // => true
 * (await wireTypesSource()).includes('export interface DecisionRequest {'); // => true
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compile, type JSONSchema } from 'json-schema-to-typescript';
import { loadSchema, packageRoot } from '../compiler/index.js';
import { answerSchemaFiles, COMPONENT_SCHEMAS } from '../runtime/openapi/components.js';

/** The generated module, relative to the package root. */
export const WIRE_MODULE = 'clients/typescript/wire.ts';

const BANNER = `/* eslint-disable */
/**
 * The public answers and requests of the service (its wire types), GENERATED
 * from schemas/api/answers/*.schema.json (and schemas/policy.schema.json,
 * schemas/bundle.schema.json) and schemas/api/*.schema.json by
 * scripts/gen-wire-types.ts. Do not edit: change the schema and run
 * \`npm run gen:types\`. Answers: one type per OpenAPI component
 * (GET /v1/openapi.json), named as the component (but Error: ErrorBody).
 * Requests: one type per body or query schema, named for its file
 * (decision-request: DecisionRequest, session-labels: SessionLabelsRequest,
 * budget-remaining-query: BudgetRemainingQuery). The runtime's routes, domain
 * and presenters, the TypeScript client and the dashboard import them from here.
 */`;

/** The type's name of a component: its own, but for Error (which would shadow the global Error where imported). */
const typeName = (component: string): string =>
  component === 'Error' ? 'ErrorBody' : component === 'PolicyFile_policy' ? 'PolicyFilePolicy' : component;

/** The object-valued fields of a policy, each a named type (rather than Budget1, Approval, ... as the generator would name them). */
const POLICY_FIELD_TYPES: Record<string, string> = {
  rate_limit: 'PolicyRateLimit',
  budget: 'PolicyBudget',
  approval: 'PolicyApproval',
};

type Json = Record<string, unknown>;

/** The files of schemas/api/ that are not request schemas: admin.schema.json holds the operator API's bodies as `$defs`. */
const NOT_REQUESTS = new Set(['admin.schema.json']);

/**
 * The type's name of a request schema file of schemas/api/: its name in
 * PascalCase, ending in `Request` (a body) or `Query` (a query string).
 *
 * @example
 * requestTypeName('session-labels.schema.json'); // => 'SessionLabelsRequest'
 * requestTypeName('decision-request.schema.json'); // => 'DecisionRequest'
 * requestTypeName('budget-remaining-query.schema.json'); // => 'BudgetRemainingQuery'
 */
export function requestTypeName(file: string): string {
  const pascal = file
    .replace(/\.schema\.json$/, '')
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
  return /(Request|Query)$/.test(pascal) ? pascal : `${pascal}Request`;
}

/** Every request body and query schema of schemas/api/ (the answers' folder and the operator bodies aside), as written, by its type's name. */
export function requestSchemas(): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const file of readdirSync(join(packageRoot(), 'schemas', 'api'))
    .filter((f) => f.endsWith('.schema.json') && !NOT_REQUESTS.has(f))
    .sort()) {
    out[requestTypeName(file)] = loadSchema(`api/${file.slice(0, -'.schema.json'.length)}`);
  }
  return out;
}

/**
 * An object schema that says nothing of other members is open, as JSON Schema reads it (AuthZEN's bodies, whose
 * unknown members are ignored; free-form `context` and `attributes`): `[k: string]: unknown`, rather than the closed
 * form the generator's default (right for the answers, which are closed) would make of it.
 */
function openAsWritten(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(openAsWritten);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, openAsWritten(v)]));
  const type = out.type;
  const isObject = type === 'object' || (Array.isArray(type) && type.includes('object'));
  if (isObject && out.additionalProperties === undefined) out.additionalProperties = true;
  return out;
}

/** A request schema for the generator: its own name as title, no `$schema`/`$id`, no titles inside, open objects open. */
function requestDefinition(name: string, schema: Json): Json {
  const { $schema: _schema, $id: _id, title: _title, ...rest } = schema;
  return { ...(openAsWritten(retarget(rest, new Map())) as Json), title: name };
}

/** The schema at `#/components/schemas/<pointer>` (a component or a field of one). */
function resolve(pointer: string): unknown {
  let at: unknown = COMPONENT_SCHEMAS;
  for (const part of pointer.split('/')) at = (at as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  if (at === undefined) throw new Error(`gen:types: #/components/schemas/${pointer} resolves to nothing`);
  return at;
}

/**
 * A component for the generator: `#/components/schemas/X` as `#/definitions/X`;
 * a reference to a field of another component (`X/properties/p`) inlined, as
 * the same object each time (one declaration); no titles but the components'.
 */
function retarget(value: unknown, seen: Map<unknown, unknown>): unknown {
  if (Array.isArray(value)) return value.map((v) => retarget(v, seen));
  if (value === null || typeof value !== 'object') return value;
  const known = seen.get(value);
  if (known) return known;
  const ref = (value as Json).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
    const pointer = ref.slice('#/components/schemas/'.length);
    if (pointer.includes('/')) {
      const inlined = retarget(resolve(pointer), seen);
      seen.set(value, inlined);
      return inlined;
    }
    return { $ref: `#/definitions/${pointer}` };
  }
  const out: Json = {};
  seen.set(value, out);
  for (const [k, v] of Object.entries(value)) if (k !== 'title') out[k] = retarget(v, seen);
  return out;
}

/** The components the answers use: every answer schema's, and what they reference (transitively). */
function reachable(): string[] {
  const names = new Set(Object.values(answerSchemaFiles()).map((s) => String(s.title)));
  const todo = [...names];
  while (todo.length > 0) {
    const text = JSON.stringify(COMPONENT_SCHEMAS[todo.pop()!]);
    for (const m of text.matchAll(/"#\/components\/schemas\/([^"/]+)/g)) {
      if (!names.has(m[1]!)) {
        names.add(m[1]!);
        todo.push(m[1]!);
      }
    }
  }
  return [...names].sort();
}

/** The text of clients/typescript/wire.ts as the schemas give it now. */
export async function wireTypesSource(): Promise<string> {
  const seen = new Map<unknown, unknown>();
  const policy = COMPONENT_SCHEMAS.PolicyFile_policy as { properties: Record<string, Json> };
  // Titled before anything is inlined: each object field of a policy is one named type wherever a schema uses it.
  for (const [field, name] of Object.entries(POLICY_FIELD_TYPES))
    seen.set(policy.properties[field], { ...(retarget(policy.properties[field], new Map()) as Json), title: name });
  const definitions: Record<string, Json> = {};
  for (const name of reachable())
    definitions[name] = { ...(retarget(COMPONENT_SCHEMAS[name], seen) as Json), title: typeName(name) };
  for (const [name, schema] of Object.entries(requestSchemas())) {
    if (definitions[name]) throw new Error(`gen:types: the request type ${name} has the name of an answer`);
    definitions[name] = requestDefinition(name, schema);
  }
  // The root lists every component so each is emitted once, by its own name; it is removed from the output.
  const root = {
    title: 'WireTypes',
    type: 'object',
    properties: Object.fromEntries(Object.keys(definitions).map((n) => [n, { $ref: `#/definitions/${n}` }])),
    additionalProperties: false,
    definitions,
  };
  const source = await compile(root as JSONSchema, 'WireTypes', {
    bannerComment: BANNER,
    additionalProperties: false,
    unreachableDefinitions: true,
    declareExternallyReferenced: true,
    strictIndexSignatures: false,
    ignoreMinAndMaxItems: true,
    format: true,
    style: { singleQuote: true, printWidth: 160 },
  });
  return source
    .replace(/export interface WireTypes \{[\s\S]*?\n\}\n/, '')
    .replace(
      /\n \*\n \* This (?:interface|type) was referenced by `WireTypes`'s JSON-Schema\n \* via the `definition` "[^"]+"\./g,
      '',
    )
    .replace(
      /\/\*\*\n \* This (?:interface|type) was referenced by `WireTypes`'s JSON-Schema\n \* via the `definition` "[^"]+"\.\n \*\/\n/g,
      '',
    );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = join(packageRoot(), WIRE_MODULE);
  writeFileSync(file, await wireTypesSource());
  console.log(`wrote ${WIRE_MODULE}`);
}
