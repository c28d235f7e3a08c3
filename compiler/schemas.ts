/** Loads the project's JSON Schemas from `schemas/` at the package root (works from source and from dist/). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/**
 * The folder of the installed agent-authz package (the one holding package.json
 * and schemas/), found from this module's own location, so it works from the
 * sources, from dist/ and from node_modules. Cached after the first call.
 *
 * @returns the absolute path of the package's folder.
 * @throws Error when no enclosing folder holds schemas/policy.schema.json and package.json.
 *
 * @example
 * ```ts
 * import { existsSync } from 'node:fs';
 * import { join } from 'node:path';
 * import { packageRoot } from 'agent-authz/compiler';
 *
 * console.log(existsSync(join(packageRoot(), 'schemas', 'policy.schema.json'))); // => true
 * ```
 */
export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'schemas', 'policy.schema.json')) && existsSync(join(dir, 'package.json')))
      return (root = dir);
    const up = dirname(dir);
    if (up === dir) throw new Error('agent-authz: cannot find the schemas/ folder of the package');
    dir = up;
  }
}

const cache = new Map<string, Record<string, unknown>>();

/**
 * One of the package's JSON Schemas, `schemas/<name>.schema.json`, parsed
 * (cached: every call for a name returns the same object; do not change it).
 *
 * @param name - the schema's name, e.g. `policy`, `bundle`.
 * @returns the schema as a plain object.
 * @throws Error when there is no such schema file (ENOENT) or it is not JSON.
 *
 * @example
 * ```ts
 * import { loadSchema } from 'agent-authz/compiler';
 *
 * console.log(loadSchema('policy').$id); // => https://agent-authz.dev/schemas/policy.schema.json
 * ```
 */
export function loadSchema(name: 'policy' | 'bundle' | string): Record<string, unknown> {
  let schema = cache.get(name);
  if (!schema) {
    schema = JSON.parse(readFileSync(join(packageRoot(), 'schemas', `${name}.schema.json`), 'utf8')) as Record<
      string,
      unknown
    >;
    cache.set(name, schema);
  }
  return schema;
}
