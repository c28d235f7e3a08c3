/** Shared by validate, compile and explain: read the policy files under PATHs and compile them. */
import { compileSources, type CompileOptions, type CompileResult } from '../compile.js';
import { findYamlFiles, isPolicyFile, readSource } from './files.js';
import { UsageError } from './io.js';

export interface LoadedPolicies extends CompileResult {
  files: string[];
  sources: Map<string, string>;
}

export function loadPolicies(paths: readonly string[], cwd: string, options: CompileOptions = {}): LoadedPolicies {
  if (paths.length === 0) throw new UsageError('give at least one policy file or directory');
  const files = findYamlFiles(paths, cwd).filter(isPolicyFile);
  if (files.length === 0) throw new UsageError(`no policy files (*.yaml, *.yml) found in ${paths.join(', ')}`);
  const sourceFiles = files.map((f) => readSource(f, cwd));
  const result = compileSources(sourceFiles, options);
  return {
    ...result,
    files: sourceFiles.map((s) => s.file),
    sources: new Map(sourceFiles.map((s) => [s.file, s.text])),
  };
}
