/**
 * Adversarial inputs to the condition language, timed (the tests check the same
 * inputs by behaviour only: rejected at the depth limit before parsing, globs
 * matched in a linear number of steps): how long parseCondition takes to refuse
 * pathological nesting, and how long matches() takes on a glob built to make a
 * backtracking matcher explode. Part of `npm run bench:compiler`.
 */
import { compileCondition, parseCondition, type EvaluationInput } from '../../compiler/index.js';

export interface AdversarialRow {
  input: string;
  /** Median of the runs, in ms. */
  medianMs: number;
  /** Slowest run, in ms. */
  maxMs: number;
}

function timed(run: () => unknown, runs = 25): { medianMs: number; maxMs: number } {
  run(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    run();
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return { medianMs: samples[Math.floor(samples.length / 2)]!, maxMs: samples.at(-1)! };
}

/**
 * Times each adversarial input.
 *
 * @example
 * for (const row of measureAdversarial()) console.log(row.input, row.medianMs.toFixed(3));
 */
export function measureAdversarial(): AdversarialRow[] {
  const nesting: Array<[string, string]> = [
    ["'(' x 4000", '('.repeat(4000)],
    ["'!' x 4000", '!'.repeat(4000)],
    ["'[' x 4000", '['.repeat(4000)],
    ["'(' x 2000, x, ')' x 2000", `${'('.repeat(2000)}x${')'.repeat(2000)}`],
    ["'startsWith(' x 370", 'startsWith('.repeat(370)],
  ];
  const rows: AdversarialRow[] = nesting.map(([input, text]) => ({
    input: `parseCondition ${input} (refused: too deep)`,
    ...timed(() => parseCondition(text)),
  }));
  const globs: Array<[string, string, string]> = [
    ["'*a' x 50 '*b' against 20,000 'a'", `${'*a'.repeat(50)}*b`, 'a'.repeat(20_000)],
    ["'*a' x 50 '*b' against 20,000 'a' then 'b'", `${'*a'.repeat(50)}*b`, `${'a'.repeat(20_000)}b`],
    ["'*' 999 'a' 'b*' against 20,000 'a' (the KMP worst case)", `*${'a'.repeat(999)}b*`, 'a'.repeat(20_000)],
  ];
  for (const [input, pattern, subject] of globs) {
    const parsed = parseCondition(`matches(context.s, '${pattern}')`);
    if (!parsed.ast) throw new Error(`bench: the matches() condition does not parse: ${parsed.issues[0]?.message}`);
    const evaluate = compileCondition(parsed.ast);
    const request = { agent_id: 'a', action: 'x.y', context: { s: subject } } as unknown as EvaluationInput;
    rows.push({ input: `matches() of ${input}`, ...timed(() => evaluate(request)) });
  }
  return rows;
}

/** The report section. */
export function renderAdversarial(rows: AdversarialRow[]): string {
  return [
    '## Adversarial conditions',
    '',
    'Median and slowest of 25 runs. The tests check these inputs by behaviour (refused at the depth limit before parsing; glob steps at most 2 x (subject + pattern)), never by time.',
    '',
    '| input | median ms | max ms |',
    '| --- | ---: | ---: |',
    ...rows.map((r) => `| ${r.input} | ${r.medianMs.toFixed(3)} | ${r.maxMs.toFixed(3)} |`),
    '',
  ].join('\n');
}
