/** Loads the project's JSON Schemas from `schemas/` at the package root (works from source and from dist/). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'schemas', 'policy.schema.json')) && existsSync(join(dir, 'package.json'))) return (root = dir);
    const up = dirname(dir);
    if (up === dir) throw new Error('agent-authz: cannot find the schemas/ folder of the package');
    dir = up;
  }
}

const cache = new Map<string, Record<string, unknown>>();

export function loadSchema(name: 'policy' | 'bundle' | string): Record<string, unknown> {
  let schema = cache.get(name);
  if (!schema) {
    schema = JSON.parse(readFileSync(join(packageRoot(), 'schemas', `${name}.schema.json`), 'utf8')) as Record<string, unknown>;
    cache.set(name, schema);
  }
  return schema;
}
