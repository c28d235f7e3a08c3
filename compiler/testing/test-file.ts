/** Reading `*.test.yaml` files: validated against schemas/policy-test.schema.json with positions. */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { readYaml, type SourceFile } from '../policy/source.js';
import type { DecisionRequest, Effect } from '../policy/types.js';
import { describePath } from '../policy/validate.js';
import { loadSchema } from '../schemas.js';

export interface TestCase {
  name: string;
  request: DecisionRequest;
  expect: {
    effect: Effect;
    reason?: string;
    policy?: string | null;
    warnings?: string[];
    matched?: string[];
  };
  line: number;
}

export interface TestSuite {
  file: string;
  name: string;
  /** As written in the file (relative to it), when given. */
  policies?: string[];
  cases: TestCase[];
}

let validator: ValidateFunction | undefined;

function testValidator(): ValidateFunction {
  if (validator) return validator;
  const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true });
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  validator = ajv.compile(loadSchema('policy-test'));
  return validator;
}

export function readTestFile(source: SourceFile): { suite?: TestSuite; diagnostics: Diagnostic[] } {
  const { documents, diagnostics } = readYaml(source);
  if (diagnostics.some((d) => d.severity === 'error')) return { diagnostics };
  const doc = documents[0];
  if (!doc || documents.length > 1) {
    return { diagnostics: [{ severity: 'error', code: 'test.invalid', message: 'a test file holds exactly one YAML document', file: source.file, line: 1, col: 1 }] };
  }
  const validate = testValidator();
  if (!validate(doc.value)) {
    return {
      diagnostics: (validate.errors ?? []).map((e) => {
        const extra = e.keyword === 'additionalProperties' ? `/${(e.params as { additionalProperty: string }).additionalProperty}` : '';
        const pointer = e.instancePath + extra;
        const pos = extra ? doc.locator.key(pointer) : doc.locator.value(pointer);
        const custom = (e.parentSchema as Record<string, unknown> | undefined)?.['x-message'];
        const what = describePath(pointer) || 'test file';
        const message =
          e.keyword === 'additionalProperties'
            ? `unknown field "${extra.slice(1)}"`
            : e.keyword === 'required'
              ? `${what}: missing required field "${(e.params as { missingProperty: string }).missingProperty}"`
              : `${what} ${typeof custom === 'string' ? custom : e.message}`;
        return { severity: 'error' as const, code: 'test.invalid', message, file: source.file, line: pos.line, col: pos.col, path: pointer };
      }),
    };
  }
  const value = doc.value as { name?: string; policies?: string[]; cases: Array<Omit<TestCase, 'line'>> };
  const suite: TestSuite = {
    file: source.file,
    name: value.name ?? source.file,
    cases: value.cases.map((c, i) => ({ ...c, line: doc.locator.value(`/cases/${i}`).line })),
  };
  if (value.policies) suite.policies = value.policies;
  return { suite, diagnostics };
}
