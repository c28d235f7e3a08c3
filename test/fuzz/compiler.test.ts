/**
 * Compiler fuzzing: random YAML text and mutated valid policy files into
 * compileSources (what `authz validate` / `compile` run), random JSON values into
 * readPolicyValue (the API's path), and random condition text into the parser and
 * checker. Never a throw; either a table with no errors, or error diagnostics
 * that each name the file, a line and a column inside it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkCondition,
  compileCondition,
  compileSources,
  MAX_DEPTH,
  MAX_LENGTH,
  parseCondition,
  readPolicyValue,
  type EvaluationInput,
} from '../../compiler/index.js';
import { weirdValue } from './helpers/mutations.js';

const example = (p: string) => readFileSync(fileURLToPath(new URL(`../../examples/${p}`, import.meta.url)), 'utf8');
const SEEDS = [
  example('support/goodwill-credits.yaml'),
  example('purchasing/policies.yaml'),
  example('infrastructure/guardrails.yaml'),
];
const FILE = 'fuzz/policies.yaml';

/** Compiles and checks the result's shape; returns whether it compiled. */
function compileChecked(text: string): boolean {
  let result: ReturnType<typeof compileSources>;
  try {
    result = compileSources([{ file: FILE, text }]);
  } catch (error) {
    throw new Error(`compileSources threw on ${JSON.stringify(text.slice(0, 300))}: ${(error as Error).stack}`);
  }
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  const lines = text.split(/\r\n|\r|\n/).length;
  for (const d of result.diagnostics) {
    const where = `${JSON.stringify(d)} for ${JSON.stringify(text.slice(0, 300))}`;
    expect(d.file, where).toBe(FILE);
    expect(Number.isInteger(d.line) && d.line! >= 1 && d.line! <= lines + 1, where).toBe(true);
    expect(Number.isInteger(d.col) && d.col! >= 1, where).toBe(true);
    expect(d.message.length, where).toBeGreaterThan(0);
    expect(d.code, where).toMatch(/^[a-z_]+\.[a-z_]+$/);
  }
  if (errors.length === 0) {
    expect(result.table, `no errors but no table for ${JSON.stringify(text.slice(0, 300))}`).toBeDefined();
    return true;
  }
  expect(result.table).toBeUndefined();
  return false;
}

const yamlNoise = fc.oneof(
  fc.constantFrom(
    '\t',
    ': ',
    '- ',
    '"',
    "'",
    '{',
    '}',
    '[',
    ']',
    '&a ',
    '*a',
    '!!binary ',
    '!!js/function ',
    '!!python/object ',
    '? ',
    '|',
    '>-',
    '#',
    '---\n',
    '...\n',
    '%YAML 1.2\n',
    '\u0000',
    '\ufeff',
    '\u2028',
    'é',
    '💥',
    '<<: *a\n',
    'id: pol_dup\n',
    'effect: allow\n',
    'condition: "((((("\n',
    '\r\n',
    '\r',
    '\\',
    '~',
    'null',
    '.inf',
    '0x1F',
    '1e400',
  ),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
);

/** A seed file with 1-4 text edits: insertions, deletions, line swaps, indentation changes. */
const mutatedFile = fc
  .tuple(
    fc.constantFrom(...SEEDS),
    fc.array(
      fc.oneof(
        fc.tuple(fc.constant('insert' as const), fc.nat(), yamlNoise),
        fc.tuple(fc.constant('delete' as const), fc.nat(), fc.integer({ min: 1, max: 20 })),
        fc.tuple(fc.constant('swap' as const), fc.nat(), fc.nat()),
        fc.tuple(fc.constant('indent' as const), fc.nat(), fc.constantFrom(' ', '  ', '\t', '')),
        fc.tuple(fc.constant('value' as const), fc.nat(), yamlNoise),
      ),
      { minLength: 1, maxLength: 4 },
    ),
  )
  .map(([seed, edits]) => {
    let text = seed;
    for (const [kind, a, b] of edits) {
      const lines = text.split('\n');
      const i = a % Math.max(1, lines.length);
      if (kind === 'insert') {
        const at = a % (text.length + 1);
        text = text.slice(0, at) + b + text.slice(at);
      } else if (kind === 'delete') {
        const at = a % (text.length + 1);
        text = text.slice(0, at) + text.slice(at + b);
      } else if (kind === 'swap') {
        const j = b % Math.max(1, lines.length);
        [lines[i], lines[j]] = [lines[j]!, lines[i]!];
        text = lines.join('\n');
      } else if (kind === 'indent') {
        lines[i] = b + lines[i]!.trimStart();
        text = lines.join('\n');
      } else {
        const line = lines[i]!;
        const colon = line.indexOf(': ');
        if (colon >= 0) lines[i] = `${line.slice(0, colon + 2)}${b}`;
        text = lines.join('\n');
      }
    }
    return text;
  });

describe('compiler fuzz', () => {
  it('the seeds compile', () => {
    for (const seed of SEEDS) expect(compileChecked(seed)).toBe(true);
  });

  it('random text: never throws; errors at a file, line and column', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 200 }),
          fc.string({ unit: 'binary', maxLength: 120 }),
          fc.array(yamlNoise, { maxLength: 30 }).map((a) => a.join('')),
        ),
        (text) => {
          compileChecked(text);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('mutated valid policy files: never throws; a table or located errors', () => {
    let compiled = 0;
    fc.assert(
      fc.property(mutatedFile, (text) => {
        if (compileChecked(text)) compiled++;
      }),
      { numRuns: 300 },
    );
    expect(compiled).toBeGreaterThan(0); // some mutations are harmless (comments, values)
  });

  it('alias bombs and very deep YAML are refused with a diagnostic, not a crash', () => {
    const laughs = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 12; i++)
      laughs.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)},*${String.fromCharCode(96 + i)}]`,
      );
    expect(compileChecked(`${laughs.join('\n')}\neffect: allow\nactions: ["a.b"]\n`)).toBe(false);
    expect(compileChecked(`effect: allow\nactions: ${'['.repeat(5000)}${']'.repeat(5000)}\n`)).toBe(false);
    expect(
      compileChecked(
        `effect: allow\nactions: ["a.b"]\nagents:\n${Array.from({ length: 2000 }, (_, i) => `${' '.repeat(i % 40)}- x`).join('\n')}\n`,
      ),
    ).toBe(false);
  });

  it('random JSON values as API policy bodies: never throws; diagnostics name a path', () => {
    const seed = {
      name: 'p',
      effect: 'allow',
      actions: ['orders.read'],
      agents: ['a-*'],
      condition: 'amount < 5',
      budget: { unit: 'USD', limit: 5, period: 'daily' },
    };
    fc.assert(
      fc.property(
        fc.oneof(weirdValue, fc.dictionary(fc.constantFrom(...Object.keys(seed), 'x'), weirdValue)),
        fc.boolean(),
        (value, merge) => {
          const body =
            merge && value !== null && typeof value === 'object' && !Array.isArray(value)
              ? { ...seed, ...(value as object), id: 'pol_x' }
              : value;
          const r = readPolicyValue(body, '');
          if (r.items.length === 0) {
            expect(r.diagnostics.length).toBeGreaterThan(0);
            for (const d of r.diagnostics) expect(d.path, JSON.stringify(d)).toMatch(/^\//);
          } else expect(r.diagnostics).toEqual([]);
        },
      ),
      { numRuns: 300 },
    );
  });
});

const CONDITION_TOKENS = [
  'amount',
  'agent_id',
  'action',
  'resource',
  'context',
  'context.a',
  'context.a.b',
  '.',
  '==',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  'in',
  '&&',
  '||',
  '!',
  '(',
  ')',
  '[',
  ']',
  ',',
  "'x'",
  '"y"',
  "'",
  '"',
  '\\',
  "'\\u0000'",
  '12.5',
  '-1',
  '1e400',
  '0x10',
  'true',
  'false',
  'null',
  'startsWith',
  'endsWith',
  'contains',
  'matches',
  'eval',
  'constructor',
  '__proto__',
  "'*a*a*b'",
  ' ',
  '\n',
  '\t',
  '\u0000',
  'é',
  '💥',
  '$',
  '@',
  '=',
  '&',
  '|',
];

const conditionText = fc.oneof(
  fc.array(fc.constantFrom(...CONDITION_TOKENS), { maxLength: 40 }).map((t) => t.join(' ')),
  fc.array(fc.constantFrom(...CONDITION_TOKENS), { maxLength: 40 }).map((t) => t.join('')),
  fc.string({ maxLength: 80 }),
  fc.integer({ min: MAX_DEPTH - 2, max: MAX_DEPTH + 40 }).map((d) => `${'('.repeat(d)}amount < 1${')'.repeat(d)}`),
  fc.integer({ min: MAX_DEPTH - 2, max: MAX_DEPTH + 40 }).map((d) => `${'!'.repeat(d)}true`),
  fc.integer({ min: MAX_DEPTH - 2, max: MAX_DEPTH + 40 }).map((d) => `${'['.repeat(d)}1${']'.repeat(d)} == context.x`),
  fc
    .integer({ min: MAX_LENGTH - 10, max: MAX_LENGTH + 10 })
    .map((n) => `context.s == '${'a'.repeat(Math.max(0, n - 16))}'`),
  fc.integer({ min: 500, max: 3000 }).map((n) => Array.from({ length: n }, (_, i) => `amount == ${i}`).join(' || ')),
);

const requests: fc.Arbitrary<EvaluationInput> = fc.record({
  agent_id: fc.string({ maxLength: 10 }),
  action: fc.constantFrom('orders.read', 'a.b'),
  resource: fc.option(fc.string({ maxLength: 10 }), { nil: null }),
  amount: fc.option(fc.oneof(fc.double(), fc.integer()), { nil: null }),
  context: fc.option(
    fc.dictionary(fc.constantFrom('a', 'b', 'x', 's'), fc.jsonValue({ maxDepth: 2 })) as fc.Arbitrary<
      Record<string, unknown>
    >,
    { nil: null },
  ),
});

describe('condition language fuzz', () => {
  it('parse and check never throw; issues are located inside the text; a clean parse compiles and evaluates', () => {
    fc.assert(
      fc.property(conditionText, fc.array(requests, { maxLength: 3 }), (text, inputs) => {
        const parsed = parseCondition(text);
        const issues = parsed.ast ? [...parsed.issues, ...checkCondition(parsed.ast)] : parsed.issues;
        if (!parsed.ast) expect(parsed.issues.length, text).toBeGreaterThan(0);
        const lines = text.split('\n').length;
        for (const issue of issues) {
          const where = `${JSON.stringify(issue)} in ${JSON.stringify(text.slice(0, 200))}`;
          expect(issue.offset >= 0 && issue.offset <= text.length, where).toBe(true);
          expect(issue.line >= 1 && issue.line <= lines, where).toBe(true);
          expect(issue.col >= 1, where).toBe(true);
          expect(issue.code, where).toMatch(/^condition\.[a-z_]+$/);
        }
        if (issues.length === 0 && parsed.ast) {
          const test = compileCondition(parsed.ast);
          for (const input of inputs) expect(typeof test(input)).toBe('boolean');
        }
      }),
      { numRuns: 600 },
    );
  });

  it('limits: over 4096 characters is condition.too_long; over 32 levels is condition.too_deep', () => {
    expect(parseCondition(`context.s == '${'a'.repeat(MAX_LENGTH)}'`).issues.map((i) => i.code)).toEqual([
      'condition.too_long',
    ]);
    expect(
      parseCondition(`${'('.repeat(MAX_DEPTH + 1)}true${')'.repeat(MAX_DEPTH + 1)}`).issues.map((i) => i.code),
    ).toEqual(['condition.too_deep']);
    expect(parseCondition(`${'('.repeat(MAX_DEPTH - 1)}true${')'.repeat(MAX_DEPTH - 1)}`).issues).toEqual([]);
  });
});
