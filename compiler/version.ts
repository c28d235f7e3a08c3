/** The package's name and version, as written into bundles and printed by the CLI. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './schemas.js';

let version: string | undefined;

export function compilerVersion(): string {
  version ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return `agent-authz ${version}`;
}
