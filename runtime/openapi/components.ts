/**
 * Reusable schemas of the OpenAPI document (components.schemas): the public
 * answers, read from their JSON Schemas in schemas/api/answers/ (one file per
 * public form, its `title` the component's name), and the project's JSON
 * Schemas for policies and bundles (their `$defs` hoisted into components, as
 * `#/$defs/...` would resolve against the document root). The files' relative
 * `$ref`s are rewritten to `#/components/schemas/...`. Documentation only:
 * nothing here validates or serializes a request.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadSchema, packageRoot } from '../../compiler/index.js';

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** Where the answer schemas live, relative to schemas/. */
export const ANSWERS_DIR = 'api/answers';

/** Every answer schema file of schemas/api/answers/, as written, by file name (`decision.schema.json`). */
export function answerSchemaFiles(): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  for (const file of readdirSync(join(packageRoot(), 'schemas', ANSWERS_DIR))
    .filter((f) => f.endsWith('.schema.json'))
    .sort()) {
    out[file] = loadSchema(`${ANSWERS_DIR}/${file.slice(0, -'.schema.json'.length)}`);
  }
  return out;
}

/** A `$ref` inside one of the project's schema files, rewritten to its component. */
function rewriteRefs(value: unknown, toComponent: (ref: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, toComponent));
  if (value === null || typeof value !== 'object') return value;
  const out: Schema = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$schema' || k === '$id' || k === '$defs') continue;
    out[k] = k === '$ref' && typeof v === 'string' ? toComponent(v) : rewriteRefs(v, toComponent);
  }
  return out;
}

/** A schema file as components: `name` for its root, `name_<def>` for each of its $defs. */
function hoist(file: string, name: string, external: Record<string, string> = {}): Record<string, Schema> {
  const schema = loadSchema(file);
  const toComponent = (r: string) => {
    const local = /^#\/\$defs\/(.+)$/.exec(r);
    return local ? `#/components/schemas/${name}_${local[1]}` : (external[r] ?? r);
  };
  const out: Record<string, Schema> = { [name]: rewriteRefs(schema, toComponent) as Schema };
  for (const [def, body] of Object.entries((schema.$defs ?? {}) as Record<string, unknown>))
    out[`${name}_${def}`] = rewriteRefs(body, toComponent) as Schema;
  return out;
}

const POLICY_DEF = 'https://agent-authz.dev/schemas/policy.schema.json#/$defs/policy';

/** The answer schemas as components, named by their titles; their references between files and into the policy schema rewritten. */
function answerComponents(): Record<string, Schema> {
  const files = answerSchemaFiles();
  const titles = new Map(Object.entries(files).map(([file, s]) => [file, String(s.title)]));
  const toComponent = (r: string): string => {
    const [file, pointer = ''] = r.split('#') as [string, string?];
    if (file === '../../policy.schema.json') {
      const m = /^\/\$defs\/([^/]+)(.*)$/.exec(pointer);
      if (m) return `#/components/schemas/PolicyFile_${m[1]}${m[2]}`;
    }
    if (file === '../../bundle.schema.json' && pointer === '') return '#/components/schemas/Bundle';
    const title = titles.get(file);
    if (title === undefined) throw new Error(`OpenAPI: ${r} names no answer schema of schemas/${ANSWERS_DIR}`);
    return `#/components/schemas/${title}${pointer}`;
  };
  return Object.fromEntries(Object.values(files).map((s) => [String(s.title), rewriteRefs(s, toComponent) as Schema]));
}

/**
 * Each reference to a part of a component (`#/components/schemas/Budget/properties/unit`,
 * as an answer borrows a field of another) replaced by that part, the same
 * object wherever it is borrowed: the document's references name whole components.
 */
function inlineParts(components: Record<string, Schema>): Record<string, Schema> {
  const done = new Map<unknown, unknown>();
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    const known = done.get(value);
    if (known !== undefined) return known;
    const r = (value as Schema).$ref;
    const part = typeof r === 'string' ? /^#\/components\/schemas\/([^/]+)\/(.+)$/.exec(r) : null;
    if (part) {
      let at: unknown = components[part[1]!];
      for (const step of part[2]!.split('/'))
        at = (at as Schema | undefined)?.[step.replace(/~1/g, '/').replace(/~0/g, '~')];
      if (at === undefined) throw new Error(`OpenAPI: ${r} resolves to nothing`);
      const out = walk(at);
      done.set(value, out);
      return out;
    }
    const out: Schema = {};
    done.set(value, out);
    for (const [k, v] of Object.entries(value)) out[k] = walk(v);
    return out;
  };
  return Object.fromEntries(Object.entries(components).map(([name, schema]) => [name, walk(schema) as Schema]));
}

export const COMPONENT_SCHEMAS: Record<string, Schema> = inlineParts({
  // The policy file schema (a policy or a `policies:` list); the API takes one policy: PolicyFile_policy.
  ...hoist('policy', 'PolicyFile'),
  ...hoist('bundle', 'Bundle', { [POLICY_DEF]: '#/components/schemas/PolicyFile_policy' }),
  ...answerComponents(),
});

export { ref };
