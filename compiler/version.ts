/** The package's name and version, as written into bundles and printed by the CLI. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './schemas.js';

let version: string | undefined;

/**
 * The compiler's name and version, `agent-authz <version>` from the package's
 * package.json, as bundles record it (`compiler`) and `authz --version` prints.
 *
 * @returns e.g. `agent-authz 0.1.0`.
 * @throws Error when the package's folder cannot be found (see {@link packageRoot}).
 *
 * @example
 * ```ts
 * import { compilerVersion } from 'agent-authz/compiler';
 *
 * console.log(/^agent-authz \d+\.\d+\.\d+/.test(compilerVersion())); // => true
 * ```
 */
export function compilerVersion(): string {
  version ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return `agent-authz ${version}`;
}
