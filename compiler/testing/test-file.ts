/** Reading `*.test.yaml` files: validated against schemas/policy-test.schema.json with positions. */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { readYaml, type SourceFile, type YamlDocument } from '../policy/source.js';
import type { EvaluationInput, Effect } from '../policy/types.js';
import { describePath } from '../policy/validate.js';
import { loadSchema } from '../schemas.js';
import type { TestHistoryEntry } from './history.js';

export interface TestCase {
  name: string;
  request: EvaluationInput;
  expect: {
    effect: Effect;
    reason?: string;
    policy?: string | null;
    warnings?: string[];
    matched?: string[];
  };
  /** Earlier decisions, for the history the policies read. */
  history?: TestHistoryEntry[];
  /** The session's labels (`session.labels`). */
  session_labels?: string[];
  line: number;
}

export interface TestSuite {
  file: string;
  name: string;
  /** As written in the file (relative to it), when given. */
  policies?: string[];
  cases: TestCase[];
}

interface TestValidators {
  file: ValidateFunction;
  history: ValidateFunction;
}

let validators: TestValidators | undefined;

function testValidators(): TestValidators {
  if (validators) return validators;
  const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true });
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  ajv.addSchema(loadSchema('policy'));
  const file = ajv.compile(loadSchema('policy-test'));
  const history = ajv.compile({
    type: 'array',
    items: { $ref: 'https://agent-authz.dev/schemas/policy-test.schema.json#/$defs/earlierDecision' },
  });
  validators = { file, history };
  return validators;
}

/** The schema errors of a document as test.invalid diagnostics at their positions; a list document's elements are named `whole[i]`. */
function schemaDiagnostics(
  errors: readonly ErrorObject[],
  doc: YamlDocument,
  file: string,
  whole: string,
): Diagnostic[] {
  return errors.map((e) => {
    const extra =
      e.keyword === 'additionalProperties' ? `/${(e.params as { additionalProperty: string }).additionalProperty}` : '';
    const pointer = e.instancePath + extra;
    const pos = extra ? doc.locator.key(pointer) : doc.locator.value(pointer);
    const custom = (e.parentSchema as Record<string, unknown> | undefined)?.['x-message'];
    const path = describePath(pointer);
    const what = path.startsWith('[') ? `${whole}${path}` : path || whole;
    const message =
      e.keyword === 'additionalProperties'
        ? `unknown field "${extra.slice(1)}"`
        : e.keyword === 'required'
          ? `${what}: missing required field "${(e.params as { missingProperty: string }).missingProperty}"`
          : `${what} ${typeof custom === 'string' ? custom : e.message}`;
    return {
      severity: 'error' as const,
      code: 'test.invalid',
      message,
      file,
      line: pos.line,
      col: pos.col,
      path: pointer,
    };
  });
}

/** The one YAML document of a file, or the diagnostic saying it is not one. */
function oneDocument(source: SourceFile, what: string): { doc?: YamlDocument; diagnostics: Diagnostic[] } {
  const { documents, diagnostics } = readYaml(source);
  if (diagnostics.some((d) => d.severity === 'error')) return { diagnostics };
  const doc = documents[0];
  if (!doc || documents.length > 1) {
    return {
      diagnostics: [
        {
          severity: 'error',
          code: 'test.invalid',
          message: `a ${what} holds exactly one YAML document`,
          file: source.file,
          line: 1,
          col: 1,
        },
      ],
    };
  }
  return { doc, diagnostics };
}

/**
 * A list of earlier decisions (`authz explain --history FILE`, YAML or JSON):
 * the same entries as a test case's `history:`, checked against the schema.
 */
export function readHistoryFile(source: SourceFile): { entries?: TestHistoryEntry[]; diagnostics: Diagnostic[] } {
  const { doc, diagnostics } = oneDocument(source, 'history file');
  if (!doc) return { diagnostics };
  const validate = testValidators().history;
  if (!validate(doc.value))
    return { diagnostics: schemaDiagnostics(validate.errors ?? [], doc, source.file, 'history') };
  return { entries: doc.value as TestHistoryEntry[], diagnostics };
}

export function readTestFile(source: SourceFile): { suite?: TestSuite; diagnostics: Diagnostic[] } {
  const { doc, diagnostics } = oneDocument(source, 'test file');
  if (!doc) return { diagnostics };
  const validate = testValidators().file;
  if (!validate(doc.value))
    return { diagnostics: schemaDiagnostics(validate.errors ?? [], doc, source.file, 'test file') };
  const value = doc.value as { name?: string; policies?: string[]; cases: Array<Omit<TestCase, 'line'>> };
  const suite: TestSuite = {
    file: source.file,
    name: value.name ?? source.file,
    cases: value.cases.map((c, i) => ({ ...c, line: doc.locator.value(`/cases/${i}`).line })),
  };
  if (value.policies) suite.policies = value.policies;
  return { suite, diagnostics };
}
