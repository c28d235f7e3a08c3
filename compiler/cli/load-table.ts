/**
 * A policy set from the command line, for `authz diff` and `authz replay`: a
 * bundle (a `.json` file written by `authz compile`) or policy files (a YAML file
 * or a folder of them), compiled into a table.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadBundle } from '../bundle/load.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import type { PolicyOrigin } from '../policy/read.js';
import type { DecisionTable } from '../table/build.js';
import { UsageError } from './io.js';
import { loadPolicies } from './load-policies.js';

export type LoadedSet =
  | { ok: true; table: DecisionTable; origins: ReadonlyMap<string, PolicyOrigin>; kind: 'bundle' | 'policies' }
  | { ok: false; diagnostics: Diagnostic[]; sources: ReadonlyMap<string, string> };

/**
 * Loads `path`: a `.json` file is read as a bundle; anything else (a YAML file, a
 * folder) as policy files. Invalid content is a value ({ ok: false }); a missing
 * path, an unreadable or non-JSON bundle file is a UsageError.
 */
export function loadPolicySet(path: string, cwd: string): LoadedSet {
  const abs = resolve(cwd, path);
  let isFile: boolean;
  try {
    isFile = statSync(abs).isFile();
  } catch {
    throw new UsageError(`no such file or directory: ${path}`);
  }
  if (!(isFile && /\.json$/i.test(path))) {
    const loaded = loadPolicies([path], cwd, { lint: false });
    if (!loaded.table)
      return {
        ok: false,
        diagnostics: loaded.diagnostics.filter((d) => d.severity === 'error'),
        sources: loaded.sources,
      };
    return { ok: true, table: loaded.table, origins: loaded.origins, kind: 'policies' };
  }
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(abs, 'utf8'));
  } catch (e) {
    throw new UsageError(`${path} is not a bundle (JSON written by authz compile): ${(e as Error).message}`);
  }
  const loaded = loadBundle(value);
  if (!loaded.ok)
    return {
      ok: false,
      diagnostics: loaded.problems.map((d) => ({ ...d, message: `${path}: ${d.message}` })),
      sources: new Map(),
    };
  return { ok: true, table: loaded.table, origins: new Map(), kind: 'bundle' };
}
