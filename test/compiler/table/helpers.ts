import { compileSources } from '../../../compiler/compile.js';
import type { DecisionTable } from '../../../compiler/table/build.js';

/** Compiles a YAML policy set for a test; fails the test on any compile error. */
export function tableFromYaml(yaml: string): DecisionTable {
  const result = compileSources([{ file: 'test.yaml', text: yaml }], { lint: false });
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0 || !result.table)
    throw new Error(`fixture does not compile:\n${errors.map((e) => `${e.line}:${e.col} ${e.message}`).join('\n')}`);
  return result.table;
}
